import { clockMs } from '../../clock';
import { keys } from '../../db/keys';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from '../../db/client';
import { ConditionFailed, deleteKeys, getItem, putNew, transact, updateExisting } from '../../db/store';
import type { ConversationMessage } from '../conversations/engine';
import type { ConversationRef } from '../conversations/types';
import type { CallToolCalls, Transcript } from '../calls/schemas';

/**
 * One ConversationRelay connection's state, in the one table (keys.relayConnection): each message
 * of the connection is its own Lambda invocation, so what a message needs is read here and what it
 * changes written back. Messages of one connection may run at once (a prompt's turn still running
 * when the caller interrupts it), so every write is a change applied to the state as read, guarded
 * by `version` and applied again to a fresh read when another write came first.
 */
export interface RelayState {
  connection_id: string;
  organization_id: string;
  call_id: string;
  agent_id: string;
  /** When the connection was admitted (ms): transcript times count from it. */
  connected_at_ms: number;
  /** Twilio's CallSid (from `setup`, else the call's). */
  call_sid?: string;
  /** `setup` came (and matched the token's call). */
  set_up?: boolean;
  /** The agent's settings as the call was connected, so no message reads the agent again. */
  agent: RelayAgent;
  /** The filled prompt. */
  system: string;
  conversation: ConversationRef;
  /** Engine history (the model's view: user, agent, tool calls and results). */
  messages: ConversationMessage[];
  transcript: Transcript;
  tool_calls: CallToolCalls;
  /** Turns started (`prompt` and `dtmf`); the one in flight is `turn` when `turn_done` is less. */
  turn: number;
  turn_done: number;
  /** An interruption while a turn was in flight, settled when that turn is written (its own reply's, or the reply before's). */
  pending_interrupt?: { turn: number; heard: string };
  /** The relay is ending (the agent's `end_call` / `transfer_call`, the maximum duration). */
  ending?: { reason?: 'transferred'; to?: string };
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
}

/** A day: no call lasts longer (max_call_duration_ms is at most four hours). */
const TTL_SECONDS = 86_400;

/**
 * The last state of each connection this process read or wrote, exactly as stored (its `version`):
 * a turn may start its model request from it while its claim is written, and keeps it only when
 * the claim shows nothing else was written in between (shared/domain/relay/session.ts).
 */
const known = new Map<string, RelayState>();
const MAX_KNOWN = 1000;

function remember(state: RelayState | undefined): RelayState | undefined {
  if (!state) return state;
  const seen = known.get(state.connection_id);
  if (seen && (seen.version ?? 0) > (state.version ?? 0)) return state; // a later write of this process already landed
  known.delete(state.connection_id);
  known.set(state.connection_id, state);
  if (known.size > MAX_KNOWN) known.delete(known.keys().next().value!);
  return state;
}

/** The connection's state as this process last saw it (undefined: never, or gone). */
export function knownRelayState(connectionId: string): RelayState | undefined {
  return known.get(connectionId);
}

/** Stores a new connection's state (its key must be new: a connection id is used once). */
export async function createRelayState(state: RelayState): Promise<void> {
  await transact([putNew({ ...keys.relayConnection(state.connection_id), entity: 'RELAY_CONNECTION', ...state, version: 1, ttl: Math.floor(clockMs() / 1000) + TTL_SECONDS })]);
  remember({ ...state, version: 1 });
}

export async function readRelayState(connectionId: string): Promise<RelayState | undefined> {
  return remember(await getItem<RelayState>(keys.relayConnection(connectionId)));
}

/**
 * Applies `change` to the state and writes what it changed, guarded by the version read; another
 * write first means reading again and applying `change` to that. Returns the state written (or
 * undefined when the connection is gone).
 */
export async function changeRelayState(connectionId: string, change: (s: RelayState) => Partial<RelayState>, read?: RelayState): Promise<RelayState | undefined> {
  let state = read ?? (await readRelayState(connectionId));
  for (let attempt = 0; state && attempt < 20; attempt++) {
    const set = change(state);
    try {
      await transact([updateExisting(keys.relayConnection(connectionId), set as Record<string, unknown>, { condition: '#v = :read', values: { ':read': state.version ?? 0 } })]);
      return remember({ ...state, ...set, version: (state.version ?? 0) + 1 });
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      state = await readRelayState(connectionId);
    }
  }
  if (state) throw new Error(`The relay state of connection ${connectionId} kept changing under 20 writes`);
  return undefined;
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
        UpdateExpression: 'ADD #t :one, #v :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#t': 'turn', '#v': 'version' },
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return remember(out.Attributes as RelayState | undefined);
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return undefined; // the connection is gone
    throw err;
  }
}

/** Whether an interruption is waiting for `turn` (a projected read: what a streaming turn polls). */
export async function interruptOf(connectionId: string, turn: number): Promise<string | undefined> {
  const read = await db().send(new GetCommand({ TableName: tableName(), Key: keys.relayConnection(connectionId), ConsistentRead: true, ProjectionExpression: 'pending_interrupt' }));
  const out = read.Item as Pick<RelayState, 'pending_interrupt'> | undefined;
  return out?.pending_interrupt && out.pending_interrupt.turn === turn ? out.pending_interrupt.heard : undefined;
}

export async function deleteRelayState(connectionId: string): Promise<void> {
  known.delete(connectionId);
  await deleteKeys([keys.relayConnection(connectionId)]);
}
