/**
 * Black-box: the agent as an OpenAI model, through the official `openai` SDK pointed at
 * `{base}/api/v1/openai/v1` with a platform API key, the platform's own model a stand-in
 * OpenAI-compatible server. Plain and streamed completions, a caller's tool round trip, an agent's
 * webhook tool run on the platform, models listed, and errors raised as the SDK's own classes.
 */
import OpenAI from 'openai';
import { createWeatherTool, startChatModelSetup, type ChatModelSetup } from '../support/chat-model-setup';
import type { OpenAiStandIn } from '../support/openai-stand-in';
import type { TestPlatform } from '../support/platform';

let setup: ChatModelSetup;
let model: OpenAiStandIn;
let local: TestPlatform;
let client: OpenAI;
let agentId = '';
/** The bodies the weather tool's receiver got. */
let toolBodies: any[] = [];

beforeAll(async () => {
  ({ model, local, toolBodies } = setup = await startChatModelSetup());
  const weatherId = await createWeatherTool(local, setup.toolUrl);
  const agent = await local.api('POST', '/api/v1/agents', { body: { name: 'Concierge', agent_name: 'Ada', model: 'gpt-test', prompt: 'You are {{agent_name}}.', begin_message: '', selected_tools: [{ tool_id: weatherId }] } });
  agentId = agent.body.data.id;
  client = new OpenAI({ apiKey: local.key, baseURL: `${local.url}/api/v1/openai/v1`, maxRetries: 0 });
}, 60_000);
afterAll(() => setup?.stop());

it('lists the organization\'s active agents as models (Bearer or X-Api-Key)', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  expect(models).toContainEqual(expect.objectContaining({ id: agentId, object: 'model' }));
  const plain = await fetch(`${local.url}/api/v1/openai/v1/models`, { headers: { 'x-api-key': local.key } });
  expect(plain.status).toBe(200);
  expect(((await plain.json()) as any).object).toBe('list');
});

it('answers a plain completion with the agent\'s prompt before the caller\'s messages, and usage', async () => {
  model.reset();
  model.script({ text: 'Hello, I am Ada.', usage: { prompt_tokens: 30, completion_tokens: 5 } });
  const completion = await client.chat.completions.create({ model: agentId, messages: [{ role: 'system', content: 'Answer in English.' }, { role: 'user', content: 'Who are you?' }] });
  expect(completion.object).toBe('chat.completion');
  expect(completion.model).toBe(agentId);
  expect(completion.choices[0]!.message.content).toBe('Hello, I am Ada.');
  expect(completion.choices[0]!.finish_reason).toBe('stop');
  expect(completion.usage).toEqual({ prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 });
  expect(model.requests[0]!.body.messages).toEqual([{ role: 'system', content: 'You are Ada.\n\nAnswer in English.' }, { role: 'user', content: 'Who are you?' }]);
  expect(model.requests[0]!.body.model).toBe('gpt-test');
});

it('streams chat.completion.chunks ending [DONE], with usage when asked', async () => {
  model.script({ text: 'One two three four.', usage: { prompt_tokens: 12, completion_tokens: 4 } });
  const stream = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'Count' }], stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish: string | null = null;
  let usage: unknown;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    expect(chunk.object).toBe('chat.completion.chunk');
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  expect(text).toBe('One two three four.');
  expect(chunks).toBeGreaterThan(4);
  expect(finish).toBe('stop');
  expect(usage).toEqual({ prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 });
  const raw = await fetch(`${local.url}/api/v1/openai/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${local.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: agentId, messages: [{ role: 'user', content: 'Hi' }], stream: true }),
  });
  expect(raw.headers.get('content-type')).toMatch(/text\/event-stream/);
  expect((await raw.text()).trimEnd().endsWith('data: [DONE]')).toBe(true);
});

it('runs the agent\'s webhook tool on the platform and hands the caller\'s own tools back as tool_calls', async () => {
  model.script(
    { toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: { city: 'Oslo' } }] },
    { toolCalls: [{ id: 'call_t', name: 'get_time', arguments: { zone: 'Europe/Oslo' } }] },
  );
  const before = toolBodies.length;
  const tools = [{ type: 'function' as const, function: { name: 'get_time', description: 'The time in a zone', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } } }];
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather and time in Oslo?' }];
  const first = await client.chat.completions.create({ model: agentId, messages, tools });
  expect(toolBodies.length - before).toBe(1);
  expect(toolBodies.at(-1)).toMatchObject({ name: 'get_weather', arguments: { city: 'Oslo' } });
  expect(first.choices[0]!.finish_reason).toBe('tool_calls');
  const call = first.choices[0]!.message.tool_calls![0]!;
  expect(call).toEqual({ id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"zone":"Europe/Oslo"}' } });
  expect(model.requests.at(-1)!.body.tools.map((t: any) => t.function.name)).toEqual(['get_weather', 'get_time']);

  model.script({ text: 'It is 21 °C and 09:00 in Oslo.' });
  messages.push(first.choices[0]!.message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: '{"time":"09:00"}' });
  const second = await client.chat.completions.create({ model: agentId, messages, tools });
  expect(second.choices[0]!.message.content).toBe('It is 21 °C and 09:00 in Oslo.');
  const sent = model.requests.at(-1)!.body.messages;
  expect(sent.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_t', function: { name: 'get_time' } }] });
  expect(sent.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_t' });
  expect(sent.at(-1).content).toContain('09:00');
  expect(toolBodies.length - before).toBe(1);
});

it('raises the SDK\'s own error classes: 401 for a bad key, 404 for an unknown agent, 400 naming the field', async () => {
  const wrong = new OpenAI({ apiKey: 'vap_not_a_key', baseURL: `${local.url}/api/v1/openai/v1`, maxRetries: 0 });
  const unauthorized = await wrong.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
  expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
  expect((unauthorized as InstanceType<typeof OpenAI.APIError>).status).toBe(401);

  const unknown = await client.chat.completions.create({ model: '00000000-0000-7000-8000-000000000000', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
  expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
  expect((unknown as InstanceType<typeof OpenAI.APIError>).code).toBe('model_not_found');

  const invalid = await client.chat.completions.create({ model: agentId, messages: [] }).catch((e: unknown) => e);
  expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
  expect((invalid as InstanceType<typeof OpenAI.APIError>).param).toBe('messages');
  const body = await (await fetch(`${local.url}/api/v1/openai/v1/models`, { headers: { authorization: 'Bearer nope' } })).json();
  expect(body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
});
