import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { NotFoundError, ValidationError } from '../../errors';
import { getItem } from '../../db/store';
import { AMOUNT_SCALE, unitsToDecimal } from '../billing/service';
import { ALL, allAgentPartitions, Counter } from './counters';
import { BUCKETED_MEMBERS, bucketPercentiles } from '../conversations/latency';
import { MAX_ANALYTICS_DAYS, type AnalyticsFigures, type ConversationAnalytics, type ConversationAnalyticsInput } from './schemas';

const DAY_MS = 86_400_000;

/** The UTC day of a date (`YYYY-MM-DD`, as it is) or an instant. */
export const utcDay = (value: string) => (/^\d{4}-\d{2}-\d{2}$/.test(value) ? value : new Date(value).toISOString().slice(0, 10));
const dayMs = (day: string) => Date.parse(`${day}T00:00:00Z`);
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The intervals of a window: each day, or weeks from Monday (ISO weeks) clipped to the window. */
export function intervalsOf(from: string, to: string, interval: 'day' | 'week'): { start: string; end: string }[] {
  const out: { start: string; end: string }[] = [];
  const last = dayMs(to);
  for (let t = dayMs(from); t <= last; ) {
    let end = t;
    if (interval === 'week') {
      const weekday = (new Date(t).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
      end = Math.min(last, t + (6 - weekday) * DAY_MS);
    }
    out.push({ start: dayOf(t), end: dayOf(end) });
    t = end + DAY_MS;
  }
  return out;
}

type Raw = Record<string, number>;

type Buckets = Record<string, Record<string, number>>;
/** Percentiles per bucketed member (null without a timed reply). */
const latencyOf = (buckets: Buckets | undefined) => Object.fromEntries(BUCKETED_MEMBERS.map((m) => [m, bucketPercentiles(buckets?.[m])])) as AnalyticsFigures['latency'];

function figures(raw: Raw): AnalyticsFigures {
  const ended: Record<string, number> = {};
  const fields: Record<string, Record<string, number>> = {};
  const versions: Record<string, { conversations: number; analyzed: number; successful: number }> = {};
  const buckets: Buckets = {};
  const versionBuckets: Record<string, Buckets> = {};
  const addBucket = (into: Buckets, rest: string, n: number) => {
    const [member, bucket] = rest.split('#') as [string, string];
    (into[member] ??= {})[bucket] = n;
  };
  for (const [name, n] of Object.entries(raw)) {
    if (!n) continue;
    if (name.startsWith('end#')) ended[name.slice(4)] = n;
    else if (name.startsWith('lat#')) addBucket(buckets, name.slice(4), n);
    else if (name.startsWith('ver#') && name.includes('#lat#')) {
      const [, version] = name.split('#') as [string, string];
      addBucket((versionBuckets[version] ??= {}), name.slice(name.indexOf('#lat#') + 5), n);
    } else if (name.startsWith('ver#')) {
      const [, version, what] = name.split('#') as [string, string, 'conversations' | 'analyzed' | 'successful'];
      (versions[version] ??= { conversations: 0, analyzed: 0, successful: 0 })[what] = n;
    }
    else if (name.startsWith('field#')) {
      const rest = name.slice(6);
      const at = rest.indexOf('#');
      (fields[rest.slice(0, at)] ??= {})[rest.slice(at + 1)] = n;
    }
  }
  return {
    calls: raw[Counter.calls] ?? 0,
    chats: raw[Counter.chats] ?? 0,
    ended,
    successful: raw[Counter.successful] ?? 0,
    analyzed: raw[Counter.analyzed] ?? 0,
    minutes: Math.round(((raw[Counter.seconds] ?? 0) / 60) * 100) / 100,
    prompt_tokens: raw[Counter.promptTokens] ?? 0,
    completion_tokens: raw[Counter.completionTokens] ?? 0,
    // Written by the OpenAI-compatible endpoint in its own channel (openai-compat/completions.ts).
    openai_requests: raw.openai_requests ?? 0,
    cost: Number(unitsToDecimal(raw[Counter.costUnits] ?? 0, AMOUNT_SCALE)),
    fields,
    versions: Object.fromEntries(Object.entries(versions).map(([v, f]) => [v, { ...f, latency: latencyOf(versionBuckets[v]) }])),
    latency: latencyOf(buckets),
  };
}

const sum = (into: Raw, from: Raw) => {
  for (const [name, n] of Object.entries(from)) if (typeof n === 'number') into[name] = (into[name] ?? 0) + n;
};

/** What one analytics read cost (the bench reports it). */
export interface ReadCost {
  requests: number;
  readUnits: number;
}

/** True when the zone's days are UTC days (`UTC`, `Etc/UTC`, `GMT`, …: Intl resolves them all to `UTC`). */
const isUtc = (zone: string) => new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone === 'UTC';

/** The local day (`YYYY-MM-DD`) of an instant in a zone; Intl only (no luxon in this function). */
function localDayIn(zone: string): (ms: number) => string {
  const format = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
  return (ms) => {
    const parts: Record<string, string> = {};
    for (const p of format.formatToParts(ms)) parts[p.type] = p.value;
    return `${parts.year}-${parts.month}-${parts.day}`;
  };
}

const HOUR_MS = 3_600_000;
/** Every zone's offset lies within this of UTC (Etc/GMT+12 … Pacific/Kiritimati +14). */
const MAX_OFFSET_MS = 15 * HOUR_MS;

/**
 * The UTC hours (`YYYY-MM-DDTHH`) of a zone's local days from..to, each with the local day it
 * counts on: the day its middle falls on. DST is Intl's: a 23- or 25-hour local day has 23 or 25
 * hours. In a zone whose offset is not whole hours (Asia/Kolkata +05:30), an hour astride local
 * midnight counts whole on one side: a day's edges move by at most 30 minutes.
 */
export function localHours(from: string, to: string, zone: string): Map<string, string> {
  const dayOfLocal = localDayIn(zone);
  const out = new Map<string, string>();
  for (let t = dayMs(from) - MAX_OFFSET_MS; t < dayMs(to) + DAY_MS + MAX_OFFSET_MS; t += HOUR_MS) {
    const day = dayOfLocal(t + HOUR_MS / 2);
    if (day >= from && day <= to) out.set(new Date(t).toISOString().slice(0, 13), day);
  }
  return out;
}

/** The counter items of one partition between two sort keys, each handed to `each`. */
export async function queryCounters(pk: string, from: string, to: string, each: (sk: string, raw: Raw) => void, cost?: ReadCost): Promise<void> {
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :from AND :to',
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ExpressionAttributeValues: { ':pk': pk, ':from': from, ':to': to },
        ExclusiveStartKey: startKey,
        ...(cost ? { ReturnConsumedCapacity: 'TOTAL' as const } : {}),
      }),
    );
    if (cost) {
      cost.requests++;
      cost.readUnits += out.ConsumedCapacity?.CapacityUnits ?? 0;
    }
    for (const item of out.Items ?? []) {
      const { pk: _pk, sk, entity: _e, day: _d, version: _v, ...rest } = item as Record<string, unknown>;
      each(String(sk), rest as Raw);
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey);
}

/**
 * GET /analytics/conversations: the counter items of the agent's partition (or, for all agents,
 * of the all-agents shards: counters.ts) for the channel (or ALL) between the window's first and
 * last day, one Query each, in parallel (more pages only past 1 MB), summed per interval and in
 * total. No Scan, and nothing read grows with the number of conversations.
 *
 * In UTC (the default) the day items are read, as they always were. In another time zone the
 * hour items covering the zone's local days are, each summed into the local day it falls on
 * (`localHours`); the legacy `ALL` partition has none (older ends, the OpenAI endpoint), so it is
 * not read, and `channel=openai`, counted per UTC day only, is refused.
 */
export async function conversationAnalytics(orgId: string, q: ConversationAnalyticsInput, cost?: ReadCost): Promise<ConversationAnalytics> {
  const zone = q.timezone ?? 'UTC';
  const utc = isUtc(zone);
  const dayOfLocal = utc ? undefined : localDayIn(zone);
  const dayIn = (value: string) => (dayOfLocal && !/^\d{4}-\d{2}-\d{2}$/.test(value) ? dayOfLocal(Date.parse(value)) : utcDay(value));
  const from = dayIn(q.from);
  const to = dayIn(q.to);
  if (to < from) throw ValidationError.field('to', `must not be before from (${from})`);
  const days = (dayMs(to) - dayMs(from)) / DAY_MS + 1;
  if (days > MAX_ANALYTICS_DAYS) throw ValidationError.field('to', `the window covers ${days} days; at most ${MAX_ANALYTICS_DAYS} are read at once`);
  if (!utc && q.channel === 'openai') throw ValidationError.field('timezone', 'the openai channel is counted per UTC day only: read it without timezone (or with UTC)');
  // Another organization's agent (or none) is a 404, as everywhere, not a window of zeros.
  if (q.agent_id && !(await getItem(keys.agent(orgId, q.agent_id)))) throw new NotFoundError('Agent', q.agent_id);
  const byDay = new Map<string, Raw>();
  const addTo = (day: string, raw: Raw) => sum(byDay.get(day) ?? byDay.set(day, {}).get(day)!, raw);
  const channel = q.channel ?? ALL;
  if (utc) {
    // One agent: its partition. All agents: the shards of the all-agents items and ALL, summed (counters.ts).
    const partitions = q.agent_id ? [q.agent_id] : allAgentPartitions();
    const prefix = keys.conversationStatsDayPrefix;
    await Promise.all(partitions.map((agent) => queryCounters(keys.conversationStats(orgId, agent, channel), `${prefix}${from}`, `${prefix}${to}`, (sk, raw) => addTo(sk.slice(prefix.length), raw), cost)));
  } else {
    const hours = localHours(from, to, zone);
    const ordered = [...hours.keys()];
    const partitions = q.agent_id ? [q.agent_id] : allAgentPartitions().filter((p) => p !== ALL);
    const prefix = keys.conversationStatsHourPrefix;
    await Promise.all(partitions.map((agent) => queryCounters(keys.conversationStats(orgId, agent, channel), `${prefix}${ordered[0]}`, `${prefix}${ordered.at(-1)}`, (sk, raw) => {
      const day = hours.get(sk.slice(prefix.length));
      if (day) addTo(day, raw);
    }, cost)));
  }
  const total: Raw = {};
  const intervals = intervalsOf(from, to, q.interval).map(({ start, end }) => {
    const raw: Raw = {};
    for (let t = dayMs(start); t <= dayMs(end); t += DAY_MS) {
      const day = byDay.get(dayOf(t));
      if (day) sum(raw, day);
    }
    sum(total, raw);
    return { start, end, ...figures(raw) };
  });
  return { agent_id: q.agent_id ?? null, channel: q.channel ?? null, from, to, interval: q.interval, intervals, totals: figures(total) };
}
