/**
 * Black-box: agent tests with an OpenAI-compatible model (the stand-in Chat Completions server):
 * the persona is played by the model (its persona and goal in the request, the agent's words as
 * the other side), it ends the conversation with [END]; `judge` criteria are ruled by the model
 * from the JSON it was asked for, each with its rationale; an answer that is not that JSON is
 * not_evaluated, never a guess.
 */
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';
import { until } from '../support/until';

let model: OpenAiStandIn;
let local: TestPlatform;

const systemOf = (body: any): string => body?.messages?.find((m: any) => m.role === 'system')?.content ?? '';
const lastUser = (body: any): string => [...(body?.messages ?? [])].reverse().find((m: any) => m.role === 'user')?.content ?? '';

beforeAll(async () => {
  model = await startOpenAiStandIn({
    fallback: (body) => {
      const system = systemOf(body);
      if (system.includes('You are playing a user')) {
        const said = body.messages.filter((m: any) => m.role === 'assistant').length;
        return { text: ['I need a cleaning appointment.', 'Saturday at 10 is perfect, thanks!', '[END]'][Math.min(said, 2)], usage: { prompt_tokens: 30, completion_tokens: 6 } };
      }
      if (system.includes('You judge a conversation')) {
        const asked = lastUser(body);
        if (asked.includes('Rubric: The agent offers a Saturday')) return { text: '{"verdict": "passed", "rationale": "The agent offered Saturday at 10."}' };
        if (asked.includes('Rubric: The agent speaks French')) return { text: '```json\n{"verdict": "failed", "rationale": "The agent spoke English throughout."}\n```' };
        return { text: 'I think it went fine.' };
      }
      return { text: 'We have Saturday at 10 free.', usage: { prompt_tokens: 50, completion_tokens: 8 } };
    },
  });
  local = await startTestPlatform({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', LLM_TIMEOUT_MS: '4000' } });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  if (local) expectNoUnexpected5xx(local);
  await model?.close();
});

it('plays the persona with the model and lets the model judge, with its rationale', async () => {
  // Prepare
  const agent = (await local.api('POST', '/api/v1/agents', { body: { name: 'Dental desk', prompt: 'You book cleanings.', begin_message: 'Hello!' } })).body.data;
  const persona = { persona: 'A parent of two who works weekdays', goal: 'Book a cleaning on a Saturday', max_turns: 5 };
  const test = await local.api('POST', `/api/v1/agents/${agent.id}/tests`, {
    body: {
      name: 'Weekend booking',
      user: persona,
      criteria: [
        { type: 'judge', rubric: 'The agent offers a Saturday slot.' },
        { type: 'judge', rubric: 'The agent speaks French.' },
        { type: 'judge', rubric: 'Garbled.' },
        { type: 'reply_contains', text: 'Saturday', turn: 1 },
      ],
    },
  });
  expect(test.status).toBe(200);

  // Act
  const started = await local.api('POST', `/api/v1/agents/${agent.id}/test-runs`, { body: {} });
  expect(started.status).toBe(200);
  expect(started.body.data.notices).toEqual([]);
  const run = await until(async () => (await local.api('GET', `/api/v1/agents/${agent.id}/test-runs/${started.body.data.id}`)).body.data, (r) => r.status === 'completed', 'the run completing');

  // Assess: the persona spoke twice, then ended; the model judged two criteria, and its prose answer to the
  // third is an error verdict (never not_evaluated, never a pass): the result is an error saying which.
  const result = run.results[0];
  expect(result.error).toMatch(/^criterion 2 \(judge\) could not be judged: the judge did not answer with the JSON verdict asked for/);
  expect(result.transcript).toEqual([
    { role: 'agent', content: 'Hello!' },
    { role: 'user', content: 'I need a cleaning appointment.' },
    { role: 'agent', content: 'We have Saturday at 10 free.' },
    { role: 'user', content: 'Saturday at 10 is perfect, thanks!' },
    { role: 'agent', content: 'We have Saturday at 10 free.' },
  ]);
  expect(result.end_reason).toBe('user_ended');
  expect(result.criteria.map((c: any) => [c.rubric ?? c.type, c.verdict, c.detail])).toEqual([
    ['The agent offers a Saturday slot.', 'passed', 'The agent offered Saturday at 10.'],
    ['The agent speaks French.', 'failed', 'The agent spoke English throughout.'],
    ['Garbled.', 'error', expect.stringMatching(/did not answer with the JSON verdict asked for: "I think it went fine."/)],
    ['reply_contains', 'passed', expect.any(String)],
  ]);
  expect(result.status).toBe('error');
  expect(result.not_evaluated).toEqual([]);
  expect(run.summary).toEqual({ total: 1, passed: 0, failed: 0, errored: 1, not_evaluated: 0 });
  // 3 persona requests + 2 agent turns + 3 judge requests; usage summed from what the model reported.
  expect(result.usage.llm_requests).toBe(8);
  expect(result.usage.prompt_tokens).toBeGreaterThanOrEqual(3 * 30 + 2 * 50);
  // The persona request carried the persona and goal, and the agent's words as the other side.
  const personaRequests = model.requests.filter((r) => systemOf(r.body).includes('You are playing a user'));
  expect(personaRequests).toHaveLength(3);
  expect(systemOf(personaRequests[0]!.body)).toContain(persona.persona);
  expect(systemOf(personaRequests[0]!.body)).toContain(persona.goal);
  expect(personaRequests[1]!.body.messages.slice(1)).toEqual([
    { role: 'user', content: 'Hello!' },
    { role: 'assistant', content: 'I need a cleaning appointment.' },
    { role: 'user', content: 'We have Saturday at 10 free.' },
  ]);
  // The judge saw the transcript as data.
  const judged = model.requests.find((r) => lastUser(r.body).includes('Rubric: The agent offers a Saturday'));
  expect(lastUser(judged!.body)).toContain('<transcript>\nAgent: Hello!\nUser: I need a cleaning appointment.');
}, 60_000);
