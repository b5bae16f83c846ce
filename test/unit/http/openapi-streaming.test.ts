/**
 * The OpenAPI document describes the server-sent events of the operations that stream: their 200
 * has a `text/event-stream` content beside the JSON one, naming the events (docs/api.md,
 * "Streaming a turn", "The agent as an OpenAI model"); nothing else does.
 */
import { operations } from '../../../shared/http/registry';
import { buildOpenApi } from '../../../shared/http/openapi';

type Json = Record<string, any>;
const doc = buildOpenApi(operations, '0.0.0-test') as Json;
const op = (method: string, path: string): Json => doc.paths[path][method];

it.each([
  ['post', '/api/v1/chats/{id}/messages'],
  ['post', '/api/v1/chats/{id}/tool-results'],
  ['post', '/api/v1/widget/{id}/chats/{chat_id}/messages'],
  ['post', '/api/v1/widget/{id}/chats/{chat_id}/tool-results'],
])('%s %s answers JSON or, asked with Accept: text/event-stream, the turn\'s events', (method, path) => {
  const ok = op(method, path).responses[200];
  expect(Object.keys(ok.content)).toEqual(['application/json', 'text/event-stream']);
  const events = ok.content['text/event-stream'];
  expect(events.schema.type).toBe('string');
  for (const name of ['message.delta', 'tool_call', 'tool_result', 'message.completed', 'turn.completed', 'error']) expect(events.schema.description).toContain(`\`${name}\``);
  expect(events.example).toMatch(/^event: message\.delta\ndata: \{.*\}\n\n/);
  expect(events.example).toMatch(/event: turn\.completed\ndata: .*\n\n$/);
  expect(ok.description).toMatch(/Accept: text\/event-stream/);
  expect(op(method, path).description).toContain('`turn.completed`');
});

it('describes the OpenAI-compatible stream as chat.completion.chunk data lines ending [DONE]', () => {
  const ok = op('post', '/api/v1/openai/v1/chat/completions').responses[200];
  expect(Object.keys(ok.content)).toEqual(['application/json', 'text/event-stream']);
  expect(ok.content['text/event-stream'].schema.description).toMatch(/chat\.completion\.chunk.*data: \[DONE\]/);
  expect(ok.content['text/event-stream'].example).toMatch(/data: \[DONE\]\n\n$/);
});

it('gives no other operation (preflights included) an event stream', () => {
  const streaming = Object.entries(doc.paths as Json).flatMap(([path, methods]) =>
    Object.entries(methods as Json).filter(([, o]) => o.responses?.[200]?.content?.['text/event-stream']).map(([m]) => `${m} ${path}`),
  );
  expect(streaming.sort()).toEqual([
    'post /api/v1/chats/{id}/messages',
    'post /api/v1/chats/{id}/tool-results',
    'post /api/v1/openai/v1/chat/completions',
    'post /api/v1/widget/{id}/chats/{chat_id}/messages',
    'post /api/v1/widget/{id}/chats/{chat_id}/tool-results',
  ]);
});
