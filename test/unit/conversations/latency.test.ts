import { bucketOf, bucketPercentiles, bucketValue, LATENCY_BUCKET_BASE, latencyBuckets, latencySummary, ReplyTimer, stats } from '../../../shared/domain/conversations/latency';

describe('reply latency', () => {
  it('splits a reply\'s e2e into model, tools, knowledge base and the platform\'s rest, never below zero', () => {
    const timer = new ReplyTimer(1_000);
    timer.addKnowledgeBase(40);
    timer.addModel(300);
    timer.addTools(200);
    expect(timer.figures(1_700)).toEqual({ e2e: 700, model: 300, tools: 200, knowledge_base: 40, platform: 160 });
    // Parts that outrun e2e (a clock step) are cut to it: the members still add up.
    expect(timer.figures(1_100)).toEqual({ e2e: 100, model: 100, tools: 0, knowledge_base: 0, platform: 0 });
  });

  it('summarizes a conversation by nearest rank (a worked example)', () => {
    expect(stats([120, 80, 400, 95, 210, 150, 130, 99, 101, 1000])).toEqual({ p50: 120, p90: 400, p99: 1000, min: 80, max: 1000, num: 10 });
    const r = (e2e: number) => ({ e2e, model: e2e / 2, tools: 0, knowledge_base: 0, platform: e2e / 2 });
    expect(latencySummary([null, r(100), undefined, r(300)])!.e2e).toEqual({ p50: 100, p90: 300, p99: 300, min: 100, max: 300, num: 2 });
    expect(latencySummary([null, undefined])).toBeNull();
  });

  it('reads percentiles from log-scale buckets within ±9.1% of the exact ones', () => {
    expect(bucketOf(0)).toBe('z');
    expect(bucketValue('z')).toBe(0);
    expect(Math.sqrt(LATENCY_BUCKET_BASE) - 1).toBeLessThan(0.091);
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (let round = 0; round < 50; round++) {
      const values = Array.from({ length: 1 + Math.floor(random() * 300) }, () => Math.round(Math.exp(random() * Math.log(60_000))));
      const exact = stats(values);
      const read = bucketPercentiles(latencyBuckets(values.map((v) => ({ e2e: v, model: v, tools: 0, knowledge_base: 0, platform: 0 }))).e2e)!;
      for (const p of ['p50', 'p90', 'p99'] as const) expect(Math.abs(read[p] - exact[p])).toBeLessThanOrEqual(exact[p] * 0.0915 + 1);
    }
    expect(bucketPercentiles({})).toBeNull();
  });
});
