import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { clockMs } from '../../clock';
import { db, tableName } from '../../db/client';
import { gsi2, keys } from '../../db/keys';
import { ConditionFailed, deleteKeys, getItem, isTransactionConflict, putNew, transact, updateExisting, type TransactItem } from '../../db/store';
import { noteDue } from '../../db/sweep-marker';
import { CALL_DUE_SHARDS } from '../calls/service';
import type { ConversationMessage } from '../conversations/engine';
import type { ConversationRef } from '../conversations/types';
import type { Segment } from '../conversations/segments';
import type { HandoffAgent } from '../agents/schemas';

/**
 * One ConversationRelay connection's state, in the one table (keys.relayConnection): each message
 * of the connection is its own Lambda invocation, possibly in another container, so what a message
 * needs is read here and what it changes written back. The item stays small whatever the call's
 * length: the conversation itself is filed turn by turn (turns.ts). Messages of one connection may
 * run at once (a prompt's turn still running when the caller interrupts it or speaks again), so
 * every change is guarded by `version` and applied again to a fresh read when another came first.
 */
export interface RelayState {
  connection_id: string;
  organization_id: string;
  call_id: string;
  agent_id: string;
  /** The agent version the call recorded (null: the draft), the one this session runs. */
  agent_version: number | null;
  /** When the connection was admitted (ms): transcript times count from the call's answer (`started_ms`). */
  connected_at_ms: number;
  /** When the call's conversation started (the first session's admission): transcript times and the duration cap count from it. */
  started_ms: number;
  /** Sorts this session's turns after an earlier session's of the same call (turns.ts). */
  session_seq: string;
  /** Twilio's CallSid (from `setup`, else the call's). */
  call_sid?: string;
  /**
   * Twilio runs the session (TELEPHONY_PROVIDER twilio at `$connect`): whatever ends it, Twilio
   * requests the `<Connect action>` with the call's status, so the socket's close alone ends no
   * call (call-ending.ts). Absent: no carrier behind the socket (the local terminal client).
   */
  action_follows?: true;
  /** `setup` came (and matched the token's call). */
  set_up?: boolean;
  /** The call's W3C trace context (the stream token's `traceparent` claim, when tracing was on): each turn's span continues it. */
  trace_parent?: string;
  /** The agent's settings as the call was connected, so no message reads the agent again. */
  agent: RelayAgent;
  /** The filled prompt. */
  system: string;
  conversation: ConversationRef;
  /** Turns started (`prompt` and `dtmf`); the one in flight is `turn` when `turn_done` is less. */
  turn: number;
  turn_done: number;
  /** The last turn written (its seq), the one an interruption with no turn in flight cuts. */
  last_turn?: string;
  /** An interruption while a turn was in flight, settled when that turn is written (its own reply's, or the reply before's). */
  pending_interrupt?: { turn: number; heard: string };
  /** The relay is ending (the agent's `end_call` / `transfer_call`, the duration cap): the `end` went or goes out. */
  ending?: { reason: 'end-call' | 'transfer' | 'max-duration' | 'reconnect'; to?: string; mode?: 'warm'; description?: string; transfer_reason?: string };
  /** The call's segments once its agent handed it off (relay/handoff.ts): the current agent is the last one's; absent: the starting agent. */
  segments?: Segment[];
  /** When the last prompt (or key) claimed its turn (ms): the recovery sweep takes a session quiet for RELAY_SESSION_DUE_MS as over. */
  last_prompt_ms?: number;
  version?: number;
}

/** The agent fields the relay path reads (docs/api.md, "Two voice pipelines"). */
export interface RelayAgent {
  model: string;
  temperature: number;
  knowledge_base: string | null;
  selected_tools: Record<string, unknown>[];
  max_call_duration_ms: number;
  ring_duration_ms: number;
  ivr: { goal: string } | null;
  start_speaker: 'agent' | 'user';
  /** The agents the current agent may hand the call to (absent on sessions from before hand-offs: none). */
  handoff_agents?: HandoffAgent[];
}

/** A day: no call lasts longer (max_call_duration_ms is at most four hours). */
export const RELAY_TTL_SECONDS = 86_400;

/**
 * A session with no prompt for this long is over: API Gateway closes a connection idle for 10
 * minutes, and a reply lasts seconds. Each connection has an entry in the calls-due index, an item
 * of its own (keys.relayConnectionDue), due this long after its admission; `$disconnect` deletes it
 * with the state. When `$disconnect` never comes, the recovery sweep finds it due, and moves it on
 * when a prompt came since (`last_prompt_ms`), else writes what the session's turns said onto the
 * call (recovery.ts). No turn writes the entry: the state's writes stay off the index.
 */
export const RELAY_SESSION_DUE_MS = 20 * 60_000;

/** A connection's due entry's index fields: its shard a hash of the connection id, its sort key `<due>#relay#<connection id>`. */
export function sessionDue(connectionId: string, dueMs: number): { due_at: string; gsi2pk: string; gsi2sk: string } {
  const dueAt = new Date(dueMs).toISOString();
  let hash = 0;
  for (const c of connectionId) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return { due_at: dueAt, gsi2pk: gsi2.callsDue(dueAt.slice(0, 13), hash % CALL_DUE_SHARDS), gsi2sk: gsi2.callDueEntry(dueAt, 'relay', connectionId) };
}

/** A relay connection's due entry (keys.relayConnectionDue). */
export interface RelayDue {
  entity: 'RELAY_DUE';
  connection_id: string;
  organization_id: string;
  call_id: string;
  due_at: string;
}

/**
 * The last state of each connection this process read or wrote, exactly as stored (its `version`),
 * with the model's history as of that version: a turn may start its model request from it while its
 * claim is written, and keeps it only when the claim shows nothing else was written in between.
 */
interface Known {
  state: RelayState;
  history?: ConversationMessage[];
}
const known = new Map<string, Known>();
const MAX_KNOWN = 1000;

function remember(state: RelayState | undefined, history?: ConversationMessage[]): RelayState | undefined {
  if (!state) return state;
  const seen = known.get(state.connection_id);
  if (seen && (seen.state.version ?? 0) > (state.version ?? 0)) return state; // a later write of this process already landed
  known.delete(state.connection_id);
  // A history belongs to one version: a newer state without one drops the old.
  known.set(state.connection_id, { state, history: history ?? (seen && seen.state.version === state.version ? seen.history : undefined) });
  if (known.size > MAX_KNOWN) known.delete(known.keys().next().value!);
  return state;
}

/** The connection's state (and history, when known) as this process last saw it. */
export function knownRelayState(connectionId: string): Known | undefined {
  return known.get(connectionId);
}

/** Records the history that goes with the state of `version` (read or written by this process). */
export function rememberHistory(state: RelayState, history: ConversationMessage[]): void {
  const seen = known.get(state.connection_id);
  if (seen && seen.state.version === state.version) seen.history = history;
}

export const stateItem = (state: RelayState): TransactItem => putNew({ ...keys.relayConnection(state.connection_id), entity: 'RELAY_CONNECTION', ...state, version: 1, ttl: Math.floor(clockMs() / 1000) + RELAY_TTL_SECONDS });

/** Stores a new connection's state with its due entry and what goes with them (its key must be new: a connection id is used once); the recovery sweep's marker lowered to the entry's due time. */
export async function createRelayState(state: RelayState, also: TransactItem[] = [], history?: ConversationMessage[]): Promise<void> {
  const due = sessionDue(state.connection_id, clockMs() + RELAY_SESSION_DUE_MS);
  const entry: RelayDue = { entity: 'RELAY_DUE', connection_id: state.connection_id, organization_id: state.organization_id, call_id: state.call_id, due_at: due.due_at };
  await transact([stateItem(state), putNew({ ...keys.relayConnectionDue(state.connection_id), ...entry, ...due, ttl: Math.floor(clockMs() / 1000) + RELAY_TTL_SECONDS }), ...also]);
  await noteDue('call-recovery', due.due_at);
  remember({ ...state, version: 1 }, history);
}

export async function readRelayState(connectionId: string, consistent = true): Promise<RelayState | undefined> {
  return remember(await getItem<RelayState>(keys.relayConnection(connectionId), consistent));
}

/** A change of the state: fields set and removed, and the items written with it (turns, the call). */
export interface RelayChange {
  set: Partial<RelayState>;
  remove?: (keyof RelayState)[];
  also?: TransactItem[];
}

/** Another write came first (a failed guard, or DynamoDB's TransactionConflict on an overlapping transaction): read again and retry. */
const raced = (err: unknown) => err instanceof ConditionFailed || isTransactionConflict(err);

/**
 * Applies `change` to the state and writes what it changed (with `also`, the items that go with
 * it, in one transaction), guarded by the version read; another write first means reading again
 * and applying `change` to that. Returns the state written (undefined when the connection is gone).
 */
export async function changeRelayState(
  connectionId: string,
  change: (s: RelayState) => RelayChange | undefined | Promise<RelayChange | undefined>,
  read?: RelayState,
): Promise<RelayState | undefined> {
  let state = read ?? (await readRelayState(connectionId));
  for (let attempt = 0; state && attempt < 20; attempt++) {
    const c = await change(state);
    if (!c) return state;
    try {
      await transact([updateExisting(keys.relayConnection(connectionId), c.set as Record<string, unknown>, { remove: c.remove as string[] | undefined, condition: '#v = :read', values: { ':read': state.version ?? 0 } }), ...(c.also ?? [])]);
      const next = { ...state, ...c.set, version: (state.version ?? 0) + 1 };
      for (const r of c.remove ?? []) delete next[r];
      return remember(next);
    } catch (err) {
      if (!raced(err)) throw err;
      state = await readRelayState(connectionId);
    }
  }
  if (state) throw new Error(`The relay state of connection ${connectionId} kept changing under 20 writes`);
  return undefined;
}

/**
 * Sets fields no turn reads (`setup`'s): no guard and no new `version`, so a model request a
 * prompt started from the state before it is still the current one.
 */
export async function noteRelayState(connectionId: string, set: Pick<RelayState, 'set_up' | 'call_sid'>): Promise<void> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const parts = Object.entries(set).map(([k, v], i) => {
    names[`#n${i}`] = k;
    values[`:n${i}`] = v;
    return `#n${i} = :n${i}`;
  });
  if (!parts.length) return;
  try {
    await db().send(new UpdateCommand({ TableName: tableName(), Key: keys.relayConnection(connectionId), UpdateExpression: `SET ${parts.join(', ')}`, ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeNames: names, ExpressionAttributeValues: values }));
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  }
}

/**
 * Claims the next turn and reads the state in one request (an UpdateItem `ADD turn 1` answering
 * the item as written): the claim is written before the model is asked, so the reply's first token
 * never waits for it, and a prompt costs one round trip to the table before the model. `version`
 * moves too, so a guarded write made from an earlier read applies its change again.
 */
export async function claimTurn(connectionId: string): Promise<RelayState | undefined> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.relayConnection(connectionId),
        // The session is alive (the recovery sweep reads when it last heard a prompt).
        UpdateExpression: 'ADD #t :one, #v :one SET #lp = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#t': 'turn', '#v': 'version', '#lp': 'last_prompt_ms' },
        ExpressionAttributeValues: { ':one': 1, ':now': clockMs() },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return remember(out.Attributes as RelayState | undefined);
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return undefined; // the connection is gone
    throw err;
  }
}

/** What a speaking turn checks (a projected read, eventually consistent unless asked): whether it was interrupted or a newer prompt came; a waiting turn reads whether the one before it was written. */
export async function turnSignals(connectionId: string, consistent = false): Promise<Pick<RelayState, 'turn' | 'turn_done' | 'pending_interrupt'> | undefined> {
  const read = await db().send(new GetCommand({ TableName: tableName(), Key: keys.relayConnection(connectionId), ProjectionExpression: '#t, turn_done, pending_interrupt', ExpressionAttributeNames: { '#t': 'turn' }, ...(consistent ? { ConsistentRead: true } : {}) }));
  return read.Item as Pick<RelayState, 'turn' | 'turn_done' | 'pending_interrupt'> | undefined;
}

/** Removes the connection's state and its due entry. */
export async function deleteRelayState(connectionId: string): Promise<void> {
  known.delete(connectionId);
  await deleteKeys([keys.relayConnection(connectionId), keys.relayConnectionDue(connectionId)]);
}
