import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CALL_ANALYSIS_SCHEMA, DEFAULT_INSTRUCTIONS, openAiAnalyzer, resetAnalysisKey, type OpenAiAnalyzerOptions } from '../../shared/adapters/analysis/openai';
import { AnalysisError, type AnalysisInput } from '../../shared/adapters/analysis/port';
import { rejection } from '../support/rejection';
import { readBody } from '../support/stand-in';

/**
 * The openai analyzer against a local stand-in speaking the chat-completions shapes: the
 * request (`model`, `messages`, `response_format` json_schema strict), the completion object
 * (`choices[0].message.content` / `refusal`, `finish_reason`) and the error JSON
 * (`{ error: { message, type, param, code } }`).
 */
const KEY = 'sk-test-analysis';

interface Seen {
  path: string;
  authorization?: string;
  body: any;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
/** The next answers, in order; with none queued the stand-in answers a valid analysis. */
const queue: Array<(res: ServerResponse) => void> = [];
/** Requests left hanging (the timeout test), ended after the tests. */
const hanging: ServerResponse[] = [];

const json = (status: number, body: unknown) => (res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const completion = (message: Record<string, unknown>, finish_reason = 'stop') => ({
  id: 'chatcmpl-1', object: 'chat.completion', created: 1_700_000_000, model: 'gpt-4o-mini-2024-07-18',
  choices: [{ index: 0, message: { role: 'assistant', refusal: null, ...message }, logprobs: null, finish_reason }],
  usage: { prompt_tokens: 120, completion_tokens: 40, total_tokens: 160 },
});
const answer = (content: unknown) => json(200, completion({ content: typeof content === 'string' ? content : JSON.stringify(content) }));
const apiError = (status: number, message: string, type: string, code: string | null = null) => json(status, { error: { message, type, param: null, code } });

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const text = await readBody(req);
    seen.push({ path: `${req.method} ${req.url}`, authorization: req.headers.authorization, body: text ? JSON.parse(text) : undefined });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return json(404, { error: { message: 'Unknown path', type: 'invalid_request_error' } })(res);
    if (req.headers.authorization !== `Bearer ${KEY}`) return apiError(401, 'Incorrect API key provided', 'invalid_request_error', 'invalid_api_key')(res);
    const next = queue.shift();
    if (next) return next(res);
    return answer({
      summary: 'Ada booked a check-up for Tuesday at 3 pm.', sentiment: 'positive', successful: true, success_rationale: 'A check-up was booked.',
      custom: [{ name: 'appointment_booked', value: 'yes' }, { name: 'day', value: 'Tuesday' }],
    })(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  queue.length = 0;
});

const analyzer = (over: OpenAiAnalyzerOptions = {}) =>
  openAiAnalyzer({ baseUrl: base, defaultModel: 'gpt-4o-mini', timeoutMs: 2000, apiKey: async () => KEY, ...over });

const input: AnalysisInput = {
  transcript: [
    { role: 'agent', text: 'Hi Ada, this is Sam from Acme Dental.', time_sec: 0 },
    { role: 'user', text: 'Hi! Tuesday at three works.', time_sec: 2.5 },
  ],
  model: null,
  summaryPrompt: null,
  disconnectionReason: 'completed',
  durationSec: 42,
};

const failure = async (promise: Promise<unknown>) => (await rejection(promise)) as unknown as AnalysisError;

describe('the openai analyzer', () => {
  it('asks for a strict json_schema answer with the default model and instructions, the transcript as the user message', async () => {
    const result = await analyzer().analyze(input);
    expect(result).toEqual({
      summary: 'Ada booked a check-up for Tuesday at 3 pm.', sentiment: 'positive', successful: true,
      custom: { appointment_booked: 'yes', day: 'Tuesday' },
      // An agent without analysis fields: no `data` asked for, an empty one kept.
      success_rationale: 'A check-up was booked.', data: {}, data_types: {}, data_errors: [],
    });
    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request.path).toBe('POST /v1/chat/completions');
    expect(request.authorization).toBe(`Bearer ${KEY}`);
    expect(request.body.model).toBe('gpt-4o-mini');
    expect(request.body.messages).toEqual([
      { role: 'system', content: DEFAULT_INSTRUCTIONS },
      { role: 'user', content: expect.stringContaining('[2.5 s] Person: Hi! Tuesday at three works.') },
    ]);
    expect(request.body.messages[1].content).toContain('The call ended "completed" after 42 seconds.');
    expect(request.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'call_analysis', strict: true, schema: CALL_ANALYSIS_SCHEMA } });
  });

  it('uses the agent\'s model and analysis prompt when it has them', async () => {
    await analyzer().analyze({ ...input, model: 'gpt-4.1-mini', summaryPrompt: 'Summarize in one sentence; note objections.' });
    expect(seen[0].body.model).toBe('gpt-4.1-mini');
    expect(seen[0].body.messages[0]).toEqual({ role: 'system', content: 'Summarize in one sentence; note objections.' });
  });

  it('reads the key from ANALYSIS_API_KEY when none is given', async () => {
    const saved = process.env.ANALYSIS_API_KEY;
    process.env.ANALYSIS_API_KEY = KEY;
    resetAnalysisKey();
    try {
      await openAiAnalyzer({ baseUrl: base, defaultModel: 'm', timeoutMs: 2000 }).analyze(input);
      expect(seen[0].authorization).toBe(`Bearer ${KEY}`);
      delete process.env.ANALYSIS_API_KEY;
      resetAnalysisKey();
      const missing = await failure(openAiAnalyzer({ baseUrl: base, defaultModel: 'm', timeoutMs: 2000 }).analyze(input));
      expect(missing).toMatchObject({ reason: 'not_configured', retryable: false });
      expect(missing.message).toMatch(/ANALYSIS_API_KEY/);
    } finally {
      if (saved === undefined) delete process.env.ANALYSIS_API_KEY;
      else process.env.ANALYSIS_API_KEY = saved;
      resetAnalysisKey();
    }
  });

  it.each([
    [429, 'rate_limited', true, 'Rate limit reached', apiError(429, 'Rate limit reached for gpt-4o-mini', 'requests', 'rate_limit_exceeded')],
    [500, 'provider_error', true, 'The server had an error', apiError(500, 'The server had an error while processing your request.', 'server_error')],
    [503, 'provider_error', true, 'HTTP 503', (res: ServerResponse) => { res.writeHead(503); res.end('upstream unavailable'); }],
    [400, 'rejected', false, 'Invalid schema', apiError(400, 'Invalid schema for response_format', 'invalid_request_error')],
  ] as const)('maps HTTP %s to %s (retryable: %s), keeping the provider\'s message', async (status, reason, retryable, said, reply) => {
    queue.push(reply);
    const err = await failure(analyzer().analyze(input));
    expect(err).toBeInstanceOf(AnalysisError);
    expect(err).toMatchObject({ reason, retryable, details: { provider: 'openai', status } });
    expect(err.message).toContain(`HTTP ${status}`);
    expect(err.message).toContain(said);
  });

  it('maps refused credentials to unauthorized, never echoing the key', async () => {
    const err = await failure(analyzer({ apiKey: async () => 'sk-wrong' }).analyze(input));
    expect(err).toMatchObject({ reason: 'unauthorized', retryable: false, details: { status: 401 } });
    expect(err.message).toContain('Incorrect API key provided');
    expect(err.message).not.toContain('sk-wrong');
  });

  it.each([
    ['a body that is not JSON', (res: ServerResponse) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end('<html>gateway</html>'); }, /not JSON/],
    ['JSON that is not a completion', json(200, { ok: true }), /not a chat completion/],
    ['content that is not JSON', answer('Sure! The call went well.'), /answer is not JSON/],
    ['content missing a field', answer({ summary: 's', sentiment: 'positive', custom: [] }), /successful/],
    ['a sentiment outside the enum', answer({ summary: 's', sentiment: 'ecstatic', successful: true, custom: [] }), /sentiment/],
    ['an extra field', answer({ summary: 's', sentiment: 'neutral', successful: true, custom: [], score: 9 }), /CallAnalysis schema/],
    ['empty content', json(200, completion({ content: null })), /empty/],
    ['an answer cut off by the token limit', json(200, completion({ content: '{"summary": "Ada bo' }, 'length')), /cut off/],
  ])('fails clearly, as malformed, on %s', async (_what, reply, message) => {
    queue.push(reply);
    const err = await failure(analyzer().analyze(input));
    expect(err).toMatchObject({ reason: 'malformed', retryable: true });
    expect(err.message).toMatch(message);
  });

  it('reports a refusal as refused', async () => {
    queue.push(json(200, completion({ content: null, refusal: 'I can\'t help with that.' })));
    expect(await failure(analyzer().analyze(input))).toMatchObject({ reason: 'refused', message: expect.stringContaining('I can\'t help with that.') });
  });

  it('gives up after the timeout when the provider does not answer', async () => {
    queue.push((res) => hanging.push(res));
    const err = await failure(analyzer({ timeoutMs: 200 }).analyze(input));
    expect(err).toMatchObject({ reason: 'timeout', retryable: true });
  });

  it('reports an unreachable provider', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(analyzer({ baseUrl: `http://127.0.0.1:${port}/v1` }).analyze(input));
    expect(err).toMatchObject({ reason: 'unreachable', retryable: true });
  });
});
