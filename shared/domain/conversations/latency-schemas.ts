import * as z from 'zod/mini';
import { named } from '../common/named';

/** The response shapes of conversations/latency.ts (docs/api.md, "Latency of every reply"): chats and calls share them. */

const LatencyStats = /* @__PURE__ */ named('LatencyStats', () => z.object({ p50: z.int(), p90: z.int(), p99: z.int(), min: z.int(), max: z.int(), num: z.int() }), 'One latency member over a conversation\'s replies (ms; `num`: the replies)');

/** Where one reply's time went, in ms. */
export const ReplyLatency = /* @__PURE__ */ named('ReplyLatency', () => z.object({ e2e: z.int(), model: z.int(), tools: z.int(), knowledge_base: z.int(), platform: z.int() }), 'Where one agent reply\'s time went (ms)');

/** A conversation's reply times: each member's percentiles over its replies. */
export const ConversationLatency = /* @__PURE__ */ named('ConversationLatency', () => z.object({
  e2e: LatencyStats, model: LatencyStats, tools: LatencyStats, knowledge_base: LatencyStats, platform: LatencyStats,
}), 'A conversation\'s reply times (ms): p50, p90, p99, min, max and the number of replies, for each member of `latency_ms`');
