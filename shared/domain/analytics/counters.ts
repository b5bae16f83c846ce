import { tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConditionFailed, getItem, transact, type TransactItem } from '../../db/store';
import { billableMinutes } from '../calls/state';
import { toUnits } from '../billing/service';
import { latencyBuckets, type LatencyBuckets, type ReplyLatency } from '../conversations/latency';

/**
 * Conversation analytics kept as counters (docs/api.md, "Analytics"; docs/data-model.md). Every
 * ended call and chat adds its contribution to four day items — (its agent | ALL) × (its channel
 * | ALL), `ORG#<org>#STATS#<agent>#<channel>` / `DAY#<UTC day it ended>` — and to the four hour
 * items beside them (`HOUR#<UTC hour it ended>`, for reads in a time zone) with ADD, and records
 * that contribution on itself (`stats_counted`) in the same transaction, conditioned on the item's
 * `version` as read. A later change (its analysis, a re-analysis, a corrected duration) writes
 * only the difference between what it contributes now and what it recorded, so a conversation is
 * counted once however often a job is redelivered, and a re-analysis moves its counts instead of
 * adding them again. The counters are exact: a recount from the stored conversations
 * (`contribution` over each of them) equals them (test/integration/analytics.test.ts).
 */

export type Channel = 'call' | 'chat';
export const ALL = 'ALL';

/**
 * The all-agents items are every end's write in an organization, so they are sharded: a
 * conversation counts in `ALL~<shard>` (from its id), and an all-agents read sums the shards (and
 * `ALL`, where conversations counted before the shards were, and the OpenAI endpoint's usage, are).
 * Concurrent ends of one organization spread over ALL_SHARDS items instead of colliding on one.
 */
export const ALL_SHARDS = 4;
/** The all-agents partitions an all-agents read sums. */
export const allAgentPartitions = (): string[] => [ALL, ...Array.from({ length: ALL_SHARDS }, (_, i) => `${ALL}~${i}`)];
export const allShardOf = (conversationId: string) => `${ALL}~${parseInt(conversationId.replace(/-/g, '').slice(-4), 16) % ALL_SHARDS}`;

/** Counter members (flat top-level numbers, so ADD works on an item that does not exist yet). */
export const Counter = {
  calls: 'calls',
  chats: 'chats',
  successful: 'successful',
  analyzed: 'analyzed',
  seconds: 'seconds',
  promptTokens: 'prompt_tokens',
  completionTokens: 'completion_tokens',
  /** Cost in units of 10^-4 USD (billing's AMOUNT_SCALE), so sums are exact. */
  costUnits: 'cost_units',
  ended: (reason: string) => `end#${reason}`,
  /** Per agent version (`draft` for the draft): `ver#<version>#conversations|analyzed|successful`. */
  version: (version: number | null | undefined, what: 'conversations' | 'analyzed' | 'successful') => `ver#${typeof version === 'number' ? version : 'draft'}#${what}`,
  field: (name: string, value: string) => `field#${name}#${value}`,
  /** Replies whose `member` figure fell in `bucket` (conversations/latency.ts); per version `ver#<version>#lat#<member>#<bucket>`. */
  latency: (member: string, bucket: string, version?: number | null) => `${version === undefined ? '' : `ver#${typeof version === 'number' ? version : 'draft'}#`}lat#${member}#${bucket}`,
  /**
   * Per traffic-split variant (agents/traffic-split.ts): `spl#<split id>#<version>#<what>`, where what
   * is `n`, `analyzed`, `successful`, `seconds`, `end#<reason>`, `lat#<member>#<bucket>` or
   * `field#<name>#<value>`. Kept only on the agent's own all-channel day item (counterChanges).
   */
  split: (splitId: string, version: number | null | undefined, what: string) => `${SPLIT_PREFIX}${splitId}#${typeof version === 'number' ? version : 'draft'}#${what}`,
} as const;

/** Where the per-variant members of a traffic split start. */
export const SPLIT_PREFIX = 'spl#';

/** What one conversation adds to the counters of one day, agent and channel. */
export interface Contribution {
  day: string;
  /**
   * The UTC hour (`YYYY-MM-DDTHH`) it was counted in. Absent on contributions recorded before the
   * hour items existed: their hours were never added, so nothing is taken from them either.
   */
  hour?: string;
  agent_id: string;
  channel: Channel;
  counts: Record<string, number>;
}

/** The parts of a call or chat item the counters read. */
export interface CountedItem {
  organization_id: string;
  id: string;
  agent_id: string;
  /** The agent version the conversation ran (null: the draft). */
  agent_version?: number | null;
  /** The traffic split that drew that version (absent: none). */
  traffic_split_id?: string | null;
  status: string;
  /** A chat's duration is from its start to its end (a call has `duration_sec`). */
  started_at?: string | null;
  version?: number;
  ended_at?: string | null;
  updated_at: string;
  // A call's
  disconnection_reason?: string | null;
  duration_sec?: number;
  price_per_minute?: number;
  // A chat's
  end_reason?: string | null;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  /** A chat's replies as latency bucket counts, written at its end (a chat item holds no messages). */
  latency_buckets?: LatencyBuckets;
  /** A call's transcript: its agent lines' `latency_ms`. */
  transcript?: { role: string; latency_ms?: ReplyLatency }[];
  analysis?: {
    successful?: boolean;
    data?: Record<string, unknown>;
    data_types?: Record<string, string>;
  } | null;
  stats_counted?: Contribution | null;
}

/** The UTC day (`YYYY-MM-DD`) a conversation is counted on: the day it ended. */
export const countedDay = (item: CountedItem) => (item.ended_at ?? item.updated_at).slice(0, 10);
/** The UTC hour (`YYYY-MM-DDTHH`) a conversation is counted in. */
export const countedHour = (item: CountedItem) => new Date(item.ended_at ?? item.updated_at).toISOString().slice(0, 13);

/** What an ended conversation contributes now; undefined while it has not ended. */
export function contribution(channel: Channel, item: CountedItem): Contribution | undefined {
  if (item.status !== 'ended') return undefined;
  const counts: Record<string, number> = {};
  const add = (name: string, n: number) => {
    if (n) counts[name] = (counts[name] ?? 0) + n;
  };
  if (channel === 'call') {
    add(Counter.calls, 1);
    add(Counter.ended(item.disconnection_reason ?? 'failed'), 1);
    const seconds = Math.max(0, Math.round(item.duration_sec ?? 0));
    add(Counter.seconds, seconds);
    // What the call's minutes charge is: billable minutes at its price (billing rounds the same way).
    const price = item.price_per_minute ?? 0;
    if (price > 0) add(Counter.costUnits, toUnits(billableMinutes(seconds) * price));
  } else {
    add(Counter.chats, 1);
    add(Counter.ended(item.end_reason ?? 'user_ended'), 1);
    add(Counter.promptTokens, item.usage?.prompt_tokens ?? 0);
    add(Counter.completionTokens, item.usage?.completion_tokens ?? 0);
  }
  add(Counter.version(item.agent_version, 'conversations'), 1);
  // Reply times as bucket counts, overall and per version (analytics reads percentiles from them).
  const buckets = channel === 'call' ? latencyBuckets((item.transcript ?? []).map((t) => (t.role === 'agent' ? t.latency_ms : undefined))) : (item.latency_buckets ?? {});
  for (const [member, counts] of Object.entries(buckets)) {
    for (const [bucket, n] of Object.entries(counts ?? {})) {
      add(Counter.latency(member, bucket), n);
      add(Counter.latency(member, bucket, item.agent_version ?? null), n);
    }
  }
  const splitId = item.traffic_split_id;
  const variant = (what: string, n: number) => splitId && add(Counter.split(splitId, item.agent_version, what), n);
  if (splitId) {
    variant('n', 1);
    variant(`end#${channel === 'call' ? item.disconnection_reason ?? 'failed' : item.end_reason ?? 'user_ended'}`, 1);
    const seconds = channel === 'call'
      ? item.duration_sec ?? 0
      : item.started_at && item.ended_at ? (Date.parse(item.ended_at) - Date.parse(item.started_at)) / 1000 : 0;
    variant('seconds', Math.max(0, Math.round(seconds)));
    for (const [member, counts] of Object.entries(buckets)) for (const [bucket, n] of Object.entries(counts ?? {})) variant(`lat#${member}#${bucket}`, n);
  }
  const analysis = item.analysis;
  if (analysis) {
    variant('analyzed', 1);
    if (analysis.successful) variant('successful', 1);
    add(Counter.analyzed, 1);
    add(Counter.version(item.agent_version, 'analyzed'), 1);
    if (analysis.successful) {
      add(Counter.successful, 1);
      add(Counter.version(item.agent_version, 'successful'), 1);
    }
    // Boolean and enum fields count per value; a null (unknown) value is not counted.
    for (const [name, type] of Object.entries(analysis.data_types ?? {})) {
      const value = analysis.data?.[name];
      if ((type === 'boolean' && typeof value === 'boolean') || (type === 'enum' && typeof value === 'string')) {
        add(Counter.field(name, String(value)), 1);
        variant(`field#${name}#${String(value)}`, 1);
      }
    }
  }
  return { day: countedDay(item), hour: countedHour(item), agent_id: item.agent_id, channel, counts };
}

/** One counter item's change: a day item, or with `hour` that hour's item. */
interface CounterChange {
  agent: string;
  channel: string;
  day: string;
  hour?: string;
  deltas: Record<string, number>;
}

/** The counter changes that take the counters from `before` (what was recorded) to `after`. */
export function counterChanges(before: Contribution | null | undefined, after: Contribution | undefined, conversationId: string): CounterChange[] {
  const changes = new Map<string, CounterChange>();
  const apply = (c: Contribution, sign: number) => {
    for (const agent of [c.agent_id, allShardOf(conversationId)]) {
      for (const channel of [c.channel, ALL]) {
        // At most 2 agents x 2 channels x (day, hour) x (before, after): 16 updates, with the
        // conversation and an event 18 of a transaction's 100 items.
        for (const hour of c.hour ? [undefined, c.hour] : [undefined]) {
          const id = `${agent}|${channel}|${c.day}|${hour ?? ''}`;
          const change = changes.get(id) ?? { agent, channel, day: c.day, ...(hour ? { hour } : {}), deltas: {} };
          // A split's members only on the agent's all-channel day item: the one its results read,
          // and not on the all-agents items, which every agent's splits would otherwise grow.
          const withSplit = agent === c.agent_id && channel === ALL && !hour;
          for (const [name, n] of Object.entries(c.counts)) {
            if (!withSplit && name.startsWith(SPLIT_PREFIX)) continue;
            change.deltas[name] = (change.deltas[name] ?? 0) + sign * n;
          }
          changes.set(id, change);
        }
      }
    }
  };
  if (before) apply(before, -1);
  if (after) apply(after, 1);
  const out: CounterChange[] = [];
  for (const change of changes.values()) {
    for (const [name, n] of Object.entries(change.deltas)) if (n === 0) delete change.deltas[name];
    if (Object.keys(change.deltas).length) out.push(change);
  }
  return out;
}

/** The ADD update of one counter item. */
function counterWrite(orgId: string, change: CounterChange): TransactItem {
  const names: Record<string, string> = { '#entity': 'entity', '#day': 'day' };
  const values: Record<string, unknown> = { ':entity': 'STATS', ':day': change.day };
  const adds = Object.entries(change.deltas).map(([name, n], i) => {
    names[`#a${i}`] = name;
    values[`:a${i}`] = n;
    return `#a${i} :a${i}`;
  });
  return {
    Update: {
      TableName: tableName(),
      Key: change.hour ? keys.conversationStatsHour(orgId, change.agent, change.channel, change.hour) : keys.conversationStatsDay(orgId, change.agent, change.channel, change.day),
      UpdateExpression: `SET #entity = :entity, #day = :day ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * What a write of a conversation item must add to be counted: the members to SET on the item
 * (`stats_counted`), and the counter updates to put in the same transaction. Empty when the
 * counters already hold what the item contributes.
 */
export function statsWrites(channel: Channel, next: CountedItem): { set: Record<string, unknown>; counters: TransactItem[] } {
  const after = contribution(channel, next);
  const changes = counterChanges(next.stats_counted, after, next.id);
  if (!changes.length) return { set: {}, counters: [] };
  return { set: { stats_counted: after ?? null }, counters: changes.map((c) => counterWrite(next.organization_id, c)) };
}

const itemKey = (channel: Channel, orgId: string, id: string) => (channel === 'call' ? keys.call(orgId, id) : keys.chat(orgId, id));

/** The conditional update that records the contribution on the conversation item (no other member changes). */
function recordOnItem(channel: Channel, item: CountedItem, set: Record<string, unknown>): TransactItem {
  const names: Record<string, string> = { '#v': 'version', '#sc': 'stats_counted' };
  const values: Record<string, unknown> = { ':sc': set.stats_counted, ':one': 1, ':zero': 0 };
  let condition = 'attribute_exists(pk) AND attribute_not_exists(#v)';
  if (item.version !== undefined) {
    condition = 'attribute_exists(pk) AND #v = :read';
    values[':read'] = item.version;
  }
  return {
    Update: {
      TableName: tableName(),
      Key: itemKey(channel, item.organization_id, item.id),
      UpdateExpression: 'SET #sc = :sc, #v = if_not_exists(#v, :zero) + :one',
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * Brings the counters in step with one conversation as it is stored now: its end, its analysis,
 * a corrected duration. Idempotent (a second call finds nothing to do) and safe against any
 * concurrent write of the conversation (conditioned on its `version`: the loser reads again).
 * `known`: the item as the caller just read it (saves a read). True when it wrote something.
 */
export async function syncConversationStats(channel: Channel, orgId: string, id: string, known?: CountedItem): Promise<boolean> {
  let item = known;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    item ??= await getItem<CountedItem>(itemKey(channel, orgId, id));
    if (!item || item.status !== 'ended') return false;
    const { set, counters } = statsWrites(channel, item);
    if (!counters.length) return false;
    try {
      await transact([recordOnItem(channel, item, set), ...counters]);
      return true;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      item = undefined;
      await pause(attempt);
    }
  }
  throw new Error(`The ${channel} ${id} kept changing while counting it`);
}
