import { createHash, randomInt } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { keys } from '../../db/keys';
import type { Guard } from '../../db/store';
import { ValidationError } from '../../errors';
import type { TrafficSplitVariant } from './schemas';

/**
 * Traffic split between versions (docs/api.md, "Traffic split between versions"). The split rides
 * on the agent item (`traffic_split`, `traffic_split_id`), so a new conversation, which reads its
 * agent anyway, draws its version with no other read. The draw is deterministic for a person: a
 * hash of the split's id and the person's key picks a bucket 0–99, and the variants own
 * consecutive ranges of buckets by weight. The same person therefore meets the same version on
 * every channel while the split stands, and nothing is stored to remember it; a new split (a new
 * id) draws everyone again. Conversations with no person key draw at random.
 */

/** The split state the agent item carries. */
export interface SplitOnAgent {
  traffic_split?: TrafficSplitVariant[] | null;
  traffic_split_id?: string | null;
  /** When the current split started (results default their window to it). */
  traffic_split_started_at?: string | null;
  /** The split that ended last: results can still be read after it ends. */
  previous_traffic_split?: EndedSplit | null;
}

export interface EndedSplit {
  id: string;
  variants: TrafficSplitVariant[];
  started_at: string;
  ended_at: string;
}

/**
 * Who a conversation is with, for stickiness: a contact (by id) wins over a phone number, so a
 * known contact meets one version whether they chat or call; a widget visitor and an OpenAI `user`
 * are their own kinds. Null: nobody known (a random draw).
 */
export type PersonKey = `contact:${string}` | `phone:${string}` | `visitor:${string}` | `user:${string}`;

/** The person key from what a conversation knows (the first one present). */
export function personKey(known: { contactId?: string | null; phone?: string | null; visitorId?: string | null; user?: string | null }): PersonKey | null {
  if (known.contactId) return `contact:${known.contactId}`;
  if (known.phone) return `phone:${known.phone}`;
  if (known.visitorId) return `visitor:${known.visitorId}`;
  if (known.user) return `user:${known.user}`;
  return null;
}

/** The bucket (0–99) of a person under a split: the first four bytes of SHA-256(split id, key), mod 100 (bias under 10^-7). */
export function splitBucket(splitId: string, key: string): number {
  return createHash('sha256').update(splitId).update('\u0000').update(key).digest().readUInt32BE(0) % 100;
}

/** The variant owning `bucket` (0–99): variants own consecutive ranges by weight, in the split's order. */
export function variantAt(variants: TrafficSplitVariant[], bucket: number): TrafficSplitVariant {
  let upTo = 0;
  for (const v of variants) {
    upTo += v.weight;
    if (bucket < upTo) return v;
  }
  return variants[variants.length - 1]!;
}

/** The version a new conversation runs under a split: sticky for a person, random without one. */
export function drawVersion(splitId: string, variants: TrafficSplitVariant[], key: PersonKey | null | undefined): number {
  return variantAt(variants, key ? splitBucket(splitId, key) : randomInt(100)).version;
}

/** The split a new conversation of this agent draws from, or undefined when it has none. */
export function activeSplit(agent: SplitOnAgent): { id: string; variants: TrafficSplitVariant[] } | undefined {
  const variants = agent.traffic_split;
  return variants && variants.length && agent.traffic_split_id ? { id: agent.traffic_split_id, variants } : undefined;
}

const sameSplit = (a: TrafficSplitVariant[] | null | undefined, b: TrafficSplitVariant[] | null | undefined) =>
  JSON.stringify((a ?? []).map((v) => [v.version, v.weight])) === JSON.stringify((b ?? []).map((v) => [v.version, v.weight]));

/**
 * What a PATCH of `traffic_split` writes, read against the agent as stored: the members to set,
 * the guards (every version published; gated: each published through a passed run, as a
 * rollback's must be) and the condition that the split it replaces is still the one read (two
 * racing changes cannot both keep the same `previous_traffic_split`). The same split sent again
 * keeps its id; undefined when the PATCH does not touch the split.
 */
export function splitChange(
  orgId: string,
  agentId: string,
  stored: SplitOnAgent,
  next: TrafficSplitVariant[] | null | undefined,
  /** The publish gate's refusal (versions.ts, testsRequired) when the gate is on; undefined when off. */
  gate: ((what: string) => Error) | undefined,
  now: string,
): { set: Record<string, unknown>; guards: Guard[]; condition: { condition: string; names: Record<string, string>; values: Record<string, unknown> } } | undefined {
  if (next === undefined) return undefined;
  const current = activeSplit(stored);
  const readId = stored.traffic_split_id ?? null;
  const condition = readId
    ? { condition: '#tsid = :tsid', names: { '#tsid': 'traffic_split_id' }, values: { ':tsid': readId } as Record<string, unknown> }
    : { condition: '(attribute_not_exists(#tsid) OR #tsid = :tsid)', names: { '#tsid': 'traffic_split_id' }, values: { ':tsid': null } as Record<string, unknown> };
  if (next === null) {
    const ended: EndedSplit | null = current ? { id: current.id, variants: current.variants, started_at: stored.traffic_split_started_at ?? now, ended_at: now } : stored.previous_traffic_split ?? null;
    return { set: { traffic_split: null, traffic_split_id: null, traffic_split_started_at: null, previous_traffic_split: ended }, guards: [], condition };
  }
  const guards: Guard[] = next.map((v, i) =>
    gate
      ? { key: keys.agentVersion(orgId, agentId, v.version), condition: 'attribute_exists(test_run_id)', onFail: () => gate(`traffic_split.${i}: version ${v.version} does not exist or was not published through a passed run (test_run_id)`) }
      : { key: keys.agentVersion(orgId, agentId, v.version), onFail: () => ValidationError.field(`traffic_split.${i}.version`, `agent ${agentId} has no version ${v.version}`) },
  );
  if (current && sameSplit(current.variants, next)) return { set: {}, guards, condition };
  const set: Record<string, unknown> = { traffic_split: next, traffic_split_id: uuidv7(), traffic_split_started_at: now };
  // A split replacing another ends it: its results stay readable by id.
  if (current) set.previous_traffic_split = { id: current.id, variants: current.variants, started_at: stored.traffic_split_started_at ?? now, ended_at: now };
  return { set, guards, condition };
}
