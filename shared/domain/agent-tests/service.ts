import { v7 as uuidv7 } from 'uuid';
import { collections, keys } from '../../db/keys';
import {
  cappedCounterIncrement,
  ConditionFailed,
  deleteExisting,
  getItem,
  putItems,
  putNew,
  queryAll,
  queryPage,
  readCounter,
  transact,
  updateExisting,
  type PageRequest,
} from '../../db/store';
import { gsi2, shardOf } from '../../db/keys';
import { clockMs } from '../../clock';
import { NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { queue } from '../../adapters/queue';
import { config } from '../../config';
import { listResult } from '../common/list-result';
import { requireSomeField } from '../common/collection';
import type { Agent, AgentVersionPin } from '../agents/schemas';
export { findRun, RUN_EXPIRY_MS, runResults, TEST_RUN_QUEUE, testOfRun, type ResultItem, type RunItem, type TestItem, type TestJob } from './run-items';
import { versionConfig, versionExists } from '../agents/versions';
import { findRun, RUN_EXPIRY_MS, TEST_RUN_QUEUE, type ResultItem, type RunItem, type TestItem, type TestJob } from './run-items';
import { recordErrorResult } from './results';
import {
  MAX_TESTS_PER_AGENT,
  type AgentTest,
  type CreateAgentTestInput,
  type StartTestRunInput,
  type TestResult,
  type TestRun,
  type UpdateAgentTestInput,
} from './schemas';

/**
 * Agent tests and their runs (docs/api.md, "Versions and tests"). Everything lives in the agent's
 * own partition (`ORG#<org>#AGENT#<id>`): `TEST#<id>`, `RUN#<id>` and one `RESULT#<run>#<test>#<attempt>`
 * item per test × attempt, each written once by its queue job (runner.ts) together with the run's
 * counts. The run completes when its `done` count reaches `total`: one conditional write, so
 * `test_run.completed` is published exactly once.
 */

const testView = (item: TestItem): AgentTest => ({
  id: item.id,
  agent_id: item.agent_id,
  name: item.name,
  user: item.user,
  dynamic_variables: item.dynamic_variables ?? {},
  contact: item.contact ?? null,
  tool_mocks: item.tool_mocks ?? [],
  criteria: item.criteria ?? [],
  unmocked: item.unmocked ?? 'refuse',
  created_at: item.created_at,
  updated_at: item.updated_at,
});

export function resultView(item: ResultItem): TestResult {
  const { pk: _pk, sk: _sk, entity: _e, run_id: _r, ...result } = item;
  // Results stored before these members existed.
  return { ...result, not_evaluated: result.not_evaluated ?? [], unused_mocks: result.unused_mocks ?? [], truncated: result.truncated ?? false };
}

export function runView(item: RunItem, results?: ResultItem[], resultsNextCursor?: string | null): TestRun {
  return {
    id: item.id,
    agent_id: item.agent_id,
    agent_version: item.agent_version,
    status: item.status,
    test_ids: item.test_ids,
    repeat: item.repeat,
    ...(results ? { results: results.map(resultView), results_next_cursor: resultsNextCursor ?? null } : {}),
    summary: { total: item.total, passed: item.passed ?? 0, failed: item.failed ?? 0, errored: item.errored ?? 0, not_evaluated: item.not_evaluated ?? 0 },
    expires_at: item.expires_at ?? new Date(Date.parse(item.created_at) + RUN_EXPIRY_MS).toISOString(),
    notices: item.notices ?? [],
    created_at: item.created_at,
    started_at: item.started_at ?? null,
    completed_at: item.completed_at ?? null,
  } as TestRun;
}

async function agentOr404(orgId: string, agentId: string): Promise<Agent & { published_version?: number | null }> {
  const agent = await getItem<Agent>(keys.agent(orgId, agentId));
  if (!agent) throw new NotFoundError('Agent', agentId);
  return agent;
}

const agentGuard = (orgId: string, agentId: string) => ({ key: keys.agent(orgId, agentId), onFail: () => new NotFoundError('Agent', agentId) });

export async function createTest(orgId: string, agentId: string, input: CreateAgentTestInput): Promise<AgentTest> {
  const now = new Date().toISOString();
  const id = uuidv7();
  const item: TestItem = {
    ...keys.agentTest(orgId, agentId, id),
    entity: 'AGENT_TEST',
    organization_id: orgId,
    id,
    agent_id: agentId,
    name: input.name,
    user: input.user,
    dynamic_variables: input.dynamic_variables ?? {},
    contact: input.contact ?? null,
    tool_mocks: input.tool_mocks ?? [],
    criteria: input.criteria,
    unmocked: input.unmocked ?? 'refuse',
    created_at: now,
    updated_at: now,
  };
  try {
    await transact([putNew({ ...item }), cappedCounterIncrement(orgId, collections.agentTests(agentId), MAX_TESTS_PER_AGENT)], [], [agentGuard(orgId, agentId)]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new UnprocessableError(`An agent has at most ${MAX_TESTS_PER_AGENT} tests`, { reason: 'too_many_tests', agent_id: agentId });
    throw err;
  }
  return testView(item);
}

async function testOr404(orgId: string, agentId: string, testId: string): Promise<TestItem> {
  const item = await getItem<TestItem>(keys.agentTest(orgId, agentId, testId));
  if (!item) {
    await agentOr404(orgId, agentId);
    throw new NotFoundError('Test', testId);
  }
  return item;
}

export async function getTest(orgId: string, agentId: string, testId: string): Promise<AgentTest> {
  return testView(await testOr404(orgId, agentId, testId));
}

export async function listTests(orgId: string, agentId: string, query: PageRequest) {
  await agentOr404(orgId, agentId);
  const [page, total] = await Promise.all([
    queryPage<TestItem>({ pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentTestPrefix }, query),
    readCounter(orgId, collections.agentTests(agentId)),
  ]);
  return listResult({ items: page.items.map(testView), nextCursor: page.nextCursor }, total, query);
}

export async function updateTest(orgId: string, agentId: string, testId: string, input: UpdateAgentTestInput): Promise<AgentTest> {
  requireSomeField(input);
  try {
    await transact([updateExisting(keys.agentTest(orgId, agentId, testId), { ...input, updated_at: new Date().toISOString() })]);
  } catch (err) {
    if (err instanceof ConditionFailed) await testOr404(orgId, agentId, testId);
    throw err;
  }
  return getTest(orgId, agentId, testId);
}

export async function deleteTest(orgId: string, agentId: string, testId: string): Promise<void> {
  try {
    await transact([deleteExisting(keys.agentTest(orgId, agentId, testId))], [{ orgId, collection: collections.agentTests(agentId), delta: -1 }]);
  } catch (err) {
    if (err instanceof ConditionFailed) await testOr404(orgId, agentId, testId);
    throw err;
  }
}

/** True when the platform's conversation model is the local one (no persona, no judge): from configuration, as the API function never loads the model. */
export const isLocalModel = () => config().llm.provider !== 'openai';

export const LOCAL_JUDGE_NOTICE = 'judge criteria are not_evaluated: the local model cannot judge a transcript (set LLM_PROVIDER=openai and LLM_BASE_URL)';
export const LOCAL_PERSONA_ERROR = 'persona tests need a language model to play the user: set LLM_PROVIDER=openai and LLM_BASE_URL (the local model cannot play a persona)';

/**
 * Starts a run: the run item (`queued`; a draft run keeps a frozen copy of the draft) and one job
 * per test × attempt. `test_ids` default to every test of the agent; a test that is not the
 * agent's is a 400 naming it; an agent with no tests is a 422.
 */
export async function startRun(orgId: string, agentId: string, input: StartTestRunInput): Promise<TestRun> {
  const agent = await agentOr404(orgId, agentId);
  const pin: AgentVersionPin = input.agent_version ?? 'draft';
  if (typeof pin === 'number' && !(await versionExists(orgId, agentId, pin))) throw ValidationError.field('agent_version', `agent ${agentId} has no version ${pin}`);
  let tests: TestItem[];
  if (input.test_ids) {
    const unique = [...new Set(input.test_ids)];
    const found = await Promise.all(unique.map((id) => getItem<TestItem>(keys.agentTest(orgId, agentId, id))));
    const missing = unique.map((id, i) => (found[i] ? undefined : { path: `test_ids.${input.test_ids!.indexOf(id)}`, message: `test ${id} is not a test of agent ${agentId}` })).filter((x) => !!x);
    if (missing.length) throw new ValidationError(`Validation failed: ${missing.map((m) => `${m.path} ${m.message}`).join('; ')}`, missing);
    tests = found as TestItem[];
  } else {
    tests = [];
    for await (const t of queryAll<TestItem>({ pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentTestPrefix }, undefined, true)) tests.push(t);
    if (!tests.length) throw new UnprocessableError('The agent has no tests to run; create one with POST /agents/{id}/tests', { reason: 'no_tests', agent_id: agentId });
  }
  const notices: string[] = [];
  if (isLocalModel()) {
    if (tests.some((t) => (t.criteria ?? []).some((c) => c.type === 'judge'))) notices.push(LOCAL_JUDGE_NOTICE);
    if (tests.some((t) => 'persona' in t.user)) notices.push(`persona tests end in error: ${LOCAL_PERSONA_ERROR}`);
  }
  const nowMs = clockMs();
  const now = new Date(nowMs).toISOString();
  const expiresAt = new Date(nowMs + RUN_EXPIRY_MS).toISOString();
  const id = uuidv7();
  const repeat = input.repeat ?? 1;
  const item: RunItem = {
    ...keys.agentTestRun(orgId, agentId, id),
    entity: 'AGENT_TEST_RUN',
    id,
    organization_id: orgId,
    agent_id: agentId,
    agent_name: agent.name,
    agent_version: pin === 'draft' ? null : pin,
    ...(pin === 'draft' ? { config: versionConfig(agent as unknown as Record<string, unknown>) } : {}),
    status: 'queued',
    test_ids: tests.map((t) => t.id),
    repeat,
    total: tests.length * repeat,
    done: 0,
    passed: 0,
    failed: 0,
    errored: 0,
    not_evaluated: 0,
    all_tests: !input.test_ids,
    frozen_tests: true,
    expires_at: expiresAt,
    notices,
    created_at: now,
    started_at: null,
    completed_at: null,
  };
  // The tests as they are now, copied into the run first: a test edited or deleted meanwhile does not change what the run tests.
  await putItems(tests.map((t) => ({ ...t, ...keys.agentTestRunTest(orgId, agentId, id, t.id), entity: 'AGENT_TEST_RUN_TEST', run_id: id })));
  const openEntry = { gsi2pk: gsi2.testRunsOpen(shardOf(id)), gsi2sk: gsi2.testRunOpenEntry(expiresAt, orgId, agentId, id) };
  await transact([putNew({ ...item, ...openEntry })], [{ orgId, collection: collections.agentTestRuns(agentId), delta: 1 }], [agentGuard(orgId, agentId)]);
  const jobs: TestJob[] = tests.flatMap((t) => Array.from({ length: repeat }, (_, a) => ({ organization_id: orgId, agent_id: agentId, run_id: id, test_id: t.id, attempt: a + 1 })));
  // A job that cannot be queued is recorded at once as an `error` result, so the run still ends.
  const unqueued: { job: TestJob; error: string }[] = [];
  for (let i = 0; i < jobs.length; i += 25) {
    await Promise.all(jobs.slice(i, i + 25).map((job) => queue().send(TEST_RUN_QUEUE, job).catch((err: unknown) => {
      unqueued.push({ job, error: (err as Error).message });
    })));
  }
  if (unqueued.length) {
    for (const { job, error } of unqueued) {
      const test = tests.find((t) => t.id === job.test_id);
      await recordErrorResult(job, test, `the test's job could not be queued: ${error}`);
    }
  }
  return runView(item, []);
}

/** A run with one page of its results (test id order, then attempt): `results_limit` (default 20), `results_cursor`. */
export async function getRun(orgId: string, agentId: string, runId: string, page: { results_limit?: number; results_cursor?: string } = {}): Promise<TestRun> {
  const run = await findRun(orgId, agentId, runId);
  if (!run) {
    await agentOr404(orgId, agentId);
    throw new NotFoundError('Test run', runId);
  }
  const q = { pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentTestResultPrefix(run.id) };
  let results: Awaited<ReturnType<typeof queryPage<ResultItem>>>;
  try {
    results = await queryPage<ResultItem>(q, { limit: page.results_limit ?? 20, ...(page.results_cursor ? { cursor: page.results_cursor } : {}) });
  } catch (err) {
    if (err instanceof ValidationError) throw ValidationError.field('results_cursor', 'is not a cursor returned for this run\'s results');
    throw err;
  }
  return runView(run, results.items, results.nextCursor);
}

/** Runs, newest first, without their results (GET one for those). */
export async function listRuns(orgId: string, agentId: string, query: PageRequest) {
  await agentOr404(orgId, agentId);
  const [page, total] = await Promise.all([
    queryPage<RunItem>({ pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentTestRunPrefix, descending: true }, query),
    readCounter(orgId, collections.agentTestRuns(agentId)),
  ]);
  return listResult({ items: page.items.map((r) => runView(r)), nextCursor: page.nextCursor }, total, query);
}
