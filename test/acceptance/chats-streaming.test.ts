/**
 * Black-box: chat turns as server-sent events over real HTTP (Accept: text/event-stream), the
 * platform asking a stand-in OpenAI-compatible model with `stream: true`. The first
 * `message.delta` reaches the client while the model still holds the rest of its reply; tool
 * calls assembled from their streamed fragments run once and show as `tool_call` / `tool_result`;
 * refusals before the turn are plain JSON envelopes; a model that fails mid-stream ends the
 * stream with an `error` event and the turn keeps what the turn's rules keep.
 */
import { createWeatherTool, startChatModelSetup, type ChatModelSetup } from '../support/chat-model-setup';
import type { OpenAiStandIn } from '../support/openai-stand-in';
import { allSse, readSse, type SseEvent } from '../support/sse';
import { ApiError, createClient, type ChatStreamEvent } from '../../client/src/index';
import type { TestPlatform } from '../support/platform';

let setup: ChatModelSetup;
let model: OpenAiStandIn;
let local: TestPlatform;
let toolUrl = '';
/** The bodies the weather tool's receiver got. */
let toolCalls: any[] = [];

beforeAll(async () => {
  ({ model, local, toolUrl, toolBodies: toolCalls } = setup = await startChatModelSetup());
}, 60_000);
afterAll(() => setup?.stop());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${local.url}${path}`, { method: 'POST', headers: { 'x-api-key': local.key, 'content-type': 'application/json', accept: 'text/event-stream', ...headers }, body: JSON.stringify(body) });

async function newChat(selected_tools: unknown[] = []): Promise<string> {
  const agent = await local.api('POST', '/api/v1/agents', { body: { name: 'Streamer', model: 'gpt-test', prompt: 'Be brief.', begin_message: '', selected_tools } });
  expect(agent.status).toBe(200);
  const chat = await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } });
  return chat.body.data.id as string;
}

let weatherToolId = '';
async function weatherTool(): Promise<string> {
  return (weatherToolId ||= await createWeatherTool(local, toolUrl));
}

it('streams the reply: the first delta arrives while the model still holds the rest', async () => {
  const chatId = await newChat();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  model.reset();
  model.script({ text: 'Hello there, how can I help you today?', holdUntil: held, usage: { prompt_tokens: 40, completion_tokens: 9 } });

  const response = await post(`/api/v1/chats/${chatId}/messages`, { content: 'Hi' });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events = readSse(response);
  // Were the platform to buffer, this would wait for the model's end, which waits for this delta.
  const first = (await events.next()).value as SseEvent;
  expect(first).toEqual({ event: 'message.delta', data: { message_id: expect.any(String), delta: 'Hello ' } });
  release();
  const rest: SseEvent[] = [];
  for await (const e of events) rest.push(e);

  const names = rest.map((e) => e.event);
  expect(names.slice(-2)).toEqual(['message.completed', 'turn.completed']);
  expect(names.slice(0, -2).every((n) => n === 'message.delta')).toBe(true);
  const text = [first, ...rest].filter((e) => e.event === 'message.delta').map((e) => e.data.delta).join('');
  expect(text).toBe('Hello there, how can I help you today?');
  const completed = rest.at(-2)!.data;
  expect(completed).toMatchObject({ id: first.data.message_id, role: 'agent', content: text });
  const turn = rest.at(-1)!.data;
  expect(turn.chat).toMatchObject({ id: chatId, status: 'active' });
  expect(turn.messages.map((m: any) => m.role)).toEqual(['user', 'agent']);
  expect(turn.messages[1]).toEqual(completed);

  // What was streamed is what is stored, under the same id.
  const chat = (await local.api('GET', `/api/v1/chats/${chatId}`)).body.data;
  expect(chat.messages.at(-1)).toEqual(completed);
  expect(chat.usage).toMatchObject({ llm_requests: 1, prompt_tokens: 40, completion_tokens: 9 });
  expect(model.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
});

it('assembles streamed tool-call fragments, runs the tool once and tells each step', async () => {
  const chatId = await newChat([{ tool_id: await weatherTool() }]);
  const before = toolCalls.length;
  model.script({ toolCalls: [{ id: 'call_s1', name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'It is 21 °C in Oslo.' });
  const events = await allSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Weather in Oslo?' }));
  expect(events.map((e) => e.event).filter((n, i, all) => n !== 'message.delta' || all[i - 1] !== 'message.delta')).toEqual(['tool_call', 'tool_result', 'message.delta', 'message.completed', 'turn.completed']);
  expect(events[0]!.data).toMatchObject({ role: 'tool_call', tool_call_id: 'call_s1', name: 'get_weather', arguments: { city: 'Oslo' } });
  expect(events[1]!.data).toMatchObject({ role: 'tool_result', tool_call_id: 'call_s1', result: { temperature_c: 21 } });
  expect(toolCalls.length - before).toBe(1);
  expect(toolCalls.at(-1)).toMatchObject({ tool_call_id: 'call_s1', arguments: { city: 'Oslo' } });
  const turn = events.at(-1)!.data;
  expect(turn.messages.map((m: any) => m.role)).toEqual(['user', 'tool_call', 'tool_result', 'agent']);
  expect(turn.messages.slice(1, 3)).toEqual([events[0]!.data, events[1]!.data]);
});

it('tells each tool_result the moment its tool answers, while a slower tool of the same step still runs', async () => {
  // A second receiver that holds its answer until the test lets it go.
  const { createServer } = await import('node:http');
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const slow = createServer((req, res) => {
    req.resume();
    void held.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}'));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  try {
    const slowTool = await local.api('POST', '/api/v1/tools', {
      body: { name: 'Slow', type: 'webhook', url: `http://127.0.0.1:${(slow.address() as { port: number }).port}/slow`, definition: { name: 'slow_lookup', description: 'A slow lookup', parameters: { type: 'object', properties: {} } } },
    });
    const chatId = await newChat([{ tool_id: slowTool.body.data.id }, { tool_id: await weatherTool() }]);
    model.script(
      { toolCalls: [{ id: 'call_slow', name: 'slow_lookup', arguments: {} }, { id: 'call_fast', name: 'get_weather', arguments: { city: 'Oslo' } }] },
      { text: 'Both answered.' },
    );
    const events = readSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Both, please' }));
    const seen: SseEvent[] = [];
    for (;;) {
      const e = (await events.next()).value as SseEvent;
      seen.push(e);
      if (e.event === 'tool_result') break;
    }
    // Were results told only once every tool of the step answered, this would wait for the release.
    expect(seen.map((e) => e.event)).toEqual(['tool_call', 'tool_call', 'tool_result']);
    expect(seen[2]!.data).toMatchObject({ tool_call_id: 'call_fast', result: { temperature_c: 21 } });
    release();
    const rest: SseEvent[] = [];
    for await (const e of events) rest.push(e);
    expect(rest[0]).toMatchObject({ event: 'tool_result', data: { tool_call_id: 'call_slow', result: { done: true } } });
    // Stored in call order, as told (same ids).
    const turn = rest.at(-1)!.data;
    expect(turn.messages.map((m: any) => [m.role, m.tool_call_id ?? null])).toEqual([
      ['user', null], ['tool_call', 'call_slow'], ['tool_call', 'call_fast'], ['tool_result', 'call_slow'], ['tool_result', 'call_fast'], ['agent', null],
    ]);
    expect(turn.messages[4]).toEqual(seen[2]!.data);
    expect(turn.messages[3]).toEqual(rest[0]!.data);
  } finally {
    release();
    await new Promise<void>((r) => slow.close(() => r()));
  }
});

it('streams a function tool call, then the caller\'s tool results as a streamed turn', async () => {
  const fn = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Lookup', type: 'function', definition: { name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } } },
  });
  const chatId = await newChat([{ tool_id: fn.body.data.id }]);
  model.script({ toolCalls: [{ id: 'call_f1', name: 'lookup_order', arguments: '{"id":"A-17"}' }] });
  const first = await allSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Where is order A-17?' }));
  expect(first.map((e) => e.event)).toEqual(['tool_call', 'turn.completed']);
  expect(first[1]!.data.chat).toMatchObject({ status: 'requires_action', pending_tool_calls: [{ id: 'call_f1', name: 'lookup_order', arguments: { id: 'A-17' } }] });

  model.script({ text: 'Order A-17 ships tomorrow.' });
  const second = await allSse(await post(`/api/v1/chats/${chatId}/tool-results`, { results: [{ tool_call_id: 'call_f1', output: { ships: 'tomorrow' } }] }));
  expect(second.at(-1)!.event).toBe('turn.completed');
  expect(second.at(-1)!.data.chat.status).toBe('active');
  expect(second.filter((e) => e.event === 'message.delta').map((e) => e.data.delta).join('')).toBe('Order A-17 ships tomorrow.');
});

it('refuses before the turn with plain JSON envelopes, never a stream', async () => {
  const chatId = await newChat();
  const missing = await post('/api/v1/chats/00000000-0000-7000-8000-000000000000/messages', { content: 'Hi' });
  expect(missing.status).toBe(404);
  expect(missing.headers.get('content-type')).toMatch(/application\/json/);
  expect(((await missing.json()) as any).error.code).toBe('NOT_FOUND');

  const invalid = await post(`/api/v1/chats/${chatId}/messages`, { content: '' });
  expect(invalid.status).toBe(400);
  expect(((await invalid.json()) as any).error.details.fields[0].path).toBe('content');

  const noKey = await post(`/api/v1/chats/${chatId}/messages`, { content: 'Hi' }, { 'x-api-key': '' });
  expect(noKey.status).toBe(401);

  await local.api('POST', `/api/v1/chats/${chatId}/end`);
  const ended = await post(`/api/v1/chats/${chatId}/messages`, { content: 'Hi' });
  expect(ended.status).toBe(409);
  expect(ended.headers.get('content-type')).toMatch(/application\/json/);
  expect(((await ended.json()) as any).error.code).toBe('CONFLICT');
});

it('ends with an error event when the model fails mid-stream; nothing is kept, the chat stays usable', async () => {
  local.expectFailures(/model did not answer|request failed|failed after its stream/);
  const chatId = await newChat();
  model.script({ text: 'This reply will be cut short', cutAfter: 2 });
  const events = await allSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Tell me more' }));
  expect(events.map((e) => e.event)).toEqual(['message.delta', 'message.delta', 'error']);
  expect(events.at(-1)!.data).toMatchObject({ success: false, error: { code: 'UNAVAILABLE', details: { reason: 'unreachable', kept: false } } });
  const chat = (await local.api('GET', `/api/v1/chats/${chatId}`)).body.data;
  expect(chat.messages).toEqual([]);

  model.script({ text: 'Here it is whole.' });
  const again = await allSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Tell me more' }));
  expect(again.at(-1)!.event).toBe('turn.completed');
});

it('a turn whose model fails mid-stream after its tool ran is kept, and the same message continues it without running the tool again', async () => {
  local.expectFailures(/model did not answer|request failed|failed after its stream/);
  const chatId = await newChat([{ tool_id: await weatherTool() }]);
  const before = toolCalls.length;
  model.script({ toolCalls: [{ id: 'call_k1', name: 'get_weather', arguments: { city: 'Bergen' } }] }, { text: 'It is raining in', cutAfter: 1 });
  const failed = await allSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Weather in Bergen?' }));
  expect(failed.map((e) => e.event)).toEqual(['tool_call', 'tool_result', 'message.delta', 'error']);
  expect(failed.at(-1)!.data.error.details).toMatchObject({ kept: true });
  expect(toolCalls.length - before).toBe(1);
  const kept = (await local.api('GET', `/api/v1/chats/${chatId}`)).body.data.messages;
  expect(kept.map((m: any) => m.role)).toEqual(['user', 'tool_call', 'tool_result']);
  // The streamed tool messages are the stored ones.
  expect(kept.slice(1)).toEqual([failed[0]!.data, failed[1]!.data]);

  model.script({ text: 'It is 21 °C in Bergen.' });
  const continued = await allSse(await post(`/api/v1/chats/${chatId}/messages`, { content: 'Weather in Bergen?' }));
  expect(continued.map((e) => e.event).at(-1)).toBe('turn.completed');
  expect(continued.at(-1)!.data.messages.map((m: any) => m.role)).toEqual(['user', 'tool_call', 'tool_result', 'agent']);
  expect(toolCalls.length - before).toBe(1);
});

it('the typed client streams a turn (chats.streamMessage) and throws ApiError for a refusal', async () => {
  const api = createClient({ baseUrl: local.url, apiKey: local.key });
  const chatId = await newChat();
  model.script({ text: 'Typed and streamed.' });
  const events: ChatStreamEvent[] = [];
  for await (const e of await api.chats.streamMessage(chatId, { content: 'Hello' })) events.push(e);
  expect(events.filter((e) => e.event === 'message.delta').map((e) => (e.data as { delta: string }).delta).join('')).toBe('Typed and streamed.');
  const last = events.at(-1)!;
  expect(last.event).toBe('turn.completed');
  if (last.event === 'turn.completed') expect(last.data.messages.map((m) => m.role)).toEqual(['user', 'agent']);

  await api.post('/api/v1/chats/{id}/end', { params: { path: { id: chatId } } });
  const refused = await api.chats.streamMessage(chatId, { content: 'Still there?' }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ApiError);
  expect((refused as ApiError).status).toBe(409);
});
