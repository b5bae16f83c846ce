import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { keys } from '../../shared/db/keys';
import { getItem, queryAll } from '../../shared/db/store';
import { CreateAgentTestBody, StartTestRunBody } from '../../shared/domain/agent-tests/schemas';
import { createTest, startRun } from '../../shared/domain/agent-tests/service';
import { cleanUpAgent, type AgentCleanupMessage } from '../../shared/domain/agents/deletion';
import { CreateAgentBody } from '../../shared/domain/agents/schemas';
import { createAgent, deleteAgent, getAgent } from '../../shared/domain/agents/service';
import { getVersion, publishVersion } from '../../shared/domain/agents/versions';
import { logger } from '../../shared/logger';
import { CapturedQueue, deliver } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/**
 * Deleting an agent is a tombstone and a paged job: the request deletes the agent item with its
 * tombstone in one write and queues agent-cleanup; the job deletes the agent's partition a page per
 * message, then the tombstone. Nothing is left half-deleted when a request or a job dies.
 */
let queued: CapturedQueue;
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
});
afterAll(() => installLocalQueue(undefined));

const partition = async (org: string, agentId: string) => {
  const items: { sk: string }[] = [];
  for await (const i of queryAll<{ sk: string }>({ pkName: 'pk', pkValue: keys.agentPartition(org, agentId) }, ['sk'], true)) items.push(i);
  return items;
};

describe('agent deletion', () => {
  it('answers at once behind a tombstone; the cleanup job empties the partition page by page, then removes the tombstone', async () => {
    // Prepare: versions, tests, a run with its frozen tests.
    const org = uuidv7();
    const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Doomed' }));
    await publishVersion(org, agent.id, {});
    await publishVersion(org, agent.id, {});
    for (const name of ['a', 'b']) await createTest(org, agent.id, CreateAgentTestBody.parse({ name, user: { turns: ['hi'] }, criteria: [{ type: 'ended' }] }));
    await startRun(org, agent.id, StartTestRunBody.parse({}));
    queued.take('agent-test-run');
    const before = (await partition(org, agent.id)).length;
    expect(before).toBe(7); // 2 versions, 2 tests, 1 run, 2 frozen tests

    // Act: the request deletes the agent and its tombstone goes in; nothing else yet.
    await deleteAgent(org, agent.id);

    // Assess
    await expect(getAgent(org, agent.id)).rejects.toMatchObject({ statusCode: 404 });
    await expect(getVersion(org, agent.id, 1)).rejects.toMatchObject({ statusCode: 404, details: { resource: 'Agent' } });
    expect(await getItem(keys.agentDeletion(org, agent.id))).toMatchObject({ agent_id: agent.id });
    const [message] = queued.take('agent-cleanup') as AgentCleanupMessage[];
    expect(message).toEqual({ organization_id: org, agent_id: agent.id });

    // A page of 3 per message: three pages, then the end (numbers, counters, tombstone).
    const steps: string[] = [];
    for (let i = 0; i < 10; i++) {
      const step = await cleanUpAgent(message!, 3);
      steps.push(step);
      if (step === 'done') break;
    }
    expect(steps).toEqual(['more', 'more', 'more', 'done']);
    expect(await partition(org, agent.id)).toEqual([]);
    expect(await getItem(keys.agentDeletion(org, agent.id))).toBeUndefined();
    // Again (a redelivery): nothing to do.
    expect(await cleanUpAgent(message!)).toBe('done');
  });

  it('runs through the queue job: each page queues the next message until done', async () => {
    const org = uuidv7();
    const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Doomed too' }));
    await publishVersion(org, agent.id, {});
    await deleteAgent(org, agent.id);

    for (let i = 0; i < 5; i++) {
      const messages = queued.take('agent-cleanup');
      if (!messages.length) break;
      await deliver('functions/jobs/agent-cleanup.ts', messages);
    }

    expect(await partition(org, agent.id)).toEqual([]);
    expect(await getItem(keys.agentDeletion(org, agent.id))).toBeUndefined();
  });
});
