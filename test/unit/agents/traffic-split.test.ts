/**
 * The traffic split's draw (agents/traffic-split.ts) and the comparison its results report
 * (analytics/proportions.ts): shares close to the weights, one version per person while a split
 * stands, a new split drawing afresh, and the z-test checked against values computed by hand and
 * tabulated ones. The figures of issue 44's "Measured" (10,000 draws of a 90/10 split within 1.5
 * points; stickiness 100%) are asserted here.
 */
import { drawVersion, personKey, splitBucket, variantAt } from '../../../shared/domain/agents/traffic-split';
import { compareProportions, erfc, normalCdf } from '../../../shared/domain/analytics/proportions';

const split = [{ version: 1, weight: 90 }, { version: 2, weight: 10 }];
const SPLIT_ID = '01936f50-2a4b-7c5d-8e6f-7a8b9c0d1e2f';

describe('the draw', () => {
  it('gives each variant its consecutive buckets by weight', () => {
    const three = [{ version: 4, weight: 20 }, { version: 7, weight: 30 }, { version: 9, weight: 50 }];
    expect([0, 19, 20, 49, 50, 99].map((b) => variantAt(three, b).version)).toEqual([4, 4, 7, 7, 9, 9]);
  });

  it('sends 10,000 people to a 90/10 split within 1.5 points of 10%, and 10,000 random draws too', () => {
    const keyed = Array.from({ length: 10_000 }, (_, i) => drawVersion(SPLIT_ID, split, personKey({ phone: `+1415555${String(i).padStart(4, '0')}` })));
    const random = Array.from({ length: 10_000 }, () => drawVersion(SPLIT_ID, split, null));
    for (const draws of [keyed, random]) {
      const share = draws.filter((v) => v === 2).length / draws.length;
      expect(Math.abs(share - 0.1)).toBeLessThan(0.015);
    }
  });

  it('is sticky: a returning person draws the same version every time (100% of 10,000)', () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => personKey({ contactId: `contact-${i}` })!);
    const first = keys.map((k) => drawVersion(SPLIT_ID, split, k));
    const again = keys.map((k) => drawVersion(SPLIT_ID, split, k));
    expect(again).toEqual(first);
  });

  it('draws afresh under a new split id (about half of a 50/50 split move)', () => {
    const even = [{ version: 1, weight: 50 }, { version: 2, weight: 50 }];
    const keys = Array.from({ length: 2_000 }, (_, i) => `user:u${i}` as const);
    const moved = keys.filter((k) => drawVersion('split-a', even, k) !== drawVersion('split-b', even, k)).length / keys.length;
    expect(moved).toBeGreaterThan(0.4);
    expect(moved).toBeLessThan(0.6);
  });

  it('keys a person by contact first, then number, visitor, OpenAI user; none is a random draw', () => {
    expect(personKey({ contactId: 'c1', phone: '+14155550100' })).toBe('contact:c1');
    expect(personKey({ phone: '+14155550100', visitorId: 'v' })).toBe('phone:+14155550100');
    expect(personKey({ visitorId: 'visitor-1', user: 'u' })).toBe('visitor:visitor-1');
    expect(personKey({ user: 'u-7' })).toBe('user:u-7');
    expect(personKey({ contactId: null, phone: null })).toBeNull();
    expect(splitBucket(SPLIT_ID, 'contact:c1')).toBe(splitBucket(SPLIT_ID, 'contact:c1'));
  });
});

describe('the comparison (two-proportion z-test)', () => {
  it('matches the tabulated normal distribution', () => {
    // Abramowitz & Stegun table 26.1 / erfc values (also Python's math.erfc).
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 7);
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(-1)).toBeCloseTo(0.158655254, 7);
    expect(erfc(1)).toBeCloseTo(0.157299207, 7);
    expect(erfc(3) / 2.209049699858544e-5).toBeCloseTo(1, 5);
    expect(erfc(5) / 1.5374597944280351e-12).toBeCloseTo(1, 5);
  });

  it('computes difference, interval, z and p-value as by hand: 9/12 against 3/10', () => {
    // By hand: p1 = .75, p2 = .3, d = -.45; pooled p = 12/22;
    // SE_pooled = sqrt(12/22 · 10/22 · (1/12 + 1/10)) = .213201, z = -.45 / .213201 = -2.110687, p = erfc(2.110687/√2) = .034799;
    // SE = sqrt(.75·.25/12 + .3·.7/10) = .191377, CI = -.45 ± 1.959964 · .191377 = [-.825091, -.074909].
    const c = compareProportions(9, 12, 3, 10)!;
    expect(c.difference).toBeCloseTo(-0.45, 10);
    expect(c.z!).toBeCloseTo(-2.110687, 5);
    expect(c.p_value).toBeCloseTo(0.034799, 5);
    expect(c.ci95[0]).toBeCloseTo(-0.825091, 5);
    expect(c.ci95[1]).toBeCloseTo(-0.074909, 5);
    // 3 successes in the second group: too few for the normal approximation, and said.
    expect(c.note).toMatch(/Too few/);
    expect(compareProportions(248, 400, 33, 45)!.note).toBeNull();
  });

  it('has nothing to compare without trials, and p = 1 when nothing varies', () => {
    expect(compareProportions(0, 0, 3, 10)).toBeUndefined();
    expect(compareProportions(0, 10, 0, 12)).toMatchObject({ difference: 0, z: null, p_value: 1 });
  });
});
