import { gsi2, keys, SWEEP_SHARDS } from '../../db/keys';
import { addToExisting, ConditionFailed, getItem, MAX_ITEM_BYTES, putNew, queryPage, storedBytes, transact, updateExisting, type TransactItem } from '../../db/store';
import { clockMs } from '../../clock';
import { logger } from '../../logger';
import { dispatchEvents, newEvent } from '../events/publish';
import { findRun, RUN_EXPIRY_MS, runResults, testOfRun, type RunItem, type TestItem, type TestJob } from './run-items';
import type { TestResult } from './schemas';

/**
 * Where a run's results are written and where the run ends. Every result is one item written once
 * (its key is the job's) in the same transaction as the run's counts; the write that brings `done`
 * to `total` is followed by the run's completion, one conditional write with `test_run.completed`.
 * Every path ends a run: a job that could not be queued, a test past its deadline, a job that keeps
 * failing and a run past its expiry each become an `error` result.
 */

/** What a result may take of its item (the rest: keys, names, counts). */
export const MAX_RESULT_BYTES = MAX_ITEM_BYTES - 16 * 1024;
/** A tool result or message kept whole up to this many characters when a result must shrink. */
const SHRUNK_TEXT = 2_000;

const shorten = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters cut so the result fits one item]` : text);

/**
 * The result as it can be stored: when it would pass an item's size, tool results become their
 * JSON cut to 2,000 characters, then transcript messages are cut, then the middle of the transcript
 * is dropped; `truncated` says so. Criteria and their verdicts are always kept whole.
 */
export function fitResult(result: TestResult, maxBytes = MAX_RESULT_BYTES): TestResult {
  if (storedBytes(result) <= maxBytes) return result;
  const fitted: TestResult = {
    ...result,
    truncated: true,
    tool_calls: result.tool_calls.map((c) => {
      const json = JSON.stringify(c.result ?? null);
      return json.length > SHRUNK_TEXT ? { ...c, result: shorten(json, SHRUNK_TEXT) } : c;
    }),
  };
  if (storedBytes(fitted) <= maxBytes) return fitted;
  fitted.transcript = fitted.transcript.map((m) => ({ ...m, content: shorten(m.content, SHRUNK_TEXT) }));
  fitted.tool_calls = fitted.tool_calls.map((c) => ({ ...c, arguments: storedBytes(c.arguments) > SHRUNK_TEXT ? { cut: shorten(JSON.stringify(c.arguments), SHRUNK_TEXT) } : c.arguments }));
  while (storedBytes(fitted) > maxBytes && fitted.transcript.length > 2) {
    const middle = Math.floor(fitted.transcript.length / 2);
    fitted.transcript = [...fitted.transcript.slice(0, middle), ...fitted.transcript.slice(middle + 1)];
  }
  while (storedBytes(fitted) > maxBytes && fitted.tool_calls.length > 1) fitted.tool_calls = fitted.tool_calls.slice(0, -1);
  return fitted;
}

/**
 * Stores a result with the run's counts, once: false when it was stored before (a redelivered
 * job) or the run is gone. A conflict with another transaction is retried by the store, never
 * taken for "stored".
 */
export async function storeResult(job: TestJob, result: TestResult, also: TransactItem[] = []): Promise<boolean> {
  const fitted = fitResult(result);
  const resultKey = keys.agentTestResult(job.organization_id, job.agent_id, job.run_id, `${job.test_id}#${job.attempt}`);
  const counts = {
    done: 1,
    passed: fitted.status === 'passed' ? 1 : 0,
    failed: fitted.status === 'failed' ? 1 : 0,
    errored: fitted.status === 'error' ? 1 : 0,
    not_evaluated: fitted.not_evaluated.length ? 1 : 0,
  };
  try {
    await transact([
      putNew({ ...resultKey, entity: 'AGENT_TEST_RESULT', run_id: job.run_id, ...fitted }),
      addToExisting(keys.agentTestRun(job.organization_id, job.agent_id, job.run_id), counts),
      ...also,
    ]);
    return true;
  } catch (err) {
    if (err instanceof ConditionFailed) return false; // stored by an earlier delivery, or the run was deleted
    throw err;
  }
}

/** An `error` result for a test × attempt that could not run, its criteria `not_evaluated` (not_run). */
export function errorResult(job: TestJob, test: TestItem | undefined, error: string, durationMs = 0): TestResult {
  const criteria = (test?.criteria ?? []).map((c) => ({ ...c, verdict: 'not_evaluated' as const, detail: 'the test did not run' }));
  return {
    test_id: job.test_id,
    test_name: test?.name ?? '',
    attempt: job.attempt,
    status: 'error',
    transcript: [],
    tool_calls: [],
    end_reason: null,
    criteria,
    usage: { llm_requests: 0, prompt_tokens: 0, completion_tokens: 0 },
    error,
    not_evaluated: criteria.map((c, i) => ({ criterion: i, type: c.type, reason: 'not_run' as const, detail: 'the test did not run' })),
    unused_mocks: [],
    truncated: false,
    duration_ms: Math.max(0, Math.round(durationMs)),
    completed_at: new Date(clockMs()).toISOString(),
  };
}

/** Records an `error` result for a job that will not run (not queued, expired), then completes the run when it was the last. */
export async function recordErrorResult(job: TestJob, test: TestItem | undefined, error: string): Promise<void> {
  await storeResult(job, errorResult(job, test, error));
  await completeRun(job);
}

/** Completes the run when every result is in: one conditional write with the event, so exactly once. */
export async function completeRun(job: Pick<TestJob, 'organization_id' | 'agent_id' | 'run_id'>): Promise<void> {
  const run = await findRun(job.organization_id, job.agent_id, job.run_id);
  if (!run || run.status === 'completed' || run.done < run.total) return;
  const results = await runResults(job.organization_id, job.agent_id, run);
  const now = new Date(clockMs()).toISOString();
  const failedTests = results.filter((r) => r.status !== 'passed').map((r) => ({ test_id: r.test_id, test_name: r.test_name, attempt: r.attempt, status: r.status }));
  const event = newEvent(job.organization_id, 'test_run.completed', {
    test_run: {
      id: run.id,
      agent_id: run.agent_id,
      agent_version: run.agent_version,
      status: 'completed',
      summary: { total: run.total, passed: run.passed, failed: run.failed, errored: run.errored, not_evaluated: run.not_evaluated ?? 0 },
      failed_tests: failedTests,
      notices: run.notices ?? [],
      started_at: run.started_at,
      completed_at: now,
    },
  });
  try {
    await transact([
      updateExisting(keys.agentTestRun(job.organization_id, job.agent_id, job.run_id), { status: 'completed', completed_at: now }, {
        // The run leaves the sweep's index of open runs.
        remove: ['gsi2pk', 'gsi2sk'],
        condition: '#done = #total AND #st <> :c',
        names: { '#done': 'done', '#total': 'total', '#st': 'status' },
        values: { ':c': 'completed' },
      }),
      event.write,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) return; // completed by another job
    throw err;
  }
  logger.info('Test run completed', { run_id: run.id, passed: run.passed, failed: run.failed, errored: run.errored });
  await dispatchEvents([event.event]);
}

/** The jobs (test × attempt) a run consists of. */
export const jobsOfRun = (run: RunItem): TestJob[] =>
  run.test_ids.flatMap((testId) => Array.from({ length: run.repeat }, (_, a) => ({ organization_id: run.organization_id, agent_id: run.agent_id, run_id: run.id, test_id: testId, attempt: a + 1 })));

/** When the run expires (runs from before expiries: RUN_EXPIRY_MS after creation). */
export const expiryOf = (run: RunItem): number => (run.expires_at ? Date.parse(run.expires_at) : Date.parse(run.created_at) + RUN_EXPIRY_MS);

/** True when the run is not completed and its expiry has come. */
export const runExpired = (run: RunItem, nowMs = clockMs()) => run.status !== 'completed' && expiryOf(run) <= nowMs;

/**
 * Completes a run past its expiry: every test × attempt without a result gets an `error` result
 * (its job died, sits in the dead-letter queue, or is still waiting), then the run completes.
 */
export async function expireRun(run: RunItem): Promise<number> {
  const have = new Set((await runResults(run.organization_id, run.agent_id, run)).map((r) => `${r.test_id}#${r.attempt}`));
  let recorded = 0;
  for (const job of jobsOfRun(run)) {
    if (have.has(`${job.test_id}#${job.attempt}`)) continue;
    const test = await testOfRun(run, job.test_id);
    if (await storeResult(job, errorResult(job, test, `the run expired at ${new Date(expiryOf(run)).toISOString()} before this test finished (its job never ran to the end)`))) recorded++;
  }
  await completeRun(job0(run));
  return recorded;
}

const job0 = (run: RunItem) => ({ organization_id: run.organization_id, agent_id: run.agent_id, run_id: run.id });

/** The test-run sweep: completes every open run whose expiry has come (the index of open runs, never a Scan). */
export async function sweepTestRuns(nowMs = clockMs()): Promise<{ expired: number; results: number }> {
  const cutoff = new Date(nowMs).toISOString();
  let expired = 0;
  let results = 0;
  for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
    let cursor: string | undefined;
    do {
      const page = await queryPage<{ pk: string; sk: string }>({ index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.testRunsOpen(shard), skName: 'gsi2sk', skBelow: cutoff }, { limit: 25, ...(cursor ? { cursor } : {}) });
      for (const entry of page.items) {
        const run = await getItem<RunItem>({ pk: entry.pk, sk: entry.sk });
        if (!run || !runExpired(run, nowMs)) continue;
        results += await expireRun(run);
        expired++;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return { expired, results };
}
