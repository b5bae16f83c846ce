/**
 * The call item's conversation within its size (shared/domain/relay/turns.ts, capConversation):
 * a relay call's transcript and tool calls are written whole from its turns when the session ends,
 * so a long enough call could pass DynamoDB's 400 KB item limit and its final write fail. Tool
 * results give way first, the oldest first; a transcript too long by itself keeps every line, its
 * longest texts cut. Nothing is ever refused.
 */
import type { CallToolCalls, Transcript } from '../../../shared/domain/calls/schemas';
import { CALL_CONVERSATION_BYTES, capConversation, RESULT_NOT_KEPT } from '../../../shared/domain/relay/turns';

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
const lines = (n: number, text: (i: number) => string): Transcript => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'agent' : 'user', text: text(i), time_sec: i }));
const calls = (n: number): CallToolCalls => Array.from({ length: n }, (_, i) => ({ name: 'stock_level', arguments: { sku: `sku-${i}` }, result: 'r'.repeat(240), time_sec: i }));

it('leaves a conversation within the limit as it is', () => {
  // Prepare
  const transcript = lines(601, (i) => `Line ${i} of a two-hour call.`);
  const toolCalls = calls(300);
  // Act
  const capped = capConversation(transcript, toolCalls);
  // Assess
  expect(capped).toEqual({ transcript, toolCalls });
});

it('drops tool results first, the oldest first, until the conversation fits; every call keeps its name, arguments and time', () => {
  // Prepare
  const transcript = lines(100, () => 'x'.repeat(500)); // ~56 KB
  const toolCalls = calls(1200); // ~380 KB of tool calls
  // Act
  const capped = capConversation(transcript, toolCalls);
  // Assess
  expect(bytes(capped.transcript) + bytes(capped.toolCalls)).toBeLessThanOrEqual(CALL_CONVERSATION_BYTES);
  expect(capped.transcript).toEqual(transcript);
  expect(capped.toolCalls).toHaveLength(1200);
  expect(capped.toolCalls[0]).toEqual({ ...toolCalls[0], result: RESULT_NOT_KEPT });
  expect(capped.toolCalls.at(-1)).toEqual(toolCalls.at(-1));
  expect(capped.toolCalls.map((c) => [c.name, c.arguments, c.time_sec])).toEqual(toolCalls.map((c) => [c.name, c.arguments, c.time_sec]));
});

it('keeps every line of a transcript too long by itself, cutting its longest texts to fit', () => {
  // Prepare: a few short lines and many very long ones (~600 KB).
  const transcript = lines(300, (i) => (i % 10 === 0 ? `Short ${i}.` : 'w'.repeat(2000)));
  const toolCalls = calls(10);
  // Act
  const capped = capConversation(transcript, toolCalls);
  // Assess
  expect(bytes(capped.transcript) + bytes(capped.toolCalls)).toBeLessThanOrEqual(CALL_CONVERSATION_BYTES);
  expect(capped.transcript).toHaveLength(300);
  expect(capped.transcript[0]).toEqual(transcript[0]);
  expect(capped.transcript[1]!.text).toMatch(/^w+…$/);
  expect(capped.transcript[1]!.text.length).toBeLessThan(2000);
  expect(capped.transcript.map((l) => [l.role, l.time_sec])).toEqual(transcript.map((l) => [l.role, l.time_sec]));
  expect(capped.toolCalls.every((c) => c.result === RESULT_NOT_KEPT)).toBe(true);
});
