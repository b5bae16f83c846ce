import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { NotFoundError, ValidationError } from '../../errors';
import type { TrafficSplitVariant } from '../agents/schemas';
import type { SplitOnAgent } from '../agents/traffic-split';
import { bucketPercentiles } from '../conversations/latency';
import { ALL, SPLIT_PREFIX } from './counters';
import { compareProportions } from './proportions';
import { MAX_ANALYTICS_DAYS } from './schemas';
import { queryCounters, utcDay } from './service';
import type { TrafficSplitResults, TrafficSplitResultsInput } from './split-schemas';

const DAY_MS = 86_400_000;

interface VariantCounts {
  n: number;
  analyzed: number;
  successful: number;
  seconds: number;
  ended: Record<string, number>;
  fields: Record<string, Record<string, number>>;
  latency: Record<string, Record<string, number>>;
}

const empty = (): VariantCounts => ({ n: 0, analyzed: 0, successful: 0, seconds: 0, ended: {}, fields: {}, latency: {} });

/** Adds one counter member of the split (`<version>#<what>`, the split's prefix taken off) to its variant. */
function addMember(into: Map<string, VariantCounts>, rest: string, n: number): void {
  const at = rest.indexOf('#');
  const version = rest.slice(0, at);
  const what = rest.slice(at + 1);
  const v = into.get(version) ?? into.set(version, empty()).get(version)!;
  if (what === 'n' || what === 'analyzed' || what === 'successful' || what === 'seconds') v[what] += n;
  else if (what.startsWith('end#')) v.ended[what.slice(4)] = (v.ended[what.slice(4)] ?? 0) + n;
  else if (what.startsWith('lat#')) {
    const [member, bucket] = what.slice(4).split('#') as [string, string];
    (v.latency[member] ??= {})[bucket] = (v.latency[member]![bucket] ?? 0) + n;
  } else if (what.startsWith('field#')) {
    const field = what.slice(6);
    const sep = field.indexOf('#');
    const values = (v.fields[field.slice(0, sep)] ??= {});
    values[field.slice(sep + 1)] = (values[field.slice(sep + 1)] ?? 0) + n;
  }
}

/**
 * GET /agents/{id}/traffic-split/results: the split's per-variant counters (analytics/counters.ts,
 * `spl#<split>#<version>#…`, kept on the agent's all-channel day items) summed over the window's
 * days: one Query of at most 366 small items, whatever the number of conversations, and no Scan.
 * Each variant's success rate is compared with the first variant's (proportions.ts).
 */
export async function trafficSplitResults(orgId: string, agentId: string, q: TrafficSplitResultsInput): Promise<TrafficSplitResults> {
  const agent = await getItem<SplitOnAgent>(keys.agent(orgId, agentId));
  if (!agent) throw new NotFoundError('Agent', agentId);
  const current = agent.traffic_split && agent.traffic_split_id
    ? { id: agent.traffic_split_id, variants: agent.traffic_split, started_at: agent.traffic_split_started_at ?? new Date(0).toISOString(), ended_at: null as string | null }
    : undefined;
  const previous = agent.previous_traffic_split ?? undefined;
  const split = q.traffic_split_id ? [current, previous].find((s) => s?.id === q.traffic_split_id) : current ?? previous;
  if (!split) {
    if (q.traffic_split_id) throw new NotFoundError('Traffic split', q.traffic_split_id);
    throw new NotFoundError('Traffic split', `of agent ${agentId} (it has none, and none has ended)`);
  }
  const from = q.from ? utcDay(q.from) : utcDay(split.started_at);
  const to = q.to ? utcDay(q.to) : utcDay(split.ended_at ?? clockNow().toISOString());
  if (to < from) throw ValidationError.field('to', `must not be before from (${from})`);
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;
  if (days > MAX_ANALYTICS_DAYS) throw ValidationError.field('to', `the window covers ${days} days; at most ${MAX_ANALYTICS_DAYS} are read at once`);

  const prefix = `${SPLIT_PREFIX}${split.id}#`;
  const byVersion = new Map<string, VariantCounts>();
  const dayPrefix = keys.conversationStatsDayPrefix;
  await queryCounters(keys.conversationStats(orgId, agentId, ALL), `${dayPrefix}${from}`, `${dayPrefix}${to}`, (_sk, raw) => {
    for (const [name, n] of Object.entries(raw)) if (typeof n === 'number' && n && name.startsWith(prefix)) addMember(byVersion, name.slice(prefix.length), n);
  });

  const variants = split.variants as TrafficSplitVariant[];
  const baseline = byVersion.get(String(variants[0]!.version)) ?? empty();
  return {
    agent_id: agentId,
    traffic_split_id: split.id,
    status: split === current ? 'active' : 'ended',
    started_at: split.started_at,
    ended_at: split.ended_at,
    from,
    to,
    variants: variants.map((variant, i) => {
      const v = byVersion.get(String(variant.version)) ?? empty();
      return {
        version: variant.version,
        weight: variant.weight,
        conversations: v.n,
        analyzed: v.analyzed,
        successful: v.successful,
        success_rate: v.analyzed ? v.successful / v.analyzed : null,
        average_duration_seconds: v.n ? Math.round((v.seconds / v.n) * 100) / 100 : null,
        latency_p50_ms: bucketPercentiles(v.latency.e2e)?.p50 ?? null,
        ended: v.ended,
        fields: v.fields,
        comparison: i === 0 ? null : comparison(variants[0]!.version, baseline, v),
      };
    }),
  };
}

function comparison(baselineVersion: number, base: VariantCounts, v: VariantCounts) {
  const c = compareProportions(base.successful, base.analyzed, v.successful, v.analyzed);
  if (!c) return { baseline_version: baselineVersion, difference: null, ci95: null, z: null, p_value: null, note: 'Nothing to compare yet: each variant needs analysed conversations.' };
  return { baseline_version: baselineVersion, difference: c.difference, ci95: c.ci95, z: c.z, p_value: c.p_value, note: c.note };
}
