import { UnprocessableError } from '../../errors';
import { publishVersion, type AgentVersion } from '../agents/versions';
import { findRun, runResults, startRun } from './service';

/**
 * Publishing, optionally gated by the agent's tests (docs/api.md, "Versions and tests").
 * `require_passing_tests` starts a run of every test on the draft (frozen in the run), waits for it
 * within the request, and publishes that frozen draft only when every test passed. API Gateway
 * answers 504 at 30 s, so the wait is GATE_WAIT_MS: a suite that has not completed by then is a
 * 422 `tests_still_running` naming the run (nothing published; the run goes on and can be read).
 * Tests run in parallel through the queue, so a suite of scripted tests on the local model completes
 * well within it; for long suites, run them with POST /test-runs and publish when they pass.
 */

/** How long a gated publish waits for its run (API Gateway's limit is 30 s; the function's timeout 29 s). */
export const GATE_WAIT_MS = 22_000;
const POLL_MS = 150;

export async function publishAgent(
  orgId: string,
  agentId: string,
  input: { description?: string; require_passing_tests?: boolean },
): Promise<AgentVersion & { test_run_id?: string }> {
  if (!input.require_passing_tests) return publishVersion(orgId, agentId, { description: input.description });
  const started = await startRun(orgId, agentId, { agent_version: 'draft', repeat: 1 });
  const deadline = Date.now() + GATE_WAIT_MS;
  let run = await findRun(orgId, agentId, started.id);
  while (run && run.status !== 'completed' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    run = await findRun(orgId, agentId, started.id);
  }
  if (!run || run.status !== 'completed') {
    throw new UnprocessableError(`The tests did not complete within ${GATE_WAIT_MS / 1000} s; nothing was published. Read the run, and publish once it passes`, {
      reason: 'tests_still_running',
      test_run_id: started.id,
    });
  }
  const results = await runResults(orgId, agentId, run);
  const failed = results.filter((r) => r.status !== 'passed');
  if (failed.length) {
    throw new UnprocessableError(`${failed.length} of ${results.length} tests did not pass; nothing was published`, {
      reason: 'tests_failed',
      test_run_id: run.id,
      summary: { total: run.total, passed: run.passed, failed: run.failed, errored: run.errored },
      failed_tests: failed.map((r) => ({
        test_id: r.test_id,
        test_name: r.test_name,
        status: r.status,
        error: r.error,
        failed_criteria: r.criteria.filter((c) => c.verdict === 'failed'),
      })),
    });
  }
  const version = await publishVersion(orgId, agentId, { description: input.description, config: run.config });
  return { ...version, test_run_id: run.id };
}
