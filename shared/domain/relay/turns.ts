import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { clockMs } from '../../clock';
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
 * no call length, prompt size or tool result reaches DynamoDB's 400 KB item limit, and a turn
 * writes the same few small items at the first turn and the three hundredth: nothing of the call
 * item is rewritten per turn (its write would be charged for the whole growing transcript). The
 * call gets its transcript and tool calls whole, from the turns (collectConversation), when the
 * session ends (`$disconnect`, the `<Connect action>`), or, when `$disconnect` never comes, from
 * the recovery sweep (recovery.ts); the turn items are the record meanwhile. The call keeps tool
 * results cut to CALL_TOOL_RESULT_BYTES (the turn items keep them whole) and its conversation
 * within CALL_CONVERSATION_BYTES (capConversation).
 */
export interface RelayTurn {
  call_id: string;
  seq: string;
  turn: number;
  messages: ConversationMessage[];
  lines: Transcript;
  tool_calls: CallToolCalls;
}

/** Turns read for the model's history (the engine fits what it sends to the model's context). */
export const HISTORY_TURNS = 60;
/** Messages a process keeps of a connection's history between turns (what HISTORY_TURNS turns hold, about). */
export const HISTORY_MESSAGES = 400;
/** A tool result as the call keeps it (the turn keeps it whole). */
export const CALL_TOOL_RESULT_BYTES = 256;
/**
 * The most the call item's transcript and tool calls may hold together (JSON bytes): with the
 * call's other fields and its analysis, well inside DynamoDB's 400 KB item limit.
 */
export const CALL_CONVERSATION_BYTES = 320_000;
/** What replaces a tool result the call could not keep (capConversation). */
export const RESULT_NOT_KEPT = '[result not kept: the call\'s conversation reached its size limit]';

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
export function turnWrite(state: Pick<RelayState, 'call_id'>, turn: Omit<RelayTurn, 'call_id'>): TransactItem {
  const item: RelayTurn = { ...turn, call_id: state.call_id };
  return putNew({ ...keys.relayTurn(state.call_id, turn.seq), entity: 'RELAY_TURN', ...item, ttl: Math.floor(clockMs() / 1000) + RELAY_TTL_SECONDS });
}

/**
 * The admission time (ms) of the call's latest session that filed a turn, or undefined when none
 * did (a first session; else a reconnect's, whose greeting was the first session's). One Query,
 * newest first, one key.
 */
export async function latestSessionMs(callId: string): Promise<number | undefined> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': keys.relayTurns(callId), ':sk': keys.relayTurnPrefix },
      ProjectionExpression: 'sk',
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const sk = out.Items?.[0]?.sk as string | undefined;
  return sk === undefined ? undefined : Number(sk.slice(keys.relayTurnPrefix.length, keys.relayTurnPrefix.length + 15));
}

/** Every turn of the call, oldest first: its whole transcript and its tool calls (results cut as the call keeps them, the whole within CALL_CONVERSATION_BYTES). */
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
  return capConversation(transcript, toolCalls);
}

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/**
 * The conversation as the call item can hold it, whatever the call's length, so the final write
 * never fails on the item limit: when the transcript and tool calls (results already cut to
 * CALL_TOOL_RESULT_BYTES) pass `max` bytes, tool results give way first, the oldest first (each
 * becomes RESULT_NOT_KEPT: the call keeps every tool call's name, arguments and time); a transcript
 * that alone still passes it keeps every line, its longest texts cut (ending with `…`) to the
 * longest length that fits. The turn items keep everything whole for their day.
 */
export function capConversation(transcript: Transcript, toolCalls: CallToolCalls, max = CALL_CONVERSATION_BYTES): { transcript: Transcript; toolCalls: CallToolCalls } {
  let size = bytes(transcript) + bytes(toolCalls);
  if (size <= max) return { transcript, toolCalls };
  const calls = [...toolCalls];
  for (let i = 0; i < calls.length && size > max; i++) {
    const before = bytes(calls[i]);
    calls[i] = { ...calls[i]!, result: RESULT_NOT_KEPT as never };
    size -= before - bytes(calls[i]);
  }
  if (size <= max) return { transcript, toolCalls: calls };
  // The transcript itself: the longest line length that fits, found by halving.
  const cut = (limit: number): Transcript => transcript.map((l) => (l.text.length <= limit ? l : { ...l, text: `${l.text.slice(0, Math.max(0, limit - 1))}…` }));
  const room = max - bytes(calls);
  let lo = 0;
  let hi = Math.max(0, ...transcript.map((l) => l.text.length));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(cut(mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  return { transcript: cut(lo), toolCalls: calls };
}

/** Rewrites a written turn cut by an interruption: its item's messages and lines (in the state's transaction); the call gets the lines when the session ends. */
export function turnRewrite(state: Pick<RelayState, 'call_id'>, turn: Pick<RelayTurn, 'seq'>, cut: Pick<RelayTurn, 'messages' | 'lines'>): TransactItem {
  return {
    Update: {
      TableName: tableName(),
      Key: keys.relayTurn(state.call_id, turn.seq),
      UpdateExpression: 'SET #m = :m, #l = :l',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#m': 'messages', '#l': 'lines' },
      ExpressionAttributeValues: { ':m': cut.messages, ':l': cut.lines },
    },
  };
}
