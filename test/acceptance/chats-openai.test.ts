/**
 * Black-box: chats through the real OpenAI-compatible adapter (LLM_PROVIDER=openai), against a
 * stand-in Chat Completions server that scripts the model: what the platform sends (prompt,
 * passages, history, tools, model, temperature, key), a scripted webhook-tool call and its
 * result, token usage, and a failing or slow model answered 503 with Retry-After and nothing kept.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';

let model: OpenAiStandIn;
let local: TestPlatform;
let tool: Server;
let toolUrl = '';
const toolBodies: any[] = [];

beforeAll(async () => {
  model = await startOpenAiStandIn();
  tool = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      toolBodies.push(JSON.parse(Buffer.concat(parts).toString('utf8')));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ temperature_c: 21 }));
    });
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/weather`;
  local = await startTestPlatform({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', LLM_TIMEOUT_MS: '4000' } });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  if (local) expectNoUnexpected5xx(local);
  await model?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

it('sends the prompt, history and tools; runs the scripted tool call; records usage', async () => {
  const created = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Weather', type: 'webhook', url: toolUrl, definition: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  });
  const agent = await local.api('POST', '/api/v1/agents', {
    body: { name: 'Weather desk', model: 'gpt-test', temperature: 0.3, prompt: 'You are {{agent_name}}. Today is {{day}}.', agent_name: 'Wes', begin_message: '', selected_tools: [{ tool_id: created.body.data.id }, { type: 'end_call' }] },
  });
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id, dynamic_variables: { day: 'Tuesday' } } })).body.data;
  model.script({ toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'It is 21 °C in Oslo.' });
  const turn = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Weather in Oslo?' } });
  expect(turn.status).toBe(200);
  expect(turn.body.data.messages.map((m: any) => m.role)).toEqual(['user', 'tool_call', 'tool_result', 'agent']);
  expect(turn.body.data.messages[2].result).toEqual({ temperature_c: 21 });
  expect(turn.body.data.messages[3].content).toBe('It is 21 °C in Oslo.');
  expect(toolBodies.at(-1)).toMatchObject({ tool_call_id: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } });

  const [first, second] = model.requests.slice(-2);
  expect(first!.authorization).toBe('Bearer sk-test-standin');
  expect(first!.body).toMatchObject({ model: 'gpt-test', temperature: 0.3 });
  expect(first!.body.messages).toEqual([{ role: 'system', content: 'You are Wes. Today is Tuesday.' }, { role: 'user', content: 'Weather in Oslo?' }]);
  expect(first!.body.tools.map((t: any) => t.function.name)).toEqual(['get_weather', 'end_call']);
  expect(first!.body.tools[0]).toEqual({ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', description: '' } }, required: ['city'] } } });
  expect(second!.body.messages.slice(2)).toEqual([
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_w1', content: '{"temperature_c":21}' },
  ]);
  const read = await local.api('GET', `/api/v1/chats/${chat.id}`);
  expect(read.body.data.usage).toEqual({ llm_requests: 2, prompt_tokens: 22, completion_tokens: 14 });
});

it('answers 503 with Retry-After and keeps nothing when the model fails or is slow', async () => {
  local.expectFailures(/answered 503/);
  local.expectFailures(/model did not answer|request failed/);
  const agent = await local.api('POST', '/api/v1/agents', { body: { name: 'Flaky', begin_message: '' } });
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } })).body.data;
  model.script({ status: 429, retryAfter: '12' });
  const limited = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'hello' } });
  expect(limited.status).toBe(503);
  expect(limited.body.error.code).toBe('UNAVAILABLE');
  expect(limited.headers.get('retry-after')).toBe('12');
  model.script({ text: 'too late', delayMs: 6000 });
  const slow = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'hello' } });
  expect(slow.status).toBe(503);
  expect(slow.headers.get('retry-after')).toBe('5');
  const read = await local.api('GET', `/api/v1/chats/${chat.id}`);
  expect(read.body.data.messages).toEqual([]);
  expect(read.body.data.user_messages).toBe(0);
  model.script({ text: 'Hello!' });
  const ok = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'hello' } });
  expect(ok.status).toBe(200);
  expect(ok.body.data.messages.map((m: any) => m.content)).toEqual(['hello', 'Hello!']);
});
