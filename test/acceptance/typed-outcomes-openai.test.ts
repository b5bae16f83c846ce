/**
 * Black-box: typed outcomes through the real `openai` analyzer (ANALYSIS_PROVIDER=openai) against
 * an OpenAI-compatible stand-in. The request asks for the fields through Chat Completions
 * structured output (`response_format` `json_schema`, strict, one required nullable property per
 * field, an enum's options); the answer's values are checked against their field's type, and a
 * wrong-typed one (as a compatible server that does not enforce the schema may send) is stored as
 * null and named in `data_errors`, never as given; `successful` follows the success criteria and
 * the analytics count boolean and enum values.
 */
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { until } from '../support/until';

let model: OpenAiStandIn;
let local: TestPlatform;
const api = (...args: Parameters<TestPlatform['api']>) => local.api(...args);

/** The stand-in's next analysis, given the request. */
let answer: (body: any) => Record<string, unknown>;

beforeAll(async () => {
  model = await startOpenAiStandIn({
    apiKey: 'sk-test-analysis',
    fallback: (body) => ({ text: JSON.stringify(answer(body)), usage: { prompt_tokens: 200, completion_tokens: 50 } }),
  });
  local = await startTestPlatform({ env: { ANALYSIS_PROVIDER: 'openai', ANALYSIS_BASE_URL: model.url, ANALYSIS_API_KEY: 'sk-test-analysis', ANALYSIS_MODEL: 'gpt-4o-mini' } });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  await model?.close();
  if (local) expectNoUnexpected5xx(local);
});

const FIELDS = [
  { name: 'outcome', type: 'enum', description: 'What the person decided', options: ['booked', 'declined', 'undecided'] },
  { name: 'wants_callback', type: 'boolean', description: 'Whether they asked to be called back' },
  { name: 'party_size', type: 'integer', description: 'How many people the table is for' },
  { name: 'budget', type: 'number', description: 'Their budget per person in euros' },
  { name: 'day', type: 'string', description: 'The day they asked for' },
];
const today = () => new Date().toISOString().slice(0, 10);
const base = { summary: 'Sam booked a table.', sentiment: 'positive', custom: [{ name: 'channel', value: 'chat' }] };

async function endedChat(agentId: string, text: string) {
  const chat = (await api('POST', '/api/v1/chats', { body: { agent_id: agentId } })).body.data;
  // The conversation model is the local one: only the analysis goes to the stand-in.
  expect((await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: text } })).status).toBe(200);
  expect((await api('POST', `/api/v1/chats/${chat.id}/end`)).status).toBe(200);
  return (await until(() => api('GET', `/api/v1/chats/${chat.id}`), (r) => r.body.data.analysis !== null, 'chat analysis')).body.data;
}

describe('typed outcomes through the openai analyzer', () => {
  it('asks through a strict JSON schema built from the fields and keeps values of their type', async () => {
    const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Bistro', analysis_fields: FIELDS, success_criteria: 'A table is booked for a day and a party size.' } })).body.data;
    answer = () => ({ ...base, successful: true, success_rationale: 'A table for 4 on Friday was booked.', data: { outcome: 'booked', wants_callback: false, party_size: 4, budget: 32.5, day: 'Friday' } });
    model.reset();
    const chat = await endedChat(agent.id, 'A table for four on Friday, about 32.50 each.');

    const request = model.requests.find((r) => r.body?.response_format)!;
    expect(request.path).toBe('/v1/chat/completions');
    const format = request.body.response_format;
    expect(format).toMatchObject({ type: 'json_schema', json_schema: { name: 'call_analysis', strict: true } });
    const schema = format.json_schema.schema;
    expect(schema).toMatchObject({ type: 'object', additionalProperties: false });
    expect(schema.required).toEqual(expect.arrayContaining(['summary', 'sentiment', 'successful', 'success_rationale', 'custom', 'data']));
    expect(schema.properties.data).toEqual({
      type: 'object',
      description: expect.any(String),
      additionalProperties: false,
      required: ['outcome', 'wants_callback', 'party_size', 'budget', 'day'],
      properties: {
        outcome: { anyOf: [{ type: 'string', enum: ['booked', 'declined', 'undecided'] }, { type: 'null' }], description: 'What the person decided' },
        wants_callback: { type: ['boolean', 'null'], description: 'Whether they asked to be called back' },
        party_size: { type: ['integer', 'null'], description: 'How many people the table is for' },
        budget: { type: ['number', 'null'], description: 'Their budget per person in euros' },
        day: { type: ['string', 'null'], description: 'The day they asked for' },
      },
    });
    const system = request.body.messages[0].content as string;
    expect(system).toContain('A table is booked for a day and a party size.');
    expect(system).toMatch(/party_size \(integer\): How many people/);

    expect(chat.analysis).toMatchObject({
      successful: true,
      success_rationale: 'A table for 4 on Friday was booked.',
      data: { outcome: 'booked', wants_callback: false, party_size: 4, budget: 32.5, day: 'Friday' },
      data_errors: [],
      custom: { channel: 'chat' },
    });
  });

  it('stores a wrong-typed value as null, names it in data_errors, and re-analysis with new fields moves the counts', async () => {
    const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Bistro 2', analysis_fields: FIELDS, success_criteria: 'A table is booked.' } })).body.data;
    answer = () => ({
      ...base, successful: false, success_rationale: 'Nothing was booked.',
      // What a compatible server that ignores the schema may send: each value of the wrong type.
      data: { outcome: 'maybe', wants_callback: 'yes', party_size: 2.5, budget: '30', day: 7 },
    });
    const chat = await endedChat(agent.id, 'I will think about it.');
    expect(chat.analysis.data).toEqual({ outcome: null, wants_callback: null, party_size: null, budget: null, day: null });
    expect(chat.analysis.data_errors.map((e: { field: string }) => e.field)).toEqual(['outcome', 'wants_callback', 'party_size', 'budget', 'day']);
    expect(chat.analysis.data_errors[0].message).toMatch(/must be one of "booked", "declined", "undecided" or null, got a string that is none of them/);
    expect(JSON.stringify(chat.analysis)).not.toContain('maybe');

    const stats = () => api('GET', `/api/v1/analytics/conversations?from=${today()}&to=${today()}&agent_id=${agent.id}&channel=chat`);
    expect((await stats()).body.data.totals).toMatchObject({ chats: 1, analyzed: 1, successful: 0, fields: {} });

    // New settings, a new verdict: the analysis runs again and its counts replace the old ones.
    expect((await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { analysis_fields: FIELDS.slice(0, 2) } })).status).toBe(200);
    answer = (body) => {
      expect(Object.keys(body.response_format.json_schema.schema.properties.data.properties)).toEqual(['outcome', 'wants_callback']);
      return { ...base, successful: true, success_rationale: 'They will come back.', data: { outcome: 'undecided', wants_callback: true } };
    };
    const again = await api('POST', `/api/v1/chats/${chat.id}/analysis`);
    expect(again.status).toBe(200);
    expect(again.body.data.analysis).toMatchObject({ successful: true, data: { outcome: 'undecided', wants_callback: true }, data_errors: [] });
    expect((await stats()).body.data.totals).toMatchObject({ chats: 1, analyzed: 1, successful: 1, fields: { outcome: { undecided: 1 }, wants_callback: { true: 1 } } });
  });

  it('tells a provider failure on re-analysis as 502 or 503 and keeps the stored analysis', async () => {
    const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Bistro 3', analysis_fields: FIELDS.slice(0, 1) } })).body.data;
    answer = () => ({ ...base, successful: true, success_rationale: 'ok', data: { outcome: 'booked' } });
    const chat = await endedChat(agent.id, 'Book it.');
    local.expectFailures(/analysis|Analysis|401|500/);
    model.script({ status: 401, message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' });
    const refused = await api('POST', `/api/v1/chats/${chat.id}/analysis`);
    expect(refused.status).toBe(502);
    expect(refused.body.error.details).toMatchObject({ reason: 'unauthorized' });
    model.script({ status: 500, message: 'The server had an error', type: 'server_error' });
    const failed = await api('POST', `/api/v1/chats/${chat.id}/analysis`);
    expect(failed.status).toBe(503);
    expect((await api('GET', `/api/v1/chats/${chat.id}`)).body.data.analysis.data).toEqual({ outcome: 'booked' });
  });
});
