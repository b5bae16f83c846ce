import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { installTimeSource } from '../../shared/clock';
import { resetConfig } from '../../shared/config';
import { sweepTestRuns } from '../../shared/domain/agent-tests/results';
import { CreateAgentTestBody, StartTestRunBody } from '../../shared/domain/agent-tests/schemas';
import { createTest, getRun, RUN_EXPIRY_MS, startRun } from '../../shared/domain/agent-tests/service';
import { CreateAgentBody } from '../../shared/domain/agents/schemas';
import { createAgent } from '../../shared/domain/agents/service';
import { ensureTable } from '../../shared/local/table';
import { sweepAgentDeletions, CLEANUP_STALE_MS } from '../../shared/domain/agents/deletion';
import { deleteAgent } from '../../shared/domain/agents/service';
import { logger } from '../../shared/logger';
import { CapturedQueue, deliver } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/**
 * No run stays `running` past its expiry: the agent-test sweep gives every test × attempt without
 * a result an `error` result and completes the run (a job that died, or sits in the dead-letter
 * queue). The sweep reads a table-wide index, so this file has a table of its own: runs of other
 * test files, on clocks of their own, are not in it.
 */
const TABLE = `vap-test-testruns-${process.pid}`;
let queued: CapturedQueue;
let now = Date.now();

beforeAll(async () => {
  await ensureTable(process.env.DYNAMODB_ENDPOINT!, TABLE);
  process.env.TABLE_NAME = TABLE;
  resetConfig();
  installTimeSource({ now: () => now });
});
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
});
afterAll(() => {
  installLocalQueue(undefined);
  installTimeSource(undefined);
});

describe('the agent-test sweep', () => {
  it('completes a run whose jobs died once it expires, each missing result an error; a late job changes nothing', async () => {
    // Prepare: two tests; one job runs, the other dies (never delivered).
    const org = uuidv7();
    const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Swept' }));
    for (const name of ['a', 'b']) await createTest(org, agent.id, CreateAgentTestBody.parse({ name, user: { turns: ['hello'] }, criteria: [{ type: 'ended', end_reason: 'user_ended' }] }));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({}));
    const [first, second] = queued.take('agent-test-run');
    await deliver('functions/jobs/agent-test-run.ts', [first]);
    expect((await getRun(org, agent.id, run.id)).status).toBe('running');

    // Act: before the expiry the sweep leaves it; after, it completes it.
    now += RUN_EXPIRY_MS - 60_000;
    expect(await sweepTestRuns()).toEqual({ expired: 0, results: 0 });
    now += 2 * 60_000;
    const swept = await sweepTestRuns();

    // Assess
    expect(swept).toEqual({ expired: 1, results: 1 });
    const done = await getRun(org, agent.id, run.id);
    expect(done).toMatchObject({ status: 'completed', summary: { total: 2, passed: 1, errored: 1 } });
    expect(done.results!.find((r) => r.status === 'error')!.error).toMatch(/^the run expired at .* before this test finished/);
    // The job that finally arrives finds its result written: nothing changes, the sweep finds nothing more.
    await deliver('functions/jobs/agent-test-run.ts', [second]);
    expect((await getRun(org, agent.id, run.id)).summary).toMatchObject({ total: 2, passed: 1, errored: 1 });
    expect(await sweepTestRuns()).toEqual({ expired: 0, results: 0 });
  });

  it('queues again the cleanup of an agent whose message was lost, once its tombstone is 15 minutes old', async () => {
    const org = uuidv7();
    const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Lost' }));
    installLocalQueue({ send: async () => { throw new Error('queue unreachable'); } });
    await deleteAgent(org, agent.id); // the agent is deleted; its cleanup message is lost
    installLocalQueue(queued);

    expect(await sweepAgentDeletions()).toBe(0);
    now += CLEANUP_STALE_MS + 1000;
    expect(await sweepAgentDeletions()).toBe(1);
    expect(queued.take('agent-cleanup')).toEqual([{ organization_id: org, agent_id: agent.id }]);
  });
});
