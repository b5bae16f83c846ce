import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { installLlm } from '../../shared/adapters/llm';
import { localModel, localStep } from '../../shared/adapters/llm/local';
import { LlmError, type LlmPort, type LlmRequest } from '../../shared/adapters/llm/port';
import { installLocalQueue } from '../../shared/adapters/queue';
import { installTimeSource } from '../../shared/clock';
import { db } from '../../shared/db/client';
import { keys } from '../../shared/db/keys';
import { getItem, MAX_ITEM_BYTES, storedBytes } from '../../shared/db/store';
import { publishAgent } from '../../shared/domain/agent-tests/publish';
import { retryingModel, TEST_DEADLINE_MS } from '../../shared/domain/agent-tests/runner';
import { ORG_JOB_CAP } from '../../shared/domain/agent-tests/fairness';
import { CreateAgentTestBody, StartTestRunBody, UpdateAgentTestBody } from '../../shared/domain/agent-tests/schemas';
import { createTest, deleteTest, getRun, startRun, updateTest } from '../../shared/domain/agent-tests/service';
import { CreateAgentBody, UpdateAgentBody } from '../../shared/domain/agents/schemas';
import { createAgent, getAgent, updateAgent } from '../../shared/domain/agents/service';
import { getVersion, publishVersion } from '../../shared/domain/agents/versions';
import { CreateToolBody } from '../../shared/domain/tools/schemas';
import { createTool } from '../../shared/domain/tools/service';
import { logger } from '../../shared/logger';
import { CapturedQueue, deliver } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/**
 * Issue 35, against DynamoDB Local: a test passes only on evidence, every run ends (conflicts
 * injected, oversized results, unqueued jobs, deadlines, transient model errors), user patterns run
 * in linear time, and the publish gate holds (the agent's setting, frozen tests, preconditions,
 * publishing a passed run). Each test owns its organization.
 */
let queued: CapturedQueue;
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
});
afterEach(() => {
  installLlm(undefined);
  installTimeSource(undefined);
});
afterAll(() => installLocalQueue(undefined));

const JOB = 'functions/jobs/agent-test-run.ts';
const runJobs = async () => deliver(JOB, queued.take('agent-test-run'));

/** An organization with an agent that offers a webhook tool `order_status` and end_call. */
async function shop(over: Record<string, unknown> = {}) {
  const org = uuidv7();
  const tool = await createTool(org, CreateToolBody.parse({
    name: 'Order status', type: 'webhook', url: 'https://orders.example.com/status',
    definition: { name: 'order_status', description: 'The status of an order', parameters: { type: 'object', properties: { order_id: { type: 'integer' } }, required: ['order_id'] } },
  }));
  const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Shop', begin_message: 'Hello.', selected_tools: [{ tool_id: tool.id }, { type: 'end_call' }], ...over }));
  return { org, agent };
}

const orderTest = (over: Record<string, unknown> = {}) => CreateAgentTestBody.parse({
  name: 'Order',
  user: { turns: ['order_status order_id=42', 'bye'] },
  tool_mocks: [{ tool: 'order_status', output: { status: 'shipped' } }],
  criteria: [{ type: 'reply_contains', text: 'shipped', turn: 1 }],
  ...over,
});

/** A model with the local model's replies that answers the judge with `judge` (and says it is not the local one). */
function modelJudging(judge: (request: LlmRequest) => string, name: 'openai' | 'local' = 'openai'): LlmPort {
  return {
    name,
    async complete(request) {
      if (request.system.startsWith('You judge')) return { text: judge(request), toolCalls: [], usage: { promptTokens: 1, completionTokens: 1 } };
      return localStep(request);
    },
  };
}

describe('evidence or no pass', () => {
  it('refuses a test without criteria and a mock without output (400 naming the field)', () => {
    const none = CreateAgentTestBody.safeParse({ name: 'x', user: { turns: ['hi'] } });
    expect(none.success).toBe(false);
    expect(none.error!.issues.map((i) => i.path.join('.'))).toEqual(['criteria']);
    const empty = CreateAgentTestBody.safeParse({ name: 'x', user: { turns: ['hi'] }, criteria: [] });
    expect(empty.error!.issues.map((i) => i.path.join('.'))).toEqual(['criteria']);
    const noOutput = CreateAgentTestBody.safeParse({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'ended' }], tool_mocks: [{ tool: 'order_status' }] });
    expect(noOutput.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['tool_mocks.0.output', expect.stringContaining('required')]]);
    // null is an output like any other.
    expect(CreateAgentTestBody.safeParse({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'ended' }], tool_mocks: [{ tool: 'order_status', output: null }] }).success).toBe(true);
  });

  it('never passes a test whose every criterion was not evaluated (judge on the local model): an error saying why', async () => {
    const { org, agent } = await shop();
    await createTest(org, agent.id, orderTest({ criteria: [{ type: 'judge', rubric: 'The agent is polite.' }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    const done = await getRun(org, agent.id, run.id);
    expect(done.status).toBe('completed');
    expect(done.summary).toMatchObject({ total: 1, passed: 0, errored: 1, not_evaluated: 1 });
    const [result] = done.results!;
    expect(result).toMatchObject({ status: 'error', error: expect.stringContaining('no criterion was evaluated') });
    expect(result!.not_evaluated).toEqual([{ criterion: 0, type: 'judge', reason: 'local_model', detail: expect.stringContaining('local model') }]);
  });

  it('takes a judge that answers prose for an error, not not_evaluated and never a pass', async () => {
    const { org, agent } = await shop();
    installLlm(modelJudging(() => 'I think the agent did fine overall.'));
    await createTest(org, agent.id, orderTest({ criteria: [{ type: 'reply_contains', text: 'shipped', turn: 1 }, { type: 'judge', rubric: 'The agent is polite.' }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    const [result] = (await getRun(org, agent.id, run.id)).results!;
    expect(result!.criteria.map((c) => c.verdict)).toEqual(['passed', 'error']);
    expect(result).toMatchObject({ status: 'error', error: expect.stringContaining('did not answer with the JSON verdict') });
  });

  it('gives the judge its settings: its own model and the success and failure examples', async () => {
    const { org, agent } = await shop();
    const asked: LlmRequest[] = [];
    installLlm(modelJudging((r) => {
      asked.push(r);
      return '{"verdict":"passed","rationale":"It said shipped."}';
    }));
    await createTest(org, agent.id, orderTest({ criteria: [{ type: 'judge', rubric: 'States the status.', judge_model: 'judge-large', success_examples: ['Your order has shipped.'], failure_examples: ['I cannot say.'] }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    expect((await getRun(org, agent.id, run.id)).results![0]).toMatchObject({ status: 'passed', not_evaluated: [] });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.model).toBe('judge-large');
    expect(asked[0]!.messages[0]!.content).toEqual(expect.stringContaining('<meets_rubric_example>\nYour order has shipped.'));
    expect(asked[0]!.messages[0]!.content).toEqual(expect.stringContaining('<fails_rubric_example>\nI cannot say.'));
  });

  it('publishes a run with not_evaluated criteria only when the request allows it', async () => {
    const { org, agent } = await shop();
    await createTest(org, agent.id, orderTest({ criteria: [{ type: 'reply_contains', text: 'shipped', turn: 1 }, { type: 'judge', rubric: 'Polite.' }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));
    await runJobs();
    expect((await getRun(org, agent.id, run.id)).results![0]).toMatchObject({ status: 'passed', not_evaluated: [{ criterion: 1, type: 'judge', reason: 'local_model' }] });

    await expect(publishAgent(org, agent.id, { test_run_id: run.id })).rejects.toMatchObject({
      statusCode: 422,
      details: { reason: 'tests_not_evaluated', test_run_id: run.id, not_evaluated_tests: [expect.objectContaining({ not_evaluated: [expect.objectContaining({ type: 'judge' })] })] },
    });
    const version = await publishAgent(org, agent.id, { test_run_id: run.id, allow_not_evaluated: true });
    expect(version).toMatchObject({ version: 1, test_run_id: run.id });
  });

  it('answers a 422 with details.reason no_tests for an agent without tests', async () => {
    const { org, agent } = await shop();
    await expect(startRun(org, agent.id, StartTestRunBody.parse({}))).rejects.toMatchObject({ statusCode: 422, details: { reason: 'no_tests' } });
    await expect(publishAgent(org, agent.id, { require_passing_tests: true })).rejects.toMatchObject({ statusCode: 422, details: { reason: 'no_tests' } });
  });
});

describe('every run ends', () => {
  it('stores a result whose transaction met a TransactionConflict (not taken for "already stored")', async () => {
    const { org, agent } = await shop();
    await createTest(org, agent.id, orderTest());
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));
    const client = db();
    const real = client.send.bind(client);
    let injected = 0;
    const spy = jest.spyOn(client, 'send').mockImplementation(((cmd: { constructor: { name: string }; input: { TransactItems?: { Put?: { Item?: { entity?: string } } }[] } }, ...rest: unknown[]) => {
      if (cmd.constructor.name === 'TransactWriteCommand' && injected < 2 && cmd.input.TransactItems?.some((t) => t.Put?.Item?.entity === 'AGENT_TEST_RESULT')) {
        injected++;
        return Promise.reject(new TransactionCanceledException({ message: 'conflict', $metadata: {}, CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }] }));
      }
      return (real as (...a: unknown[]) => Promise<unknown>)(cmd, ...rest);
    }) as never);

    try {
      await runJobs();
    } finally {
      spy.mockRestore();
    }

    expect(injected).toBe(2);
    const done = await getRun(org, agent.id, run.id);
    expect(done).toMatchObject({ status: 'completed', summary: { total: 1, passed: 1 } });
  });

  it('stores a result too large for an item, cut to fit (16 KB mocks called over 30 turns)', async () => {
    const { org, agent } = await shop();
    const big = { notes: 'x'.repeat(16_000) }; // a mock's output is at most 16 KB of JSON
    await createTest(org, agent.id, orderTest({ user: { turns: Array.from({ length: 30 }, (_, i) => `order_status order_id=${i}`) }, tool_mocks: [{ tool: 'order_status', output: big }], criteria: [{ type: 'tool_called', tool: 'order_status', times: 30 }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    const done = await getRun(org, agent.id, run.id);
    expect(done).toMatchObject({ status: 'completed', summary: { total: 1, passed: 1 } });
    const result = done.results![0]!;
    expect(result.truncated).toBe(true);
    expect(result.tool_calls).toHaveLength(30);
    expect(storedBytes(result)).toBeLessThan(MAX_ITEM_BYTES);
  });

  it('records a job that could not be queued as an error result, so the run still completes', async () => {
    const { org, agent } = await shop();
    await createTest(org, agent.id, orderTest({ name: 'first' }));
    await createTest(org, agent.id, orderTest({ name: 'second' }));
    let sends = 0;
    installLocalQueue({
      send: async (queue, body) => {
        if (sends++ === 0) throw new Error('queue unreachable');
        queued.messages.push({ queue, body });
      },
    });

    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));
    await runJobs();

    const done = await getRun(org, agent.id, run.id);
    expect(done).toMatchObject({ status: 'completed', summary: { total: 2, passed: 1, errored: 1 } });
    expect(done.results!.find((r) => r.status === 'error')!.error).toContain('could not be queued: queue unreachable');
  });

  it('turns a test past its deadline into an error result', async () => {
    const { org, agent } = await shop();
    // Each model request takes 4 minutes on the test's clock.
    let now = Date.now();
    installTimeSource({ now: () => now });
    const model = localModel();
    installLlm({ name: 'local', complete: async (r) => { now += 4 * 60_000; return model.complete(r); } });
    await createTest(org, agent.id, orderTest({ user: { turns: ['hello', 'hello', 'hello', 'hello', 'hello'] } }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    const [result] = (await getRun(org, agent.id, run.id)).results!;
    expect(result).toMatchObject({ status: 'error', error: `the test ran past its deadline of ${TEST_DEADLINE_MS / 1000} s after 3 turns` });
  });

  it('retries a retryable model failure in-process after the Retry-After it gave', async () => {
    const waits: number[] = [];
    let calls = 0;
    const flaky: LlmPort = {
      name: 'openai',
      async complete(r) {
        if (calls++ < 2) throw new LlmError('rate_limited', 'slow down', { provider: 'openai', status: 429, retryAfterSeconds: 3 });
        return localStep(r);
      },
    };
    const model = retryingModel(flaky, Date.now() + 60_000, async (ms) => {
      waits.push(ms);
    });

    const reply = await model.complete({ model: 'm', temperature: 0, system: 's', passages: [], messages: [{ role: 'user', content: 'hello' }], tools: [], timeoutMs: 1000 });

    expect(reply.text).toBeTruthy();
    expect(waits).toEqual([3000, 3000]);
    // Not retryable (a rejected request), or a wait past the deadline: the failure stands at once.
    const rejecting: LlmPort = { name: 'openai', complete: async () => { throw new LlmError('rejected', 'bad request', { provider: 'openai', status: 400 }); } };
    await expect(retryingModel(rejecting, Date.now() + 60_000, async (ms) => { waits.push(ms); }).complete({} as LlmRequest)).rejects.toMatchObject({ reason: 'rejected' });
    const tooLong: LlmPort = { name: 'openai', complete: async () => { throw new LlmError('rate_limited', 'later', { provider: 'openai', status: 429, retryAfterSeconds: 120 }); } };
    await expect(retryingModel(tooLong, Date.now() + 60_000, async (ms) => { waits.push(ms); }).complete({} as LlmRequest)).rejects.toMatchObject({ reason: 'rate_limited' });
    expect(waits).toEqual([3000, 3000]);
  });

  it('runs a test whose model answered 429 once: passed, not an immediate error', async () => {
    const { org, agent } = await shop();
    let failed = false;
    installLlm({
      name: 'local',
      async complete(r) {
        if (!failed) {
          failed = true;
          throw new LlmError('rate_limited', 'slow down', { provider: 'local', status: 429, retryAfterSeconds: 0 });
        }
        return localStep(r);
      },
    });
    await createTest(org, agent.id, orderTest());
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    expect(failed).toBe(true);
    expect((await getRun(org, agent.id, run.id)).results![0]).toMatchObject({ status: 'passed' });
  });
});

describe('linear-time patterns', () => {
  it('refuses a pattern RE2 cannot run at creation (400 naming it) and matches a hostile one in linear time', async () => {
    const bad = CreateAgentTestBody.safeParse({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'reply_matches', pattern: '(?=shipped)' }] });
    expect(bad.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['criteria.0.pattern', expect.stringContaining('RE2 syntax')]]);
    const backref = CreateAgentTestBody.safeParse({ name: 'x', user: { turns: ['hi'] }, criteria: [{ type: 'reply_matches', pattern: '(a)\\1' }] });
    expect(backref.success).toBe(false);

    const { org, agent } = await shop({ begin_message: '' });
    // The local model answers an unknown question with a fixed sentence; the pattern is the classic catastrophic one.
    await createTest(org, agent.id, orderTest({ user: { turns: [`${'a'.repeat(29)}!`] }, tool_mocks: [], criteria: [{ type: 'reply_matches', pattern: '(a+)+$' }, { type: 'reply_matches', pattern: '(?i)DON.T' }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));
    const started = Date.now();
    await runJobs();

    const [result] = (await getRun(org, agent.id, run.id)).results!;
    expect(result!.criteria.map((c) => c.verdict)).toEqual(['failed', 'passed']);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('a gate that holds', () => {
  it('applies the agent\'s require_passing_tests to publish, rollback and published_version null', async () => {
    const { org, agent } = await shop();
    const ungated = await publishVersion(org, agent.id, { description: 'before the gate' });
    await createTest(org, agent.id, orderTest());
    await updateAgent(org, agent.id, UpdateAgentBody.parse({ require_passing_tests: true }));

    // A plain publish is refused; the agent's gate makes it a gated one when the tests pass.
    await expect(publishVersion(org, agent.id, {})).rejects.toMatchObject({ statusCode: 422, details: { reason: 'tests_required' } });
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));
    await runJobs();
    const gated = await publishAgent(org, agent.id, { test_run_id: run.id });
    expect(gated).toMatchObject({ version: 2, test_run_id: run.id });
    expect((await getVersion(org, agent.id, 2)).test_run_id).toBe(run.id);

    // Rollback only to a version a passed run stands behind; never to the untested draft.
    await expect(updateAgent(org, agent.id, UpdateAgentBody.parse({ published_version: ungated.version }))).rejects.toMatchObject({ statusCode: 422, details: { reason: 'tests_required' } });
    await expect(updateAgent(org, agent.id, UpdateAgentBody.parse({ published_version: null }))).rejects.toMatchObject({ statusCode: 422, details: { reason: 'tests_required' } });
    expect((await getAgent(org, agent.id)).published_version).toBe(2);
    // With the gate off again, both are allowed.
    await updateAgent(org, agent.id, UpdateAgentBody.parse({ require_passing_tests: false }));
    expect((await updateAgent(org, agent.id, UpdateAgentBody.parse({ published_version: 1 }))).published_version).toBe(1);
  });

  it('holds expected_published_version on publish and rollback: 409 when it moved, nothing changed', async () => {
    const { org, agent } = await shop();
    await publishVersion(org, agent.id, {});
    await publishVersion(org, agent.id, {});

    await expect(publishAgent(org, agent.id, { expected_published_version: 1 })).rejects.toMatchObject({ statusCode: 409, details: { reason: 'published_version_changed', published_version: 2 } });
    await expect(updateAgent(org, agent.id, UpdateAgentBody.parse({ published_version: 1, expected_published_version: 1 }))).rejects.toMatchObject({ statusCode: 409 });
    expect((await getAgent(org, agent.id)).published_version).toBe(2);

    expect((await updateAgent(org, agent.id, UpdateAgentBody.parse({ published_version: 1, expected_published_version: 2 }))).published_version).toBe(1);
    expect(await publishAgent(org, agent.id, { expected_published_version: 1 })).toMatchObject({ version: 3 });
    // Racing rollbacks with the same precondition: exactly one lands.
    const raced = await Promise.allSettled([1, 2].map((v) => updateAgent(org, agent.id, UpdateAgentBody.parse({ published_version: v, expected_published_version: 3 }))));
    expect(raced.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('runs the tests as they were when the run started (edited and deleted meanwhile), and publishes the frozen draft it tested', async () => {
    const { org, agent } = await shop({ begin_message: 'Hello from the tested draft.' });
    const kept = await createTest(org, agent.id, orderTest({ name: 'kept' }));
    const removed = await createTest(org, agent.id, orderTest({ name: 'removed' }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    // Act: while the run is queued, a test is edited to fail, another deleted, the draft edited.
    await updateTest(org, agent.id, kept.id, UpdateAgentTestBody.parse({ criteria: [{ type: 'reply_contains', text: 'never said' }] }));
    await deleteTest(org, agent.id, removed.id);
    await updateAgent(org, agent.id, UpdateAgentBody.parse({ begin_message: 'An untested edit.' }));
    await runJobs();

    const done = await getRun(org, agent.id, run.id);
    expect(done.summary).toMatchObject({ total: 2, passed: 2 });
    const version = await publishAgent(org, agent.id, { test_run_id: run.id });
    expect(version.config.begin_message).toBe('Hello from the tested draft.');
  });

  it('refuses to publish a run that is not a completed, passed run of every test on the draft', async () => {
    const { org, agent } = await shop();
    const test = await createTest(org, agent.id, orderTest({ criteria: [{ type: 'reply_contains', text: 'never said' }] }));
    const queuedRun = await startRun(org, agent.id, StartTestRunBody.parse({}));
    await expect(publishAgent(org, agent.id, { test_run_id: queuedRun.id })).rejects.toMatchObject({ statusCode: 422, details: { reason: 'run_not_usable' } });
    await runJobs();
    await expect(publishAgent(org, agent.id, { test_run_id: queuedRun.id })).rejects.toMatchObject({ statusCode: 422, details: { reason: 'tests_failed' } });
    const some = await startRun(org, agent.id, StartTestRunBody.parse({ test_ids: [test.id] }));
    await expect(publishAgent(org, agent.id, { test_run_id: some.id })).rejects.toMatchObject({ statusCode: 422, details: { reason: 'run_not_usable' } });
    await expect(publishAgent(org, agent.id, { test_run_id: uuidv7() })).rejects.toMatchObject({ statusCode: 422, details: { reason: 'run_not_usable' } });
    expect((await getAgent(org, agent.id)).published_version).toBeNull();
  });
});

describe('results that say what happened', () => {
  it('lists rejected tool calls, reports a mock for a tool the agent lacks, and fails on unmocked: "fail"', async () => {
    const { org, agent } = await shop();
    // The model calls a tool the agent does not offer, then the unmocked order_status.
    let step = 0;
    installLlm({
      name: 'local',
      async complete(r) {
        step++;
        if (step === 1) return { text: '', toolCalls: [{ id: 'c1', name: 'book_appointment', arguments: '{}' }], usage: { promptTokens: 0, completionTokens: 0 } };
        return localStep(r);
      },
    });
    await createTest(org, agent.id, orderTest({
      user: { turns: ['hello', 'order_status order_id=7'] },
      unmocked: 'fail',
      tool_mocks: [{ tool: 'lookup_order', output: { status: 'shipped' } }],
      criteria: [{ type: 'tool_not_called', tool: 'book_appointment' }],
    }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));

    await runJobs();

    const [result] = (await getRun(org, agent.id, run.id)).results!;
    expect(result!.tool_calls.map((c) => [c.name, c.answered_by])).toEqual([['book_appointment', 'rejected'], ['order_status', 'not_mocked']]);
    expect(result!.tool_calls[0]!.result).toEqual({ error: 'there is no tool named book_appointment' });
    expect(result!.criteria.map((c) => [c.type, c.verdict])).toEqual([['tool_not_called', 'failed'], ['unmocked', 'failed']]);
    expect(result!.status).toBe('failed');
    expect(result!.unused_mocks).toEqual([{ tool: 'lookup_order', reason: 'the agent has no tool named lookup_order' }]);
  });

  it('pages a run\'s results', async () => {
    const { org, agent } = await shop();
    await createTest(org, agent.id, orderTest());
    const run = await startRun(org, agent.id, StartTestRunBody.parse({ repeat: 5 }));
    await runJobs();

    const first = await getRun(org, agent.id, run.id, { results_limit: 2 });
    expect(first.results!.map((r) => r.attempt)).toEqual([1, 2]);
    const second = await getRun(org, agent.id, run.id, { results_limit: 2, results_cursor: first.results_next_cursor! });
    const third = await getRun(org, agent.id, run.id, { results_limit: 2, results_cursor: second.results_next_cursor! });
    expect([...second.results!, ...third.results!].map((r) => r.attempt)).toEqual([3, 4, 5]);
    expect(third.results_next_cursor).toBeNull();
    await expect(getRun(org, agent.id, run.id, { results_cursor: 'garbage' })).rejects.toMatchObject({ statusCode: 400, details: { fields: [{ path: 'results_cursor' }] } });
    expect(await getItem(keys.agentTestRun(org, agent.id, run.id))).not.toHaveProperty('gsi2pk');
  });
});

describe('fairness on the jobs queue', () => {
  it('runs at most the cap of one organization\'s tests at once, defers the rest, and never holds back another organization', async () => {
    // Every conversation waits at the gate until the test lets it go, so slots stay held.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const started: string[] = [];
    installLlm({
      name: 'local',
      async complete(r) {
        started.push(r.system);
        await gate;
        return localStep(r);
      },
    });
    try {
      const big = await shop({ prompt: 'big org' });
      const small = await shop({ prompt: 'small org' });
      // One more than the cap (20) twice over: 22 tests of one organization in one delivery.
      for (let i = 0; i < ORG_JOB_CAP + 2; i++) await createTest(big.org, big.agent.id, orderTest({ name: `big ${i}` }));
      await createTest(small.org, small.agent.id, orderTest({ name: 'small' }));
      const bigRun = await startRun(big.org, big.agent.id, StartTestRunBody.parse({}));
      const bigJobs = queued.take('agent-test-run');
      const smallRun = await startRun(small.org, small.agent.id, StartTestRunBody.parse({}));
      const smallJobs = queued.take('agent-test-run');

      // Act: the big organization's jobs and the small one's in one delivery.
      const batch = deliver(JOB, [...bigJobs, ...smallJobs]);
      for (let i = 0; i < 500 && started.length < ORG_JOB_CAP + 1; i++) await new Promise((r) => setTimeout(r, 10));
      const deferred = () => queued.messages.filter((m) => m.queue === 'agent-test-run').length;
      for (let i = 0; i < 500 && deferred() < 2; i++) await new Promise((r) => setTimeout(r, 10));

      // Assess: the cap of the big organization's tests run, two went back on the queue; the small one runs.
      expect(started.filter((s) => s.includes('big org'))).toHaveLength(ORG_JOB_CAP);
      expect(started.filter((s) => s.includes('small org'))).toHaveLength(1);
      expect(deferred()).toBe(2);
      open();
      await batch;
      for (let round = 0; round < 5 && queued.messages.length; round++) await runJobs();
      expect((await getRun(big.org, big.agent.id, bigRun.id)).summary).toMatchObject({ total: ORG_JOB_CAP + 2, passed: ORG_JOB_CAP + 2 });
      expect((await getRun(small.org, small.agent.id, smallRun.id)).summary).toMatchObject({ total: 1, passed: 1 });
    } finally {
      open();
    }
  });
});

