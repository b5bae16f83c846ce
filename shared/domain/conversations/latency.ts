/**
 * Where each reply's time goes (docs/api.md, "Latency of every reply"; operations.md, "Running at
 * scale"). A reply's `latency_ms` is `{ e2e, model, tools, knowledge_base, platform }`, whole
 * milliseconds, all taken on the clock of the one process that sees both ends of each span:
 *
 * - `e2e`: from the end of the user's turn (a chat: the message received by the turn; a relay call:
 *   the final `prompt` received) to the first piece of the reply sent towards the user (a streamed
 *   chat: the first delta; a chat answered whole: the answer ready, after the turn's write, the
 *   figures then stored after the answer: chats/turns.ts `finalFigures`, shared/after-answer.ts).
 * - `model`: the time spent waiting on the model before the reply's first token: every model
 *   request of the turn that came before it whole (those that asked for tools), and the reply's own
 *   request to its first token. For a reply without tools, the first request's time to first token.
 * - `tools` and `knowledge_base`: the time spent in them before the reply (tools of one step run
 *   at once: the step's wall time counts once).
 * - `platform`: the rest (reading and preparing the turn, our own work between steps).
 *
 * A conversation's `latency`, written when it ends, is each member's `{ p50, p90, p99, min, max,
 * num }` over its replies (nearest rank on the exact figures), or null when no reply was timed.
 */

export interface ReplyLatency {
  e2e: number;
  model: number;
  tools: number;
  knowledge_base: number;
  platform: number;
}

export const LATENCY_MEMBERS = ['e2e', 'model', 'tools', 'knowledge_base', 'platform'] as const;

export interface LatencyStats {
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  num: number;
}

export type LatencySummary = Record<(typeof LATENCY_MEMBERS)[number], LatencyStats>;

/** Times one turn's replies: started at the end of the user's turn; the channel and the engine add what they waited on. */
export class ReplyTimer {
  private model = 0;
  private tools = 0;
  private knowledgeBase = 0;

  constructor(readonly startMs: number = Date.now()) {}

  /** Time spent ranking the knowledge base for this turn. */
  addKnowledgeBase(ms: number): void {
    this.knowledgeBase += Math.max(0, ms);
  }

  /** Ranks the knowledge base with `work`, its time added as the turn's knowledge-base time. */
  async rankKnowledgeBase<T>(work: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      return await work();
    } finally {
      this.addKnowledgeBase(Date.now() - started);
    }
  }

  /** Time spent waiting on the model (a request whole, or to the reply's first token). */
  addModel(ms: number): void {
    this.model += Math.max(0, ms);
  }

  /** Time spent in one step's tools (their wall time: they run at once). */
  addTools(ms: number): void {
    this.tools += Math.max(0, ms);
  }

  /** A reply's figures, its first piece sent at `sentMs`. `platform` is what the other members leave of `e2e`. */
  figures(sentMs: number = Date.now()): ReplyLatency {
    const e2e = Math.max(0, Math.round(sentMs - this.startMs));
    const model = Math.min(e2e, Math.round(this.model));
    const tools = Math.min(e2e - model, Math.round(this.tools));
    const knowledge_base = Math.min(e2e - model - tools, Math.round(this.knowledgeBase));
    return { e2e, model, tools, knowledge_base, platform: e2e - model - tools - knowledge_base };
  }
}

/** The nearest-rank percentile of sorted values. */
const rank = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

/** One member's statistics over the replies' figures. */
export function stats(values: number[]): LatencyStats {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: rank(sorted, 50), p90: rank(sorted, 90), p99: rank(sorted, 99), min: sorted[0]!, max: sorted.at(-1)!, num: sorted.length };
}

/** A conversation's `latency` over its replies' `latency_ms` (replies without figures are skipped); null when none has any. */
export function latencySummary(replies: (ReplyLatency | null | undefined)[]): LatencySummary | null {
  const timed = replies.filter((r): r is ReplyLatency => !!r);
  if (!timed.length) return null;
  return Object.fromEntries(LATENCY_MEMBERS.map((m) => [m, stats(timed.map((r) => r[m]))])) as LatencySummary;
}

/**
 * Analytics' reply-time percentiles come from fixed log-scale buckets kept in the counters
 * (analytics/counters.ts): a figure of `ms` > 0 falls in bucket `floor(log(ms) / log(BASE))`, 0 in
 * bucket `z`. A bucket's figure is its geometric middle, so a percentile read from the buckets is
 * within ±9.1% of the exact one (BASE = 2^(1/4): buckets 19% wide); the docs say so.
 */
export const LATENCY_BUCKET_BASE = 2 ** (1 / 4);
/** The members analytics keeps buckets of. */
export const BUCKETED_MEMBERS = ['e2e', 'model'] as const;
export type BucketedMember = (typeof BUCKETED_MEMBERS)[number];
export type LatencyBuckets = Partial<Record<BucketedMember, Record<string, number>>>;

/** The bucket of a figure (ms). */
export const bucketOf = (ms: number): string => (ms <= 0 ? 'z' : String(Math.floor(Math.log(ms) / Math.log(LATENCY_BUCKET_BASE) + 1e-9)));

/** A bucket's figure: its geometric middle, rounded (0 for `z`). */
export const bucketValue = (bucket: string): number => (bucket === 'z' ? 0 : Math.round(LATENCY_BUCKET_BASE ** (Number(bucket) + 0.5)));

/** The replies' figures as bucket counts per member (what a conversation adds to the counters). */
export function latencyBuckets(replies: (ReplyLatency | null | undefined)[]): LatencyBuckets {
  const out: LatencyBuckets = {};
  for (const r of replies) {
    if (!r) continue;
    for (const m of BUCKETED_MEMBERS) {
      const b = bucketOf(r[m]);
      const counts = (out[m] ??= {});
      counts[b] = (counts[b] ?? 0) + 1;
    }
  }
  return out;
}

/** p50, p90 and p99 (nearest rank) read from bucket counts; null with none. */
export function bucketPercentiles(counts: Record<string, number> | undefined): { p50: number; p90: number; p99: number } | null {
  const entries = Object.entries(counts ?? {}).filter(([, n]) => n > 0).sort(([a], [b]) => (a === 'z' ? -1 : b === 'z' ? 1 : Number(a) - Number(b)));
  const total = entries.reduce((n, [, c]) => n + c, 0);
  if (!total) return null;
  const at = (p: number) => {
    const rankOf = Math.max(1, Math.ceil((p / 100) * total));
    let seen = 0;
    for (const [b, c] of entries) {
      seen += c;
      if (seen >= rankOf) return bucketValue(b);
    }
    return bucketValue(entries.at(-1)![0]);
  };
  return { p50: at(50), p90: at(90), p99: at(99) };
}
