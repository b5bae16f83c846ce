/**
 * The comparison of two success rates a traffic split's results report (docs/api.md, "Traffic
 * split between versions"): the two-proportion z-test, as in every statistics text (e.g. NIST/
 * SEMATECH e-Handbook 7.3.3; Agresti, Categorical Data Analysis, 3.1.3). A few lines, not a
 * library: the only special function is the complementary error function, and the one below
 * (Numerical Recipes' `erfcc`, a Chebyshev fit with fractional error under 1.2e-7 everywhere) keeps
 * p-values accurate far into the tail, where `1 - cdf` would lose them; the unit test checks it
 * against tabulated values.
 */

/** erfc(x), fractional error < 1.2e-7 for every x (Press et al., Numerical Recipes, 6.2). */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z - 1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** The standard normal distribution function Φ(x). */
export const normalCdf = (x: number): number => 0.5 * erfc(-x / Math.SQRT2);

/** z of a two-sided 95% interval: Φ⁻¹(0.975). */
export const Z_95 = 1.959963984540054;

/** Fewer than this many successes or failures in a group and the normal approximation is not trusted (the usual n·p ≥ 5 rule). */
export const MIN_EXPECTED = 5;

export interface ProportionComparison {
  /** p₂ − p₁: the variant's success rate minus the baseline's. */
  difference: number;
  /** 95% interval of the difference (Wald: unpooled standard error). */
  ci95: [number, number];
  /** The test statistic, under the pooled standard error (null when both rates are 0 or both 1: nothing varies). */
  z: number | null;
  /** Two-sided p-value of "the rates are equal" (1 when nothing varies). */
  p_value: number;
  /** Why the numbers may not say much (too few conversations), else null. */
  note: string | null;
}

/**
 * Compares `s2` successes of `n2` with the baseline's `s1` of `n1`: the difference, its 95% Wald
 * interval, and the pooled two-proportion z-test's two-sided p-value. Undefined when either group
 * has no trials (there is no rate to compare).
 */
export function compareProportions(s1: number, n1: number, s2: number, n2: number): ProportionComparison | undefined {
  if (n1 <= 0 || n2 <= 0) return undefined;
  const p1 = s1 / n1;
  const p2 = s2 / n2;
  const difference = p2 - p1;
  const se = Math.sqrt((p1 * (1 - p1)) / n1 + (p2 * (1 - p2)) / n2);
  const pooled = (s1 + s2) / (n1 + n2);
  const sePooled = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  const z = sePooled > 0 ? difference / sePooled : null;
  const small = [s1, n1 - s1, s2, n2 - s2].some((k) => k < MIN_EXPECTED);
  return {
    difference,
    ci95: [difference - Z_95 * se, difference + Z_95 * se],
    z,
    p_value: z === null ? 1 : erfc(Math.abs(z) / Math.SQRT2),
    note: small
      ? `Too few conversations to say: the normal approximation wants at least ${MIN_EXPECTED} successful and ${MIN_EXPECTED} unsuccessful analysed conversations in each variant (here ${s1}/${n1 - s1} and ${s2}/${n2 - s2}).`
      : null,
  };
}
