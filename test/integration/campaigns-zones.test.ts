import { v7 as uuidv7 } from 'uuid';
import { createAgent } from '../../shared/domain/agents/service';
import { createContact } from '../../shared/domain/contacts/service';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';
import { ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { addCampaignContacts, createCampaign, pauseCampaign, startCampaign } from '../../shared/domain/campaigns/service';
import { previewCampaign } from '../../shared/domain/campaigns/preview';
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { getItem } from '../../shared/db/store';
import { keys } from '../../shared/db/keys';
import { campaignContactId } from '../../shared/domain/campaigns/model';
import { logger } from '../../shared/logger';
import { installTestEngine } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/**
 * Issue 22.3 against DynamoDB Local: new campaigns call each contact in its own hours by
 * default, a contact without a zone gets its number's, and the preview shows each contact's
 * zone and where it comes from.
 */
beforeEach(() => installTestEngine());

const randomPhone = (prefix: string) => {
  for (;;) {
    const n = tryNormalizeE164(`${prefix}${Math.floor(2_000_000 + Math.random() * 7_000_000)}`);
    if (n) return n;
  }
};

async function world() {
  const org = uuidv7();
  const agent = await createAgent(org, { name: 'Caller' } as never);
  const number = await importPhoneNumber(org, ImportBody.parse({ phone: randomPhone('+1415'), type: 'pstn' }));
  const own = await createContact(org, { first_name: 'Own', phone: randomPhone('+1212'), timezone: 'Asia/Tokyo' } as never);
  const newYork = await createContact(org, { first_name: 'NY', phone: randomPhone('+1212') });
  const tollFree = await createContact(org, { first_name: 'Toll free', phone: randomPhone('+1800') });
  const body = (over: Record<string, unknown> = {}) => CreateCampaignBody.parse({
    name: 'Zones', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: [own.id, newYork.id, tollFree.id], ...over,
  });
  return { org, agent, number, own, newYork, tollFree, body };
}

// Wednesday 2031-03-05 10:00 UTC (before the US DST change of March 9): 19:00 in Tokyo, 05:00 in New York, 04:00 in Chicago.
const NOW = new Date('2031-03-05T10:00:00.000Z');

describe('schedule defaults', () => {
  it('a new campaign uses contact zones by default; the preview shows each contact\'s zone and its source, and opens each window in it', async () => {
    // Prepare
    const w = await world();
    // Act
    const campaign = await createCampaign(w.org, w.body({ schedule: { timezone: 'America/Chicago' } }));
    const preview = await previewCampaign(w.org, campaign.id, {}, NOW);
    // Assess
    expect(campaign.schedule).toMatchObject({ use_contact_timezone: true, window_start: '09:00', window_end: '17:00', timezone: 'America/Chicago' });
    const byContact = Object.fromEntries(preview.would_dial_contacts.map((c) => [c.contact_id, c]));
    expect(byContact[w.own.id]).toMatchObject({ timezone: 'Asia/Tokyo', timezone_source: 'contact', next_opening_at: '2031-03-06T00:00:00.000Z' });
    expect(byContact[w.newYork.id]).toMatchObject({ timezone: 'America/New_York', timezone_source: 'phone_number', next_opening_at: '2031-03-05T14:00:00.000Z' });
    // A toll-free number spans every NANP zone: the campaign's zone applies
    expect(byContact[w.tollFree.id]).toMatchObject({ timezone: 'America/Chicago', timezone_source: 'campaign', next_opening_at: '2031-03-05T15:00:00.000Z' });
    expect(preview.window_next_opens_at).toBe('2031-03-05T14:00:00.000Z');
  });

  it('a campaign that turns contact zones off reads every window in its own zone (source campaign); contacts added later get theirs too', async () => {
    // Prepare
    const w = await world();
    const campaign = await createCampaign(w.org, w.body({ contact_ids: [w.own.id], schedule: { timezone: 'America/Chicago', use_contact_timezone: false } }));
    await startCampaign(w.org, campaign.id);
    await pauseCampaign(w.org, campaign.id);
    // Act
    await addCampaignContacts(w.org, campaign.id, [w.newYork.id]);
    const preview = await previewCampaign(w.org, campaign.id, {}, NOW);
    // Assess
    expect(preview.would_dial_contacts.map((c) => [c.timezone, c.timezone_source]).sort()).toEqual([['America/Chicago', 'campaign'], ['America/Chicago', 'campaign']]);
    // Stored with each, for when the campaign turns them on
    const added = await getItem(keys.campaignContact(w.org, campaign.id, campaignContactId(campaign.id, w.newYork.id)));
    expect(added).toMatchObject({ timezone: 'America/New_York', timezone_source: 'phone_number' });
  });

  it('accepts a window ending at 24:00 and opens it until midnight', async () => {
    const w = await world();
    const campaign = await createCampaign(w.org, w.body({ contact_ids: [w.tollFree.id], schedule: { timezone: 'UTC', window_start: '20:00', window_end: '24:00', window_days: [3] } }));
    expect(campaign.schedule).toMatchObject({ window_start: '20:00', window_end: '24:00' });
    const preview = await previewCampaign(w.org, campaign.id, { assumed_call_sec: 3600 }, new Date('2031-03-05T23:30:00.000Z'));
    expect(preview.would_dial_contacts[0]).toMatchObject({ next_opening_at: '2031-03-05T23:30:00.000Z', timezone: 'UTC', timezone_source: 'campaign' });
    // Half an hour left on Wednesday, the rest on the next Wednesday from 20:00
    expect(preview.estimated_finish_at).toBe('2031-03-12T20:30:00.000Z');
  });
});
