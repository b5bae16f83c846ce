import * as z from 'zod/mini';
import { named } from '../common/named';
import { lazy } from '../common/lazy';
import { instantOrDate } from '../scheduling/time';

export const TrafficSplitResultsQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  /** The first UTC day counted (a date `YYYY-MM-DD` or an ISO timestamp); default the split's first day. */
  from: z.optional(instantOrDate()),
  /** The last UTC day counted (inclusive); default the day the split ended, else today. */
  to: z.optional(instantOrDate()),
  /** Which split: the agent's current one (the default), else the one that ended last. */
  traffic_split_id: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
}));
export type TrafficSplitResultsInput = z.output<typeof TrafficSplitResultsQuery>;

const counts = () => z.record(z.string(), z.int());

const Comparison = /* @__PURE__ */ named('TrafficSplitComparison', () => z.object({
  /** The variant compared against: the split's first. */
  baseline_version: z.int(),
  /** This variant's success rate minus the baseline's (a share, −1…1); null without analysed conversations in either. */
  difference: z.nullable(z.number()),
  /** The difference's 95% confidence interval (Wald), `[low, high]`; null as `difference`. */
  ci95: z.nullable(z.array(z.number()).check(z.minLength(2), z.maxLength(2))),
  /** The two-proportion z statistic (pooled); null when it cannot be computed. */
  z: z.nullable(z.number()),
  /** Two-sided p-value that the two success rates are equal; null as `difference`. */
  p_value: z.nullable(z.number()),
  /** Said when the counts are too small to say much (or there is nothing to compare), else null. */
  note: z.nullable(z.string()),
}), 'A variant\'s success rate against the first variant\'s: difference, 95% confidence interval and two-proportion z-test');

export const TrafficSplitVariantResult = /* @__PURE__ */ named('TrafficSplitVariantResult', () => z.object({
  version: z.int(),
  weight: z.int(),
  /** Conversations (calls and chats) drawn for this variant that ended in the window. */
  conversations: z.int(),
  /** Of them, analysed; `successful` of those (the analysis's `successful`). */
  analyzed: z.int(),
  successful: z.int(),
  /** successful / analyzed (null before any analysis). */
  success_rate: z.nullable(z.number()),
  /** Mean duration in seconds: a call's `duration_sec`, a chat's start to end (null without conversations). */
  average_duration_seconds: z.nullable(z.number()),
  /** Median reply time (ms) of its replies' `latency_ms.e2e`, from the analytics buckets (within ±9.1%); null without a timed reply. */
  latency_p50_ms: z.nullable(z.int()),
  /** Conversations by end reason. */
  ended: counts(),
  /** Per boolean or enum analysis field, the conversations per value. */
  fields: z.record(z.string(), counts()),
  /** Against the first variant (null on the first itself). */
  comparison: z.nullable(Comparison),
}), 'One variant of a traffic split: its conversations and outcomes, and its success rate against the first variant\'s');

export const TrafficSplitResults = /* @__PURE__ */ named('TrafficSplitResults', () => z.object({
  agent_id: z.string(),
  traffic_split_id: z.string(),
  /** `active`: the agent's current split; `ended`: the one that ended last. */
  status: z.enum(['active', 'ended']),
  started_at: z.string(),
  ended_at: z.nullable(z.string()),
  /** The window read (UTC days, inclusive). */
  from: z.string(),
  to: z.string(),
  variants: z.array(TrafficSplitVariantResult),
}), 'The results of a traffic split between versions, per variant, with each variant\'s success rate compared to the first\'s');
export type TrafficSplitResults = z.output<typeof TrafficSplitResults>;
