import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { keys, Prefix } from '../../shared/db/keys';
import { queryAll } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import type { CallItem } from '../../shared/domain/calls/service';
import { installCampaignDialer } from '../../shared/domain/campaigns/dialer';
import { dispatchCampaign } from '../../shared/domain/campaigns/engine';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { createCampaign, getCampaign, startCampaign } from '../../shared/domain/campaigns/service';
import { createContact } from '../../shared/domain/contacts/service';
import { getConcurrency, updateConcurrency } from '../../shared/domain/concurrency/service';
import { logger } from '../../shared/logger';
import { CapturedQueue } from '../support/campaign-dialer';
import { ownNumber, uniquePhone } from '../support/numbers';

logger.setLogLevel('SILENT');

/**
 * Campaigns and the organization's concurrency limit (docs/api.md, "Concurrency limits"): a
 * campaign dials only into free slots, and the running campaigns of one organization share them,
 * each its part of the limit at least, so the first dispatched never takes every slot; a contact
 * that meets the limit waits, with no dial failure counted. Through the real engine and calls
 * service against DynamoDB Local (the dispatch job's function, its queue captured).
 */
let queued: CapturedQueue;
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
  installCampaignDialer(undefined);
});
afterAll(() => installLocalQueue(undefined));

async function campaignOf(org: string, agentId: string, contacts: number, maxConcurrent: number) {
  const number = await ownNumber(org);
  const people = await Promise.all(Array.from({ length: contacts }, (_, i) => createContact(org, { first_name: `C${i}`, phone: uniquePhone('+1646') })));
  const campaign = await createCampaign(org, CreateCampaignBody.parse({
    name: `Calls ${number.phone}`, agent_id: agentId, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: people.map((c) => c.id),
    schedule: { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: maxConcurrent },
  }));
  await startCampaign(org, campaign.id);
  return campaign;
}

async function liveCalls(org: string, campaignId: string) {
  const calls: CallItem[] = [];
  for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.call })) if (c.campaign_id === campaignId && c.status !== 'ended') calls.push(c);
  return calls.length;
}

it('two running campaigns of one organization share its limit: each gets its part, never more than the free slots; at the limit a contact waits without a failure', async () => {
  const org = uuidv7();
  await updateConcurrency(org, { limit: 6 });
  const agent = await createAgent(org, { name: 'Dialer', ring_duration_ms: 1000, max_call_duration_ms: 60_000 } as never);
  const a = await campaignOf(org, agent.id, 10, 10);
  const b = await campaignOf(org, agent.id, 10, 10);

  // A first: half the limit (its part among two running campaigns), not all six.
  await dispatchCampaign(org, a.id);
  expect(await liveCalls(org, a.id)).toBe(3);
  // B then: its part, the rest of the free slots.
  await dispatchCampaign(org, b.id);
  expect(await liveCalls(org, b.id)).toBe(3);
  expect((await getConcurrency(org)).in_progress).toMatchObject({ outbound: 6, total: 6 });
  // Full: another dispatch of either places nothing, and no contact is failed or charged a dial failure.
  expect((await dispatchCampaign(org, a.id)).placed).toBe(0);
  expect((await dispatchCampaign(org, b.id)).placed).toBe(0);
  for (const id of [a.id, b.id]) expect((await getCampaign(org, id)).contact_stats).toMatchObject({ in_progress: 3, pending: 7, failed: 0 });
  expect((await getConcurrency(org)).in_progress.total).toBe(6);
}, 60_000);

it('a campaign alone may use every free slot, up to its own max_concurrent', async () => {
  const org = uuidv7();
  await updateConcurrency(org, { limit: 4 });
  const agent = await createAgent(org, { name: 'Dialer', ring_duration_ms: 1000, max_call_duration_ms: 60_000 } as never);
  const a = await campaignOf(org, agent.id, 6, 10);
  await dispatchCampaign(org, a.id);
  expect(await liveCalls(org, a.id)).toBe(4);
  expect((await getConcurrency(org)).in_progress.total).toBe(4);
}, 60_000);

it('campaigns dispatched at once never place more than the limit: a contact refused at the limit waits, unfailed, its dial failures unchanged', async () => {
  const org = uuidv7();
  await updateConcurrency(org, { limit: 3 });
  const agent = await createAgent(org, { name: 'Dialer', ring_duration_ms: 1000, max_call_duration_ms: 60_000 } as never);
  const campaigns = [await campaignOf(org, agent.id, 5, 5), await campaignOf(org, agent.id, 5, 5)];
  // Both read the same free slots, then race for them: the transaction that takes a slot decides.
  await Promise.all(campaigns.map((c) => dispatchCampaign(org, c.id)));
  expect((await getConcurrency(org)).in_progress.total).toBe(3);
  const live = (await Promise.all(campaigns.map((c) => liveCalls(org, c.id)))).reduce((a, b) => a + b, 0);
  expect(live).toBe(3);
  for (const c of campaigns) {
    const stats = (await getCampaign(org, c.id)).contact_stats;
    expect(stats.failed).toBe(0);
    expect(stats.in_progress + stats.pending).toBe(5);
  }
  for await (const cc of queryAll<{ dial_failures?: number; entity?: string }>({ pkName: 'pk', pkValue: keys.campaignPartition(org, campaigns[0]!.id) })) expect(cc.dial_failures ?? 0).toBe(0);
}, 60_000);
