import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { keys, Prefix } from '../../shared/db/keys';
import { queryAll } from '../../shared/db/store';
import { createAgent, updateAgent } from '../../shared/domain/agents/service';
import { publishVersion } from '../../shared/domain/agents/versions';
import { drawVersion } from '../../shared/domain/agents/traffic-split';
import { callsServiceDialer } from '../../shared/domain/calls/campaign-calls';
import type { CallItem } from '../../shared/domain/calls/service';
import { installCampaignDialer } from '../../shared/domain/campaigns/dialer';
import { CreateCampaignBody, UpdateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { createCampaign, getCampaign, startCampaign, updateCampaign } from '../../shared/domain/campaigns/service';
import { createContact } from '../../shared/domain/contacts/service';
import { logger } from '../../shared/logger';
import { CapturedQueue, deliver } from '../support/campaign-dialer';
import { ownNumber, uniquePhone } from '../support/numbers';

logger.setLogLevel('SILENT');

/**
 * Issue 35.5: a campaign's version is its agent's. A started campaign moved to another agent ran
 * that agent with the old agent's version number; changing `agent_id` now resets the version,
 * and PATCH sets `agent_version` (docs/api.md, "Campaigns").
 */
let queued: CapturedQueue;
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
  installCampaignDialer(undefined);
});
afterAll(() => installLocalQueue(undefined));


/** An agent with `versions` published versions, each saying its own begin message. */
async function agentWithVersions(org: string, name: string, versions: number) {
  const agent = await createAgent(org, { name, ring_duration_ms: 1000, max_call_duration_ms: 60_000 } as never);
  for (let v = 1; v <= versions; v++) {
    await updateAgent(org, agent.id, { begin_message: `${name} v${v}` } as never);
    await publishVersion(org, agent.id, {});
  }
  await updateAgent(org, agent.id, { begin_message: `${name} draft` } as never);
  return agent;
}

async function campaignOn(org: string, agentId: string, contacts: number, pin?: number | 'draft') {
  const number = await ownNumber(org);
  const people = await Promise.all(Array.from({ length: contacts }, (_, i) => createContact(org, { first_name: `C${i}`, phone: uniquePhone('+1646') })));
  return createCampaign(org, CreateCampaignBody.parse({
    name: 'Calls', agent_id: agentId, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: people.map((c) => c.id),
    schedule: { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 5 },
    ...(pin !== undefined ? { agent_version: pin } : {}),
  }));
}

const patch = (org: string, id: string, body: unknown) => updateCampaign(org, id, UpdateCampaignBody.parse(body));

async function placedCalls(org: string) {
  const calls: CallItem[] = [];
  for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.call })) calls.push(c);
  return calls.map((c) => [c.agent_id, c.agent_version, c.begin_message]);
}

describe('a campaign moved to another agent', () => {
  it('after its first start runs the new agent\'s published version, never the old agent\'s number', async () => {
    // Prepare: agent A at version 3, agent B at version 1; a campaign started on A (version 3).
    const org = uuidv7();
    const a = await agentWithVersions(org, 'A', 3);
    const b = await agentWithVersions(org, 'B', 1);
    const campaign = await campaignOn(org, a.id, 2);
    await startCampaign(org, campaign.id);
    expect((await getCampaign(org, campaign.id)).agent_version).toBe(3);

    // Act: moved to B before it dials.
    const moved = await patch(org, campaign.id, { agent_id: b.id });
    await deliver('functions/jobs/campaign-dispatch.ts', queued.take('campaign-dispatch'));

    // Assess: B's published version, on the campaign and on every call.
    expect(moved).toMatchObject({ agent_id: b.id, agent_version: 1 });
    expect(moved).not.toHaveProperty('agent_version_fixed');
    expect(await placedCalls(org)).toEqual([[b.id, 1, 'B v1'], [b.id, 1, 'B v1']]);
  });

  it('takes agent_version by PATCH: a number the agent has, "draft", and a 400 naming agent_version for one it lacks', async () => {
    const org = uuidv7();
    const a = await agentWithVersions(org, 'A', 2);
    const b = await agentWithVersions(org, 'B', 1);
    const campaign = await campaignOn(org, a.id, 1);
    await startCampaign(org, campaign.id);
    expect((await getCampaign(org, campaign.id)).agent_version).toBe(2);

    expect(await patch(org, campaign.id, { agent_version: 1 })).toMatchObject({ agent_version: 1 });
    expect(await patch(org, campaign.id, { agent_version: 'draft' })).toMatchObject({ agent_version: null });
    await expect(patch(org, campaign.id, { agent_version: 3 })).rejects.toMatchObject({ statusCode: 400, details: { fields: [{ path: 'agent_version' }] } });
    // A number checked against the new agent when both change at once: B has no version 2.
    await expect(patch(org, campaign.id, { agent_id: b.id, agent_version: 2 })).rejects.toMatchObject({ statusCode: 400, details: { fields: [{ path: 'agent_version' }] } });
    expect(await patch(org, campaign.id, { agent_id: b.id, agent_version: 1 })).toMatchObject({ agent_id: b.id, agent_version: 1 });
    await deliver('functions/jobs/campaign-dispatch.ts', queued.take('campaign-dispatch'));
    expect(await placedCalls(org)).toEqual([[b.id, 1, 'B v1']]);
  });

  it('before its first start drops the old agent\'s pin: the start fixes the new agent\'s published version', async () => {
    const org = uuidv7();
    const a = await agentWithVersions(org, 'A', 2);
    const b = await agentWithVersions(org, 'B', 1);
    const campaign = await campaignOn(org, a.id, 1, 2);
    expect(campaign.agent_version).toBe(2);

    expect(await patch(org, campaign.id, { agent_id: b.id })).toMatchObject({ agent_id: b.id, agent_version: null });
    expect(await startCampaign(org, campaign.id)).toMatchObject({ agent_id: b.id, agent_version: 1 });
    // A pin set by PATCH on a draft is the pin create takes.
    const other = await campaignOn(org, a.id, 1);
    expect(await patch(org, other.id, { agent_version: 'draft' })).toMatchObject({ agent_version: null });
    expect(await startCampaign(org, other.id)).toMatchObject({ agent_version: null });
  });
});

describe('a campaign under the agent\'s traffic split', () => {
  const split = [{ version: 1, weight: 50 }, { version: 2, weight: 50 }];
  async function callsOf(org: string) {
    const calls: CallItem[] = [];
    for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.call })) calls.push(c);
    return calls;
  }

  it('draws each contact\'s version at its first attempt (sticky for the contact, the split recorded); a retry keeps it after the split changed; a pinned campaign never draws', async () => {
    const org = uuidv7();
    const a = await agentWithVersions(org, 'A', 2);
    const splitId = (await updateAgent(org, a.id, { traffic_split: split } as never)).traffic_split_id!;
    const campaign = await campaignOn(org, a.id, 5);
    await startCampaign(org, campaign.id);
    await deliver('functions/jobs/campaign-dispatch.ts', queued.take('campaign-dispatch'));
    const first = await callsOf(org);
    expect(first).toHaveLength(5);
    for (const call of first) {
      expect(call.traffic_split_id).toBe(splitId);
      expect(call.agent_version).toBe(drawVersion(splitId, split, `contact:${call.contact_id}`));
      expect(call.begin_message).toBe(`A v${call.agent_version}`);
    }

    // The split changes (a new split: a fresh draw would record its id); a retry keeps the first attempt's version and split.
    const changed = (await updateAgent(org, a.id, { traffic_split: [{ version: 1, weight: 1 }, { version: 2, weight: 99 }] } as never)).traffic_split_id;
    expect(changed).not.toBe(splitId);
    for (const earlier of first.slice(0, 2)) {
      const retry = await callsServiceDialer.placeCampaignCall({
        organizationId: org, campaignId: campaign.id, campaignContactId: earlier.campaign_contact_id!, attempt: 2, agentId: a.id, agentVersion: 2,
        fromPhoneNumber: earlier.from_phone_number, toPhoneNumber: earlier.to_phone_number, contactId: earlier.contact_id!, dynamicVariables: {}, splitDraw: true,
      });
      const again = (await callsOf(org)).find((c) => c.id === retry.callId)!;
      expect([again.agent_version, again.traffic_split_id]).toEqual([earlier.agent_version, splitId]);
    }
    // A new contact's first attempt draws from the new split.
    const fresh = await callsServiceDialer.placeCampaignCall({
      organizationId: org, campaignId: campaign.id, campaignContactId: uuidv7(), attempt: 1, agentId: a.id, agentVersion: 2,
      fromPhoneNumber: first[0]!.from_phone_number, toPhoneNumber: uniquePhone('+1646'), contactId: first[0]!.contact_id!, dynamicVariables: {}, splitDraw: true,
    });
    expect((await callsOf(org)).find((c) => c.id === fresh.callId)!.traffic_split_id).toBe(changed);

    // A campaign that pins a version runs it, whatever the split.
    const pinned = await campaignOn(org, a.id, 3, 1);
    await startCampaign(org, pinned.id);
    await deliver('functions/jobs/campaign-dispatch.ts', queued.take('campaign-dispatch'));
    const ofPinned = (await callsOf(org)).filter((c) => c.campaign_id === pinned.id);
    expect(ofPinned.map((c) => [c.agent_version, c.traffic_split_id ?? null])).toEqual([[1, null], [1, null], [1, null]]);
  });
});
