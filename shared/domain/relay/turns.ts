import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { clockMs, clockNow } from '../../clock';
import { db, tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { getItem, putNew, type TransactItem } from '../../db/store';
import type { CallToolCalls, Transcript } from '../calls/schemas';
import type { ConversationMessage } from '../conversations/engine';
import { truncatedText } from '../conversations/tools/results';
import { RELAY_TTL_SECONDS, type RelayState } from './state';

/**
 * A relay call's conversation, filed turn by turn as chats file their messages: each turn is an
 * item of its own (keys.relayTurn: the model's messages, its transcript lines, its tool calls), so
 * no call length, prompt size or tool result reaches DynamoDB's 400 KB item limit and a turn's
 * write costs the same at the first turn and the three hundredth. The same transaction appends the
 * turn's lines to the call (as turns happen, so a lost `$disconnect` loses nothing said): the call
 * keeps the transcript and the tool calls with results cut to CALL_TOOL_RESULT_BYTES (the turn
 * items keep them whole).
 */
export interface RelayTurn {
  call_id: string;
  seq: string;
  turn: number;
  messages: ConversationMessage[];
  lines: Transcript;
  tool_calls: CallToolCalls;
  /** Where this turn's lines start on the call's transcript. */
  call_index: number;
}

/** Turns read for the model's history (the engine fits what it sends to the model's context). */
export const HISTORY_TURNS = 60;
/** Messages a process keeps of a connection's history between turns (what HISTORY_TURNS turns hold, about). */
export const HISTORY_MESSAGES = 400;
/** A tool result as the call keeps it (the turn keeps it whole). */
export const CALL_TOOL_RESULT_BYTES = 256;

/** A turn's sort key part: the session, then the turn number, so turns sort in order across reconnects. */
export const turnSeq = (state: Pick<RelayState, 'session_seq'>, turn: number) => `${state.session_seq}#${String(turn).padStart(6, '0')}`;

/** A session's sort prefix: its admission time (ms, fixed width), so a reconnect's turns sort after. */
export const sessionSeq = (atMs: number, connectionId: string) => `${String(atMs).padStart(15, '0')}#${connectionId}`;

/** The model's history: the messages of the call's latest turns, oldest first (one Query, newest first, bounded). */
export async function readHistory(callId: string): Promise<{ messages: ConversationMessage[]; last?: RelayTurn }> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': keys.relayTurns(callId), ':sk': keys.relayTurnPrefix },
      ScanIndexForward: false,
      Limit: HISTORY_TURNS,
      ConsistentRead: true,
    }),
  );
  const turns = ((out.Items ?? []) as RelayTurn[]).reverse();
  return { messages: turns.flatMap((t) => t.messages), last: turns.at(-1) };
}

export async function readTurn(callId: string, seq: string): Promise<RelayTurn | undefined> {
  return getItem<RelayTurn>(keys.relayTurn(callId, seq));
}

const callToolCall = (t: CallToolCalls[number]): CallToolCalls[number] => {
  const text = JSON.stringify(t.result ?? null);
  return Buffer.byteLength(text, 'utf8') <= CALL_TOOL_RESULT_BYTES ? t : { ...t, result: truncatedText(text, CALL_TOOL_RESULT_BYTES) };
};

/** The new turn's item (for one transaction with the state's change). */
export function turnWrite(state: RelayState, turn: Omit<RelayTurn, 'call_id' | 'call_index'>): TransactItem {
  const item: RelayTurn = { ...turn, call_id: state.call_id, call_index: state.call_lines };
  return putNew({ ...keys.relayTurn(state.call_id, turn.seq), entity: 'RELAY_TURN', ...item, ttl: Math.floor(clockMs() / 1000) + RELAY_TTL_SECONDS });
}

/**
 * Appends a written turn's lines to the call's transcript (list_append: no read, no rewrite of what
 * is there), after the turn's own transaction: one UpdateItem, charged once (a transaction would be
 * charged twice for the whole call item), and marks the conversation recorded so the recovery sweep
 * never takes the call for one whose voice was lost. The turn items stay the record: the session's
 * end writes the call's transcript and tool calls whole from them (collectConversation). No
 * `version` of the call moves: no rule of the call reads these fields.
 */
export async function appendLines(state: Pick<RelayState, 'organization_id' | 'call_id'>, lines: Transcript): Promise<void> {
  if (!lines.length) return;
  const now = clockNow().toISOString();
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.call(state.organization_id, state.call_id),
      UpdateExpression: 'SET #tr = list_append(if_not_exists(#tr, :empty), :lines), #rec = :now, #up = :now',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#tr': 'transcript', '#rec': 'voice_recorded_at', '#up': 'updated_at' },
      ExpressionAttributeValues: { ':empty': [], ':lines': lines, ':now': now },
    }),
  );
}

/** Every turn of the call, oldest first: its whole transcript and its tool calls (results cut as the call keeps them). */
export async function collectConversation(callId: string): Promise<{ transcript: Transcript; toolCalls: CallToolCalls }> {
  const transcript: Transcript = [];
  const toolCalls: CallToolCalls = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
        ExpressionAttributeValues: { ':pk': keys.relayTurns(callId), ':sk': keys.relayTurnPrefix },
        ProjectionExpression: '#l, tool_calls',
        ExpressionAttributeNames: { '#l': 'lines' },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const t of (out.Items ?? []) as Pick<RelayTurn, 'lines' | 'tool_calls'>[]) {
      transcript.push(...t.lines);
      toolCalls.push(...(t.tool_calls ?? []).map(callToolCall));
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return { transcript, toolCalls };
}

/**
 * Rewrites a written turn cut by an interruption: its item (messages and lines; in the state's
 * transaction) and, after, its lines on the call (an agent line becomes the words heard, marked
 * interrupted; nothing heard leaves it empty in its place, so the lines after keep theirs). The
 * call's lines are a second request: DynamoDB takes one operation per item in a transaction, and
 * the turn that settles a pending interruption appends to the call in its own.
 */
export function turnRewrite(state: RelayState, turn: RelayTurn, cut: Pick<RelayTurn, 'messages' | 'lines'>): { item: TransactItem; callLines: () => Promise<void> } {
  const item: TransactItem = {
    Update: {
      TableName: tableName(),
      Key: keys.relayTurn(state.call_id, turn.seq),
      UpdateExpression: 'SET #m = :m, #l = :l',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#m': 'messages', '#l': 'lines' },
      ExpressionAttributeValues: { ':m': cut.messages, ':l': cut.lines },
    },
  };
  const sets: string[] = [];
  const values: Record<string, unknown> = {};
  turn.lines.forEach((line, i) => {
    const now = cut.lines[i] ?? { ...line, text: '', interrupted: true };
    if (now.text === line.text && !!now.interrupted === !!line.interrupted) return;
    sets.push(`#tr[${turn.call_index + i}] = :l${i}`);
    values[`:l${i}`] = now;
  });
  const callLines = async () => {
    if (!sets.length) return;
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.call(state.organization_id, state.call_id),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#tr': 'transcript' },
        ExpressionAttributeValues: values,
      }),
    );
  };
  return { item, callLines };
}
