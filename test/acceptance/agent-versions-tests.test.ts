/**
 * Black-box, local model: agent versions and agent tests over HTTP against the local runtime.
 * Versions freeze the draft, conversations record and pin them, rollback; tests run through the
 * agent-test-run queue (one job per test × attempt) with mocks, so a webhook tool's receiver gets
 * nothing and no appointment is booked; verdicts per criterion; `judge` not_evaluated and reported;
 * `test_run.completed` delivered once; publishing gated by the suite (422, then published).
 */
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { until } from '../support/until';
import { usePlatform } from '../support/platform';

const local = usePlatform();
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let toolReceiver: WebhookReceiver;
let eventReceiver: WebhookReceiver;

beforeAll(async () => {
  toolReceiver = await startWebhookReceiver();
  eventReceiver = await startWebhookReceiver();
});
afterAll(async () => {
  await toolReceiver.close();
  await eventReceiver.close();
});

async function agentWithTools(beginMessage = 'Hello from the draft.') {
  const tool = await api('POST', '/api/v1/tools', {
    body: {
      name: 'Order status',
      type: 'webhook',
      url: `${toolReceiver.url}/orders`,
      definition: { name: 'order_status', description: 'The status of an order', parameters: { type: 'object', properties: { order_id: { type: 'integer' } }, required: ['order_id'] } },
    },
  });
  expect(tool.status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', {
    body: {
      name: 'Shop desk',
      prompt: 'You help customers of {{shop}}.',
      begin_message: beginMessage,
      selected_tools: [{ tool_id: tool.body.data.id }, { type: 'book_appointment' }, { type: 'check_availability' }, { type: 'end_call' }],
    },
  });
  expect(agent.status).toBe(200);
  return agent.body.data as { id: string };
}

const runOf = (agentId: string, runId: string) => until(
  async () => (await api('GET', `/api/v1/agents/${agentId}/test-runs/${runId}`)).body.data,
  (run) => run?.status === 'completed',
  `run ${runId} completing`,
);

describe('agent tests with the local model', () => {
  it('runs scripted tests through the queue with mocks and verdicts; nothing reaches the world; test_run.completed once', async () => {
    // Prepare
    const hook = await api('POST', '/api/v1/webhooks', { body: { url: `${eventReceiver.url}/events`, events: ['test_run.completed'] } });
    expect(hook.status).toBe(200);
    const agent = await agentWithTools();
    const passing = await api('POST', `/api/v1/agents/${agent.id}/tests`, {
      body: {
        name: 'Tells the order status, books nothing, ends',
        user: { turns: ['hello', 'order_status order_id=42 please', 'book_appointment start_time=2030-03-11T09:00 name="Ann"', 'check_availability start_date=2030-03-11', 'bye'] },
        dynamic_variables: { shop: 'Acme' },
        tool_mocks: [{ tool: 'order_status', arguments: { order_id: 42 }, output: { status: 'shipped' } }],
        criteria: [
          { type: 'reply_contains', text: 'SHIPPED', turn: 2 },
          { type: 'reply_matches', pattern: '^The order_status tool answered', turn: 2 },
          { type: 'reply_contains', text: 'not mocked in this test', turn: 3 },
          { type: 'reply_not_contains', text: 'shipped', turn: 'last' },
          { type: 'tool_called', tool: 'order_status', arguments: { order_id: 42 }, times: 1 },
          { type: 'tool_called', tool: 'check_availability' },
          { type: 'ended', end_reason: 'agent_ended' },
          { type: 'judge', rubric: 'The agent is polite.' },
        ],
      },
    });
    expect(passing.status).toBe(200);
    expect(passing.body.data).toMatchObject({ agent_id: agent.id, name: 'Tells the order status, books nothing, ends', contact: null });
    const failing = await api('POST', `/api/v1/agents/${agent.id}/tests`, {
      body: {
        name: 'Another order (its mock does not match)',
        user: { turns: ['order_status order_id=7'] },
        tool_mocks: [{ tool: 'order_status', arguments: { order_id: 42 }, output: { status: 'shipped' } }],
        criteria: [
          { type: 'reply_contains', text: 'shipped' },
          { type: 'tool_not_called', tool: 'order_status' },
          { type: 'ended' },
        ],
      },
    });
    expect(failing.status).toBe(200);
    const jobsBefore = local().platform.queue.stats()['agent-test-run']?.sent ?? 0;

    // Act
    const started = await api('POST', `/api/v1/agents/${agent.id}/test-runs`, { body: { repeat: 2 } });

    // Assess
    expect(started.status).toBe(200);
    expect(started.body.data).toMatchObject({ status: 'queued', agent_version: null, repeat: 2, test_ids: [passing.body.data.id, failing.body.data.id], summary: { total: 4, passed: 0, failed: 0, errored: 0 } });
    expect(started.body.data.notices.join(' ')).toMatch(/judge criteria are not_evaluated.*LLM_BASE_URL/);
    const run = await runOf(agent.id, started.body.data.id);
    expect(local().platform.queue.stats()['agent-test-run']!.sent - jobsBefore).toBe(4);
    // The passing test's judge criterion was not evaluated (the local model): counted, and listed in each result.
    expect(run.summary).toEqual({ total: 4, passed: 2, failed: 2, errored: 0, not_evaluated: 2 });
    expect(run.started_at).toEqual(expect.any(String));
    expect(run.completed_at).toEqual(expect.any(String));
    expect(run.results.map((r: any) => [r.test_id, r.attempt, r.status])).toEqual([
      [passing.body.data.id, 1, 'passed'],
      [passing.body.data.id, 2, 'passed'],
      [failing.body.data.id, 1, 'failed'],
      [failing.body.data.id, 2, 'failed'],
    ]);
    const pass = run.results[0];
    expect(pass.criteria.map((c: any) => [c.type, c.verdict])).toEqual([
      ['reply_contains', 'passed'],
      ['reply_matches', 'passed'],
      ['reply_contains', 'passed'],
      ['reply_not_contains', 'passed'],
      ['tool_called', 'passed'],
      ['tool_called', 'passed'],
      ['ended', 'passed'],
      ['judge', 'not_evaluated'],
    ]);
    expect(pass.criteria[7].detail).toMatch(/local model/);
    expect(pass.not_evaluated).toEqual([{ criterion: 7, type: 'judge', reason: 'local_model', detail: pass.criteria[7].detail }]);
    expect(pass.end_reason).toBe('agent_ended');
    expect(pass.transcript[0]).toEqual({ role: 'agent', content: 'Hello from the draft.' });
    expect(pass.transcript).toContainEqual({ role: 'user', content: 'hello' });
    expect(pass.tool_calls.map((c: any) => [c.name, c.answered_by])).toEqual([
      ['order_status', 'mock'],
      ['book_appointment', 'not_mocked'],
      ['check_availability', 'platform'],
      ['end_call', 'platform'],
    ]);
    expect(pass.tool_calls[0].result).toEqual({ status: 'shipped' });
    expect(pass.tool_calls[1].result).toEqual({ error: 'not mocked in this test' });
    expect(pass.usage).toEqual({ llm_requests: expect.any(Number), prompt_tokens: 0, completion_tokens: 0 });
    const fail = run.results[2];
    expect(fail.criteria.map((c: any) => [c.type, c.verdict])).toEqual([['reply_contains', 'failed'], ['tool_not_called', 'failed'], ['ended', 'failed']]);
    expect(fail.criteria[0].detail).toMatch(/does not contain "shipped"/);
    expect(fail.end_reason).toBe('user_ended');
    expect(fail.tool_calls).toEqual([{ name: 'order_status', arguments: { order_id: 7 }, result: { error: 'not mocked in this test' }, answered_by: 'not_mocked' }]);
    // Nothing reached the world: the webhook tool's receiver got nothing, no appointment exists.
    expect(toolReceiver.received).toEqual([]);
    expect((await api('GET', '/api/v1/scheduler/appointments')).body.meta.total).toBe(0);
    // test_run.completed: once, through the outbox and a signed delivery.
    const [delivered] = await eventReceiver.waitFor(1, (r) => r.path === '/events');
    expect(JSON.parse(delivered!.body)).toMatchObject({ type: 'test_run.completed', data: { test_run: { id: run.id, summary: { passed: 2, failed: 2, errored: 0 } } } });
    await local().platform.queue.waitForIdle();
    const events = await api('GET', '/api/v1/events?type=test_run.completed');
    expect(events.body.data.filter((e: any) => e.data.test_run.id === run.id)).toHaveLength(1);
    // Lists: tests with meta; runs newest first, without results.
    const tests = await api('GET', `/api/v1/agents/${agent.id}/tests`);
    expect(tests.body.meta.total).toBe(2);
    const runs = await api('GET', `/api/v1/agents/${agent.id}/test-runs`);
    expect(runs.body.meta.total).toBe(1);
    expect(runs.body.data[0]).toMatchObject({ id: run.id, status: 'completed' });
    expect(runs.body.data[0].results).toBeUndefined();
  }, 60_000);

  it('ends a persona test in error naming the setting: the local model cannot play a user', async () => {
    const agent = await agentWithTools();
    const test = await api('POST', `/api/v1/agents/${agent.id}/tests`, {
      body: { name: 'Persona', user: { persona: 'A hurried customer', goal: 'Learn where order 42 is' }, criteria: [{ type: 'tool_called', tool: 'order_status' }] },
    });
    expect(test.body.data.user).toEqual({ persona: 'A hurried customer', goal: 'Learn where order 42 is', max_turns: 10 });
    const started = await api('POST', `/api/v1/agents/${agent.id}/test-runs`, { body: { test_ids: [test.body.data.id] } });
    expect(started.body.data.notices.join(' ')).toMatch(/persona tests end in error/);
    const run = await runOf(agent.id, started.body.data.id);
    expect(run.summary).toEqual({ total: 1, passed: 0, failed: 0, errored: 1, not_evaluated: 1 });
    expect(run.results[0]).toMatchObject({ status: 'error', transcript: [], criteria: [{ type: 'tool_called', verdict: 'not_evaluated' }] });
    expect(run.results[0].error).toMatch(/LLM_PROVIDER=openai and LLM_BASE_URL/);
  });

  it('refuses bad tests and runs with 4xx naming the field', async () => {
    const agent = await agentWithTools();
    const path = `/api/v1/agents/${agent.id}/tests`;
    const bad = async (body: unknown, field: string) => {
      const res = await api('POST', path, { body });
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(field);
      return res.body.error;
    };
    await bad({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'reply_matches', pattern: '(' }] }, 'criteria.0.pattern');
    expect((await bad({ name: 'x', user: { turns: Array.from({ length: 51 }, () => 'hi') } }, 'user.turns')).message).toMatch(/at most 50 turns/);
    await bad({ name: 'x', user: { persona: 'p', goal: 'g', max_turns: 31 } }, 'user.max_turns');
    await bad({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'no_such' }] }, 'criteria.0.type');
    await bad({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'reply_contains', text: 'a', turn: 0 }] }, 'criteria.0.turn');
    // A test needs a criterion; a mock its output (it was a 500); a pattern RE2 can run in linear time.
    await bad({ name: 'x', user: { turns: ['hi'] } }, 'criteria');
    await bad({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'ended' }], tool_mocks: [{ tool: 'order_status' }] }, 'tool_mocks.0.output');
    expect((await bad({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'reply_matches', pattern: '(?=a)' }] }, 'criteria.0.pattern')).message).toMatch(/RE2 syntax/);
    // No tests yet: a run has nothing to run, and the 422 says why.
    const empty = await api('POST', `/api/v1/agents/${agent.id}/test-runs`, { body: {} });
    expect(empty.status).toBe(422);
    expect(empty.body.error.details.reason).toBe('no_tests');
    const gated = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { require_passing_tests: true } });
    expect([gated.status, gated.body.error.details.reason]).toEqual([422, 'no_tests']);
    const runs = `/api/v1/agents/${agent.id}/test-runs`;
    expect((await api('POST', runs, { body: { repeat: 6 } })).status).toBe(400);
    const noVersion = await api('POST', runs, { body: { agent_version: 9 } });
    expect(noVersion.status).toBe(400);
    expect(noVersion.body.error.details.fields[0].path).toBe('agent_version');
    const unknown = await api('POST', runs, { body: { test_ids: ['01936f50-1d3e-7f40-b152-6c7d8e9fa012'] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.fields[0].path).toBe('test_ids.0');
    expect((await api('GET', `${path}/01936f50-1d3e-7f40-b152-6c7d8e9fa012`)).status).toBe(404);
    expect((await api('GET', `/api/v1/agents/01936f50-1d3e-7f40-b152-6c7d8e9fa012/tests`)).status).toBe(404);
  });
});

describe('agent versions over HTTP', () => {
  it('publishes, lists, pins in chats, rolls back, and deletes versions with the agent', async () => {
    // Prepare: v1 greets "v1", the draft then changes.
    const agent = await agentWithTools('Hello from v1.');
    const v1 = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { description: 'first' } });
    expect(v1.status).toBe(200);
    expect(v1.body.data).toMatchObject({ agent_id: agent.id, version: 1, description: 'first', config: { begin_message: 'Hello from v1.', prompt: 'You help customers of {{shop}}.' } });
    expect(v1.body.data.config.selected_tools).toHaveLength(4);
    expect(v1.body.data.config).not.toHaveProperty('name');
    expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data.published_version).toBe(1);
    expect((await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { begin_message: 'Hello from v2.' } })).status).toBe(200);

    // A chat without a pin uses the published version, not the draft.
    const onV1 = await api('POST', '/api/v1/chats', { body: { agent_id: agent.id } });
    expect(onV1.body.data).toMatchObject({ agent_version: 1, messages: [{ role: 'agent', content: 'Hello from v1.' }] });
    const onDraft = await api('POST', '/api/v1/chats', { body: { agent_id: agent.id, agent_version: 'draft' } });
    expect(onDraft.body.data).toMatchObject({ agent_version: null, messages: [{ role: 'agent', content: 'Hello from v2.' }] });
    const v2 = await api('POST', `/api/v1/agents/${agent.id}/versions`);
    expect(v2.status).toBe(200);
    expect(v2.body.data).toMatchObject({ version: 2, description: '', config: { begin_message: 'Hello from v2.' } });
    // The chat on v1 keeps v1 after v2 is published: its turn reads the version, not the agent.
    expect((await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { prompt: 'changed' } })).status).toBe(200);
    const turn = await api('POST', `/api/v1/chats/${onV1.body.data.id}/messages`, { body: { content: 'order_status order_id=1' } });
    expect(turn.status).toBe(200);
    expect((await api('GET', `/api/v1/chats/${onV1.body.data.id}`)).body.data.agent_version).toBe(1);
    const pinned = await api('POST', '/api/v1/chats', { body: { agent_id: agent.id, agent_version: 1 } });
    expect(pinned.body.data).toMatchObject({ agent_version: 1, messages: [{ content: 'Hello from v1.' }] });
    expect((await api('POST', '/api/v1/chats', { body: { agent_id: agent.id, agent_version: 3 } })).body.error.details.fields[0].path).toBe('agent_version');

    // Versions: newest first, one by one, immutable.
    const list = await api('GET', `/api/v1/agents/${agent.id}/versions`);
    expect(list.body.meta.total).toBe(2);
    expect(list.body.data.map((v: any) => v.version)).toEqual([2, 1]);
    expect((await api('GET', `/api/v1/agents/${agent.id}/versions/1`)).body.data).toEqual(v1.body.data);
    expect((await api('GET', `/api/v1/agents/${agent.id}/versions/7`)).status).toBe(404);
    expect((await api('GET', `/api/v1/agents/${agent.id}/versions/abc`)).status).toBe(400);

    // Rollback, and a version that does not exist.
    const back = await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { published_version: 1 } });
    expect(back.body.data.published_version).toBe(1);
    expect((await api('POST', '/api/v1/chats', { body: { agent_id: agent.id } })).body.data).toMatchObject({ agent_version: 1, messages: [{ content: 'Hello from v1.' }] });
    const missing = await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { published_version: 5 } });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.fields[0].path).toBe('published_version');
    expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data.published_version).toBe(1);

    // Deleting the agent deletes its versions.
    expect((await api('DELETE', `/api/v1/agents/${agent.id}`)).status).toBe(200);
    expect((await api('GET', `/api/v1/agents/${agent.id}/versions`)).status).toBe(404);
  }, 30_000);

  it('publishes only when every test passes (require_passing_tests): 422 with the run and failures, then published', async () => {
    // Prepare: a test that fails on the draft.
    const agent = await agentWithTools('Hi.');
    const test = await api('POST', `/api/v1/agents/${agent.id}/tests`, {
      body: { name: 'Greets by name', user: { turns: ['hello'] }, criteria: [{ type: 'reply_contains', text: 'Welcome to Acme', turn: 'any' }] },
    });
    expect(test.status).toBe(200);

    // Act: gated publish on a failing suite.
    const refused = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { require_passing_tests: true, description: 'gated' } });

    // Assess: 422, the run named, the failing test and its criterion; nothing published.
    expect(refused.status).toBe(422);
    expect(refused.body.error.details).toMatchObject({
      reason: 'tests_failed',
      test_run_id: expect.any(String),
      failed_tests: [{ test_id: test.body.data.id, status: 'failed', failed_criteria: [{ type: 'reply_contains', verdict: 'failed' }] }],
    });
    expect((await api('GET', `/api/v1/agents/${agent.id}/versions`)).body.meta.total).toBe(0);
    expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data.published_version).toBeNull();
    const run = await api('GET', `/api/v1/agents/${agent.id}/test-runs/${refused.body.error.details.test_run_id}`);
    expect(run.body.data).toMatchObject({ status: 'completed', agent_version: null, summary: { failed: 1 } });

    // Act: the test now matches what the local model answers (no knowledge base: its fixed reply).
    expect((await api('PATCH', `/api/v1/agents/${agent.id}/tests/${test.body.data.id}`, { body: { criteria: [{ type: 'reply_contains', text: "don't have information" }] } })).status).toBe(200);
    const published = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { require_passing_tests: true, description: 'gated' } });

    // Assess
    expect(published.status).toBe(200);
    expect(published.body.data).toMatchObject({ version: 1, description: 'gated', test_run_id: expect.any(String), config: { begin_message: 'Hi.' } });
    expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data.published_version).toBe(1);
  }, 60_000);
});
