import { clockNow } from '../../clock';
import { keys, Prefix } from '../../db/keys';
import { queryAll } from '../../db/store';
import { getMany } from '../../db/filtered-query';
import { dialBlock, DNC_MESSAGES } from '../dnc/service';
import { getCampaignItem } from './service';
import type { CampaignContactItem } from './model';
import type { CampaignPreview, SkipReason, ZoneSource } from './schemas';
import { closingAfter, nextOpening, windowZone } from './window';

/** Contacts listed by name in a preview (each list); the counts always cover every contact. */
export const PREVIEW_LIST_LIMIT = 1000;
const DEFAULT_CALL_SEC = 120;

const messages: Record<SkipReason, string> = {
  do_not_call: DNC_MESSAGES.do_not_call,
  opt_out: DNC_MESSAGES.opt_out,
  duplicate_phone: 'duplicate phone number',
  no_phone: 'contact has no phone number',
  contact_deleted: 'contact deleted',
};

/**
 * A dry run of a campaign's pending contacts, changing nothing: which would be dialed, which
 * would fail without a call and why (the dispatcher's own rules: deleted, no phone, duplicate
 * number, do-not-call, opt-out), when the window next opens (the same `nextOpening` the
 * dispatcher uses), and how long dialing would take at `max_concurrent` with calls of
 * `assumed_call_sec` (first attempts only), walked through the window's openings.
 */
export async function previewCampaign(orgId: string, id: string, input: { assumed_call_sec?: number }, now = clockNow()): Promise<CampaignPreview> {
  const campaign = await getCampaignItem(orgId, id);
  const schedule = campaign.schedule;
  const callSec = input.assumed_call_sec ?? DEFAULT_CALL_SEC;
  const pending: CampaignContactItem[] = [];
  for await (const cc of queryAll<CampaignContactItem>({ pkName: 'pk', pkValue: keys.campaignPartition(orgId, id), skName: 'sk', skPrefix: Prefix.campaignContact })) {
    if (cc.status === 'pending') pending.push(cc);
  }
  const contacts = new Map(
    (await getMany<{ id: string; opt_out?: boolean }>(pending.map((cc) => keys.contact(orgId, cc.contact_id)), { parallel: 8, projection: ['id', 'opt_out'] })).map((c) => [c.id, c]),
  );
  const reasons: (SkipReason | null)[] = [];
  for (let i = 0; i < pending.length; i += 50) {
    reasons.push(
      ...(await Promise.all(
        pending.slice(i, i + 50).map(async (cc): Promise<SkipReason | null> => {
          const contact = contacts.get(cc.contact_id);
          if (!contact) return 'contact_deleted';
          if (!cc.phone) return 'no_phone';
          if (cc.duplicate_of) return 'duplicate_phone';
          return dialBlock(orgId, cc.phone, contact);
        }),
      )),
    );
  }
  await markCrossAddDuplicates(orgId, id, pending, reasons);
  const skipped: CampaignPreview['skipped'] = [];
  const wouldDial: CampaignPreview['would_dial_contacts'] = [];
  const counts: Record<string, number> = {};
  let earliest: Date | null = null;
  pending.forEach((cc, i) => {
    const reason = reasons[i];
    if (reason) {
      counts[reason] = (counts[reason] ?? 0) + 1;
      if (skipped.length < PREVIEW_LIST_LIMIT) skipped.push({ contact_id: cc.contact_id, phone: cc.phone, reason, error_message: messages[reason] });
      return;
    }
    const from = cc.due_at && cc.due_at > now.toISOString() ? new Date(cc.due_at) : now;
    const opening = nextOpening(schedule, from, cc.timezone);
    if (opening && (!earliest || opening < earliest)) earliest = opening;
    if (wouldDial.length < PREVIEW_LIST_LIMIT) wouldDial.push({ contact_id: cc.contact_id, phone: cc.phone, next_opening_at: opening?.toISOString() ?? null, ...zoneOf(schedule, cc) });
  });
  const n = pending.length - Object.values(counts).reduce((a, b) => a + b, 0);
  const opensAt: Date | null = n ? earliest : nextOpening(schedule, now);
  const rounds = Math.ceil(n / schedule.max_concurrent);
  return {
    campaign_id: id,
    would_dial: n,
    would_dial_contacts: wouldDial,
    skipped,
    skipped_counts: counts,
    window_next_opens_at: opensAt ? (opensAt as Date).toISOString() : null,
    assumed_call_sec: callSec,
    estimated_dialing_sec: rounds * callSec,
    estimated_finish_at: n === 0 ? now.toISOString() : finishAt(schedule, opensAt, rounds * callSec * 1000),
    truncated: pending.length - n > skipped.length || n > wouldDial.length,
  };
}

/**
 * Numbers shared by contacts that came in different adds (one add marks its own duplicates):
 * as the dispatcher decides it, the number belongs to the contact whose claim wrote its marker
 * (dialed before), else to the first of them in due order (due time, then id: the due index);
 * the others would fail as duplicates. Contacts skipped for another reason never take a number.
 */
async function markCrossAddDuplicates(orgId: string, campaignId: string, pending: CampaignContactItem[], reasons: (SkipReason | null)[]): Promise<void> {
  const groups = new Map<string, number[]>();
  pending.forEach((cc, i) => {
    if (!reasons[i]) groups.set(cc.phone, [...(groups.get(cc.phone) ?? []), i]);
  });
  const phones = [...groups.keys()];
  const owners = new Map(
    (await getMany<{ phone: string; campaign_contact_id: string }>(phones.map((p) => keys.campaignNumber(orgId, campaignId, p)), { parallel: 8, projection: ['phone', 'campaign_contact_id'] }))
      .map((m) => [m.phone, m.campaign_contact_id]),
  );
  const order = (cc: CampaignContactItem) => `${cc.due_at ?? ''}#${cc.id}`;
  for (const [phone, members] of groups) {
    const marked = owners.get(phone);
    if (members.length === 1 && (!marked || marked === pending[members[0]!]!.id)) continue;
    const keep = marked ?? pending[members.reduce((a, b) => (order(pending[b]!) < order(pending[a]!) ? b : a))]!.id;
    for (const i of members) if (pending[i]!.id !== keep) reasons[i] = 'duplicate_phone';
  }
}

/** The zone a contact's window is read in, and where it comes from (the campaign's unless it uses contact zones and the contact has one). */
function zoneOf(schedule: Parameters<typeof nextOpening>[0], cc: CampaignContactItem): { timezone: string; timezone_source: ZoneSource } {
  const timezone = windowZone(schedule, cc.timezone);
  if (!schedule.use_contact_timezone || !cc.timezone || timezone !== cc.timezone) return { timezone, timezone_source: 'campaign' };
  return { timezone, timezone_source: cc.timezone_source ?? 'contact' };
}

/** Walks `workMs` of calling time through the window's openings from `start` (the campaign's zone). */
function finishAt(schedule: Parameters<typeof nextOpening>[0], start: Date | null, workMs: number): string | null {
  let t = start;
  let left = workMs;
  for (let i = 0; t && i < 5000; i++) {
    const close = closingAfter(schedule, t);
    const span = close.getTime() - t.getTime();
    if (span >= left) return new Date(t.getTime() + left).toISOString();
    left -= span;
    t = nextOpening(schedule, close);
  }
  return null;
}
