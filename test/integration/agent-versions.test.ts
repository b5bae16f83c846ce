import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { keys, Prefix } from '../../shared/db/keys';
import { getItem, queryAll } from '../../shared/db/store';
import { createAgent, updateAgent } from '../../shared/domain/agents/service';
import { clearVersionCache, getVersion, listVersions, publishVersion } from '../../shared/domain/agents/versions';
import { createTest, getRun, startRun } from '../../shared/domain/agent-tests/service';
import { CreateAgentTestBody, StartTestRunBody } from '../../shared/domain/agent-tests/schemas';
import type { CallItem } from '../../shared/domain/calls/service';
import { createCall } from '../../shared/domain/calls/service';
import { installCampaignDialer } from '../../shared/domain/campaigns/dialer';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { createCampaign, getCampaign, startCampaign } from '../../shared/domain/campaigns/service';
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { createContact } from '../../shared/domain/contacts/service';
import { ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';
import { operations } from '../../shared/http/registry';
import { logger } from '../../shared/logger';
import { CapturedQueue, deliver } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/**
 * Agent versions and test runs against DynamoDB Local: a version never changes, racing publishes
 * get distinct numbers, a campaign keeps the version it started with, and a run completes (and
 * publishes test_run.completed) exactly once however its jobs are delivered.
 */
let queued: CapturedQueue;
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
  installCampaignDialer(undefined);
});
afterAll(() => installLocalQueue(undefined));

const randomPhone = (prefix: string) => {
  for (;;) {
    const n = tryNormalizeE164(`${prefix}${Math.floor(200_000 + Math.random() * 700_000)}1`);
    if (n) return n;
  }
};

describe('agent versions', () => {
  it('never change: a later draft edit and publish leave version 1 as it was', async () => {
    // Prepare
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'Desk', prompt: 'first prompt', begin_message: 'Hi v1' } as never);
    const v1 = await publishVersion(org, agent.id, { description: 'one' });

    // Act
    await updateAgent(org, agent.id, { prompt: 'second prompt', begin_message: 'Hi v2', temperature: 0.1 } as never);
    const v2 = await publishVersion(org, agent.id, {});
    clearVersionCache();

    // Assess: read from the table, not from memory.
    const again = await getVersion(org, agent.id, 1);
    expect(again).toEqual(v1);
    expect(again.config).toMatchObject({ prompt: 'first prompt', begin_message: 'Hi v1', temperature: 0.7 });
    expect(v2.config).toMatchObject({ prompt: 'second prompt', begin_message: 'Hi v2', temperature: 0.1 });
    // Every conversation-shaping field is frozen, the typed outcomes' included; identity is not.
    expect(Object.keys(again.config)).toEqual(expect.arrayContaining(['prompt', 'model', 'voice_id', 'selected_tools', 'knowledge_base', 'analysis_fields', 'success_criteria', 'post_call_analysis_model']));
    expect(again.config).not.toHaveProperty('name');
    expect(again.config).not.toHaveProperty('status');
    // No operation writes a version once published.
    const writes = operations.filter((op) => op.path.startsWith('/api/v1/agents/{id}/versions') && op.method !== 'GET');
    expect(writes.map((op) => `${op.method} ${op.path}`)).toEqual(['POST /api/v1/agents/{id}/versions']);
  });

  it('gives racing publishes distinct numbers', async () => {
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'Racer' } as never);

    const published = await Promise.all(Array.from({ length: 6 }, (_, i) => publishVersion(org, agent.id, { description: `p${i}` })));

    expect(published.map((v) => v.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    const list = await listVersions(org, agent.id, { limit: 10, offset: 0 });
    expect(list.meta.total).toBe(6);
    expect(list.items.map((v) => v.version)).toEqual([6, 5, 4, 3, 2, 1]);
    expect((await getItem<{ published_version: number }>(keys.agent(org, agent.id)))!.published_version).toBe(6);
  });

  it('keeps a campaign on the version it started with after a newer one is published', async () => {
    // Prepare: version 1, a campaign of two contacts started on it.
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'Caller', begin_message: 'Calling from v1', ring_duration_ms: 1000, max_call_duration_ms: 60_000 } as never);
    await publishVersion(org, agent.id, {});
    const number = await importPhoneNumber(org, ImportBody.parse({ phone: randomPhone('+1415'), type: 'pstn' }));
    const contacts = await Promise.all([createContact(org, { first_name: 'Ada', phone: randomPhone('+1646') }), createContact(org, { first_name: 'Bo', phone: randomPhone('+1646') })]);
    const campaign = await createCampaign(org, CreateCampaignBody.parse({
      name: 'Calls', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: contacts.map((c) => c.id),
      schedule: { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 2 },
    }));
    expect(campaign.agent_version).toBeNull();
    await startCampaign(org, campaign.id);
    expect((await getCampaign(org, campaign.id)).agent_version).toBe(1);

    // Act: version 2 is published before the campaign dials.
    await updateAgent(org, agent.id, { begin_message: 'Calling from v2' } as never);
    await publishVersion(org, agent.id, {});
    await deliver('functions/jobs/campaign-dispatch.ts', queued.take('campaign-dispatch'));

    // Assess: both campaign calls run version 1; a call placed outside the campaign runs version 2.
    const calls: CallItem[] = [];
    for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.call })) calls.push(c);
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => [c.agent_version, c.begin_message])).toEqual([[1, 'Calling from v1'], [1, 'Calling from v1']]);
    const direct = await createCall(org, { agent_id: agent.id, from_phone_number: number.phone!, to_phone_number: randomPhone('+1646') });
    expect(direct.agent_version).toBe(2);
    const pinned = await createCall(org, { agent_id: agent.id, from_phone_number: number.phone!, to_phone_number: randomPhone('+1646'), agent_version: 'draft' });
    expect(pinned.agent_version).toBeNull();
    await expect(createCall(org, { agent_id: agent.id, from_phone_number: number.phone!, to_phone_number: randomPhone('+1646'), agent_version: 4 })).rejects.toMatchObject({ statusCode: 400 });
  });
});

describe('test runs', () => {
  it('complete once, with one test_run.completed, when jobs are delivered twice and concurrently', async () => {
    // Prepare
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'Tested' } as never);
    const tests = await Promise.all([1, 2].map((n) => createTest(org, agent.id, CreateAgentTestBody.parse({ name: `t${n}`, user: { turns: ['hello'] }, criteria: [{ type: 'reply_contains', text: "don't have" }] }))));
    const run = await startRun(org, agent.id, StartTestRunBody.parse({ repeat: 2 }));
    const jobs = queued.take('agent-test-run');
    expect(jobs).toHaveLength(4);

    // Act: every job twice, in two concurrent batches.
    await Promise.all([deliver('functions/jobs/agent-test-run.ts', jobs), deliver('functions/jobs/agent-test-run.ts', [...jobs].reverse())]);

    // Assess
    const done = await getRun(org, agent.id, run.id);
    expect(done.status).toBe('completed');
    expect(done.summary).toEqual({ total: 4, passed: 4, failed: 0, errored: 0, not_evaluated: 0 });
    // Results come in test id order, then attempt.
    const [a, b] = tests.map((t) => t.id).sort();
    expect(done.results!.map((r) => [r.test_id, r.attempt])).toEqual([[a, 1], [a, 2], [b, 1], [b, 2]]);
    const completed: string[] = [];
    for await (const e of queryAll<{ type: string; body: string }>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.event })) {
      if (e.type === 'test_run.completed') completed.push(JSON.parse(e.body).data.test_run.id);
    }
    expect(completed).toEqual([run.id]);
  });
});
