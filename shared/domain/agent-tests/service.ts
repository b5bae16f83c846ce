import { v7 as uuidv7 } from 'uuid';
import { collections, keys } from '../../db/keys';
import {
  cappedCounterIncrement,
  ConditionFailed,
  deleteExisting,
  getItem,
  putNew,
  queryAll,
  queryPage,
  readCounter,
  transact,
  updateExisting,
  type PageRequest,
} from '../../db/store';
import { NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { queue } from '../../adapters/queue';
import { config } from '../../config';
import { listResult } from '../common/list-result';
import { requireSomeField } from '../common/collection';
import type { Agent, AgentVersionPin } from '../agents/schemas';
import { versionConfig, versionExists, type VersionConfig } from '../agents/versions';
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

/** The queue of test jobs: one message per test × attempt. */
export const TEST_RUN_QUEUE = 'agent-test-run';

export interface TestItem extends AgentTest {
  pk: string;
  sk: string;
  entity: 'AGENT_TEST';
  organization_id: string;
}

export interface RunItem {
  pk: string;
  sk: string;
  entity: 'AGENT_TEST_RUN';
  id: string;
  organization_id: string;
  agent_id: string;
  /** The agent's name when the run started (a draft run's conversations use it). */
  agent_name: string;
  agent_version: number | null;
  /** A draft run's frozen copy of the draft: every job runs the same agent, and a gated publish publishes exactly it. */
  config?: VersionConfig;
  status: TestRun['status'];
  test_ids: string[];
  repeat: number;
  total: number;
  done: number;
  passed: number;
  failed: number;
  errored: number;
  notices: string[];
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

export interface ResultItem extends TestResult {
  pk: string;
  sk: string;
  entity: 'AGENT_TEST_RESULT';
  run_id: string;
}

/** The job message of one test × attempt. */
export interface TestJob {
  organization_id: string;
  agent_id: string;
  run_id: string;
  test_id: string;
  attempt: number;
}

const testView = (item: TestItem): AgentTest => ({
  id: item.id,
  agent_id: item.agent_id,
  name: item.name,
  user: item.user,
  dynamic_variables: item.dynamic_variables ?? {},
  contact: item.contact ?? null,
  tool_mocks: item.tool_mocks ?? [],
  criteria: item.criteria ?? [],
  created_at: item.created_at,
  updated_at: item.updated_at,
});

export function resultView(item: ResultItem): TestResult {
  const { pk: _pk, sk: _sk, entity: _e, run_id: _r, ...result } = item;
  return result;
}

export function runView(item: RunItem, results?: ResultItem[]): TestRun {
  return {
    id: item.id,
    agent_id: item.agent_id,
    agent_version: item.agent_version,
    status: item.status,
    test_ids: item.test_ids,
    repeat: item.repeat,
    ...(results ? { results: results.map(resultView) } : {}),
    summary: { total: item.total, passed: item.passed ?? 0, failed: item.failed ?? 0, errored: item.errored ?? 0 },
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
    criteria: input.criteria ?? [],
    created_at: now,
    updated_at: now,
  };
  try {
    await transact([putNew({ ...item }), cappedCounterIncrement(orgId, collections.agentTests(agentId), MAX_TESTS_PER_AGENT)], [], [agentGuard(orgId, agentId)]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new UnprocessableError(`An agent has at most ${MAX_TESTS_PER_AGENT} tests`, { agent_id: agentId });
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
    if (!tests.length) throw new UnprocessableError('The agent has no tests to run; create one with POST /agents/{id}/tests', { agent_id: agentId });
  }
  const notices: string[] = [];
  if (isLocalModel()) {
    if (tests.some((t) => (t.criteria ?? []).some((c) => c.type === 'judge'))) notices.push(LOCAL_JUDGE_NOTICE);
    if (tests.some((t) => 'persona' in t.user)) notices.push(`persona tests end in error: ${LOCAL_PERSONA_ERROR}`);
  }
  const now = new Date().toISOString();
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
    notices,
    created_at: now,
    started_at: null,
    completed_at: null,
  };
  await transact([putNew({ ...item })], [{ orgId, collection: collections.agentTestRuns(agentId), delta: 1 }], [agentGuard(orgId, agentId)]);
  const jobs: TestJob[] = tests.flatMap((t) => Array.from({ length: repeat }, (_, a) => ({ organization_id: orgId, agent_id: agentId, run_id: id, test_id: t.id, attempt: a + 1 })));
  // A job that cannot be queued leaves the run short of `total`: say so rather than wait forever.
  for (let i = 0; i < jobs.length; i += 25) await Promise.all(jobs.slice(i, i + 25).map((job) => queue().send(TEST_RUN_QUEUE, job)));
  return runView(item, []);
}

/** The run item (consistent read), or undefined. */
export function findRun(orgId: string, agentId: string, runId: string): Promise<RunItem | undefined> {
  return getItem<RunItem>(keys.agentTestRun(orgId, agentId, runId));
}

/** A run's results, in test order then attempt. */
export async function runResults(orgId: string, agentId: string, run: RunItem): Promise<ResultItem[]> {
  const results: ResultItem[] = [];
  for await (const r of queryAll<ResultItem>({ pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentTestResultPrefix(run.id) }, undefined, true)) results.push(r);
  const order = new Map(run.test_ids.map((id, i) => [id, i]));
  return results.sort((a, b) => (order.get(a.test_id) ?? 0) - (order.get(b.test_id) ?? 0) || a.attempt - b.attempt);
}

export async function getRun(orgId: string, agentId: string, runId: string): Promise<TestRun> {
  const run = await findRun(orgId, agentId, runId);
  if (!run) {
    await agentOr404(orgId, agentId);
    throw new NotFoundError('Test run', runId);
  }
  return runView(run, await runResults(orgId, agentId, run));
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
