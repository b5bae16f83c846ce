import { keys } from '../../db/keys';
import { getItem, queryAll } from '../../db/store';
import type { VersionConfig } from '../agents/versions';
import type { AgentTest, TestResult, TestRun } from './schemas';

/**
 * The stored shapes of agent tests, runs and results, and the reads every part of a run shares
 * (the API, the queue job, the sweep): one module below the service and the result writer.
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
  /** Results with at least one criterion not evaluated. */
  not_evaluated?: number;
  /** True when the run is of every test the agent had (a publish may name only such a run). */
  all_tests?: boolean;
  /** True when the run's tests were copied into it at its start (RUNTEST items): jobs read the copies. */
  frozen_tests?: boolean;
  /** When the sweep completes whatever is missing (each missing result an `error`). */
  expires_at?: string;
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

/** A test × attempt's deadline (the job's function has 900 s): past it the test is an `error` result. */
export const TEST_DEADLINE_MS = 10 * 60 * 1000;

/** How long a run may take before the sweep completes it (each missing result an `error`): jobs of 15 minutes at most, queued behind others. */
export const RUN_EXPIRY_MS = 2 * 60 * 60 * 1000;

/** The run item (consistent read), or undefined. */
export function findRun(orgId: string, agentId: string, runId: string): Promise<RunItem | undefined> {
  return getItem<RunItem>(keys.agentTestRun(orgId, agentId, runId));
}

/** The test a run's job runs: the run's frozen copy (runs started before copies existed: the live test). */
export async function testOfRun(run: RunItem, testId: string): Promise<TestItem | undefined> {
  if (run.frozen_tests) return getItem<TestItem>(keys.agentTestRunTest(run.organization_id, run.agent_id, run.id, testId));
  return getItem<TestItem>(keys.agentTest(run.organization_id, run.agent_id, testId));
}

/** A run's results, in test order then attempt. */
export async function runResults(orgId: string, agentId: string, run: RunItem): Promise<ResultItem[]> {
  const results: ResultItem[] = [];
  for await (const r of queryAll<ResultItem>({ pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentTestResultPrefix(run.id) }, undefined, true)) results.push(r);
  const order = new Map(run.test_ids.map((id, i) => [id, i]));
  return results.sort((a, b) => (order.get(a.test_id) ?? 0) - (order.get(b.test_id) ?? 0) || a.attempt - b.attempt);
}
