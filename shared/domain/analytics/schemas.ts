import * as z from 'zod/mini';
import { named } from '../common/named';
import { lazy } from '../common/lazy';
import { uuid } from '../common/schemas';
import { instantOrDate, timeZone } from '../scheduling/time';

/**
 * The channels the analytics split by: calls (phone and web), chats (API and widget), and `openai`:
 * the OpenAI-compatible endpoint's requests (stateless: usage only, read with `channel=openai`).
 */
export const ANALYTICS_CHANNELS = ['call', 'chat', 'openai'] as const;
export const ANALYTICS_INTERVALS = ['day', 'week'] as const;
/** The longest window one read may cover, in UTC days. */
export const MAX_ANALYTICS_DAYS = 366;

export const ConversationAnalyticsQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  agent_id: z.optional(uuid()),
  channel: z.optional(z.enum(ANALYTICS_CHANNELS)),
  /** The first day counted (a day of `timezone`): a date `YYYY-MM-DD` or an ISO timestamp (its day in `timezone`). */
  from: instantOrDate(),
  /** The last day counted (inclusive), the same forms. */
  to: instantOrDate(),
  interval: z._default(z.enum(ANALYTICS_INTERVALS), 'day'),
  /** The IANA time zone whose local days (and ISO weeks) the window and intervals are (`America/New_York`); default `UTC`. */
  timezone: z._default(timeZone(), 'UTC'),
}));
export type ConversationAnalyticsInput = z.output<typeof ConversationAnalyticsQuery>;

const counts = () => z.record(z.string(), z.int());

/** Reply-time percentiles read from the counters' log-scale buckets (±9.1%: docs/api.md, "Analytics"); null without a timed reply. */
const percentiles = () => z.nullable(z.object({ p50: z.int(), p90: z.int(), p99: z.int() }));
const AnalyticsLatency = /* @__PURE__ */ named('ConversationAnalyticsLatency', () => z.object({ e2e: percentiles(), model: percentiles() }), 'Reply times (ms) of the conversations counted: p50, p90 and p99 of each reply\'s `latency_ms.e2e` and `.model`, from fixed log-scale buckets (within ±9.1%)');

const figures = () => ({
  calls: z.int(),
  chats: z.int(),
  /** Ended conversations by end reason (a call's `disconnection_reason`, a chat's `end_reason`). */
  ended: counts(),
  successful: z.int(),
  analyzed: z.int(),
  /** Connected call minutes (duration_sec / 60, two decimals); chats add none. */
  minutes: z.number(),
  prompt_tokens: z.int(),
  completion_tokens: z.int(),
  /** Requests to the OpenAI-compatible endpoint (`channel=openai` only; they are not conversations). */
  openai_requests: z.int(),
  /** USD: calls' minutes charges (chats are not charged). */
  cost: z.number(),
  /** Per boolean or enum analysis field, the conversations per value (a null value is not counted). */
  fields: z.record(z.string(), counts()),
  /** Per agent version the conversations ran (`"1"`, `"2"`, …, `"draft"`): conversations, analysed, successful. With `agent_id`: that agent's versions; without: every agent's versions of that number together. */
  versions: z.record(z.string(), z.object({ conversations: z.int(), analyzed: z.int(), successful: z.int(), latency: AnalyticsLatency })),
  /** Reply times of the conversations counted (their replies' `latency_ms`). */
  latency: AnalyticsLatency,
});

export const AnalyticsFigures = /* @__PURE__ */ named('ConversationAnalyticsTotals', () => z.object(figures()), 'Conversations ended in a window: counts, ends by reason, successes, minutes, tokens, cost and typed outcomes per value');
export const AnalyticsInterval = /* @__PURE__ */ named('ConversationAnalyticsInterval', () => z.object({
  /** The interval's first day (in `timezone`). */
  start: z.string(),
  /** Its last day (inclusive). */
  end: z.string(),
  ...figures(),
}), 'One interval (a day of the time zone, or a week from Monday clipped to the window) of conversation analytics');

export const ConversationAnalytics = /* @__PURE__ */ named('ConversationAnalytics', () => z.object({
  agent_id: z.nullable(z.string()),
  channel: z.nullable(z.enum(ANALYTICS_CHANNELS)),
  from: z.string(),
  to: z.string(),
  interval: z.enum(ANALYTICS_INTERVALS),
  intervals: z.array(AnalyticsInterval),
  totals: AnalyticsFigures,
}), 'Conversation analytics over a window of days (UTC or a given time zone), by interval and in total, read from counters kept with each end and analysis');
export type ConversationAnalytics = z.output<typeof ConversationAnalytics>;
export type AnalyticsFigures = z.output<typeof AnalyticsFigures>;
