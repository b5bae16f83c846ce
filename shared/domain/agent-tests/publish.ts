import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { NotFoundError, UnprocessableError } from '../../errors';
import { publishVersion, type AgentVersion } from '../agents/versions';
import type { Agent } from '../agents/schemas';
import { findRun, runResults, startRun, type ResultItem, type RunItem } from './service';

/**
 * Publishing, optionally gated by the agent's tests (docs/api.md, "Publishing gated by tests").
 * A gated publish publishes the frozen draft a passed run of every test tested, never the draft as
 * it is at the end: `require_passing_tests` starts that run and waits for it within the request;
 * `test_run_id` names one that already completed (so a suite slower than the wait can be gated).
 * The agent's own `require_passing_tests` makes every publish gated. A run passes when every result
 * passed and, unless `allow_not_evaluated`, no criterion went unevaluated. API Gateway answers 504
 * at 30 s, so the wait is GATE_WAIT_MS: a suite that has not completed by then is a 422
 * `tests_still_running` naming the run (nothing published; the run goes on and can be named later).
 */

/** How long a gated publish waits for its run (API Gateway's limit is 30 s; the function's timeout 29 s). */
export const GATE_WAIT_MS = 22_000;
const POLL_MS = 150;

export interface PublishInput {
  description?: string;
  require_passing_tests?: boolean;
  test_run_id?: string;
  allow_not_evaluated?: boolean;
  expected_published_version?: number | null;
}

/** Why a completed run does not let its draft go live (a 422), or nothing when it does. */
function refuseUnlessPassed(run: RunItem, results: ResultItem[], allowNotEvaluated: boolean): void {
  const failed = results.filter((r) => r.status !== 'passed');
  if (failed.length) {
    throw new UnprocessableError(`${failed.length} of ${results.length} tests did not pass; nothing was published`, {
      reason: 'tests_failed',
      test_run_id: run.id,
      summary: { total: run.total, passed: run.passed, failed: run.failed, errored: run.errored, not_evaluated: run.not_evaluated ?? 0 },
      failed_tests: failed.map((r) => ({
        test_id: r.test_id,
        test_name: r.test_name,
        attempt: r.attempt,
        status: r.status,
        error: r.error,
        failed_criteria: r.criteria.filter((c) => c.verdict === 'failed' || c.verdict === 'error'),
      })),
    });
  }
  const unjudged = results.filter((r) => (r.not_evaluated ?? []).length);
  if (unjudged.length && !allowNotEvaluated) {
    throw new UnprocessableError(`${unjudged.length} of ${results.length} tests passed with criteria that were not evaluated; nothing was published (publish with allow_not_evaluated to accept them)`, {
      reason: 'tests_not_evaluated',
      test_run_id: run.id,
      not_evaluated_tests: unjudged.map((r) => ({ test_id: r.test_id, test_name: r.test_name, attempt: r.attempt, not_evaluated: r.not_evaluated })),
    });
  }
}

/** The run a publish names, if it can gate one: a completed run of every test on the draft (frozen). */
async function namedRun(orgId: string, agentId: string, runId: string): Promise<RunItem> {
  const run = await findRun(orgId, agentId, runId);
  if (!run) {
    if (!(await getItem(keys.agent(orgId, agentId)))) throw new NotFoundError('Agent', agentId);
    throw new UnprocessableError(`Test run ${runId} is not a run of agent ${agentId}`, { reason: 'run_not_usable', test_run_id: runId });
  }
  const unusable = (why: string) => new UnprocessableError(`Test run ${runId} cannot gate a publish: ${why}`, { reason: 'run_not_usable', test_run_id: runId, status: run.status });
  if (run.agent_version !== null || !run.config) throw unusable(`it tested version ${run.agent_version}, not the draft`);
  if (!run.all_tests) throw unusable('it ran only some of the tests (start one without test_ids)');
  if (run.status !== 'completed') throw unusable(`it is ${run.status}; publish once it has completed`);
  return run;
}

export async function publishAgent(orgId: string, agentId: string, input: PublishInput): Promise<AgentVersion & { test_run_id?: string }> {
  const expected = input.expected_published_version !== undefined ? { expected_published_version: input.expected_published_version } : {};
  if (input.test_run_id) {
    const run = await namedRun(orgId, agentId, input.test_run_id);
    refuseUnlessPassed(run, await runResults(orgId, agentId, run), input.allow_not_evaluated === true);
    return publishVersion(orgId, agentId, { description: input.description, config: run.config, test_run_id: run.id, ...expected });
  }
  const agent = await getItem<Agent>(keys.agent(orgId, agentId));
  if (!agent) throw new NotFoundError('Agent', agentId);
  // The agent's gate makes every publish a gated one.
  if (!input.require_passing_tests && !agent.require_passing_tests) return publishVersion(orgId, agentId, { description: input.description, ...expected });
  const started = await startRun(orgId, agentId, { agent_version: 'draft', repeat: 1 });
  const deadline = Date.now() + GATE_WAIT_MS;
  let run = await findRun(orgId, agentId, started.id);
  while (run && run.status !== 'completed' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    run = await findRun(orgId, agentId, started.id);
  }
  if (!run || run.status !== 'completed') {
    throw new UnprocessableError(`The tests did not complete within ${GATE_WAIT_MS / 1000} s; nothing was published. Read the run, and publish it with test_run_id once it passes`, {
      reason: 'tests_still_running',
      test_run_id: started.id,
    });
  }
  refuseUnlessPassed(run, await runResults(orgId, agentId, run), input.allow_not_evaluated === true);
  return publishVersion(orgId, agentId, { description: input.description, config: run.config, test_run_id: run.id, ...expected });
}
