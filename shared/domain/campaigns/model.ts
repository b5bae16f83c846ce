import { v5 as uuidv5 } from 'uuid';
import { gsi1, gsi2, keys, type Key } from '../../db/keys';
import { queryAll, stripKeys } from '../../db/store';
import type { Campaign, CampaignContact, CampaignContactStatus, CampaignSummary, ContactStats, ZoneSource } from './schemas';

/**
 * The stored shapes of campaigns and campaign contacts, and the small pure helpers the service
 * and the engine share (ids, index attributes, views, the recount).
 */

export const CAMPAIGN_ENTITY = 'CAMPAIGN';
export const CONTACT_ENTITY = 'CAMPAIGN_CONTACT';
/** Shards of the active-campaigns index the tick reads. */
export const ACTIVE_SHARDS = 4;
/** How long a claimed contact may wait for its call to be placed before the tick's dispatch re-places it. */
export const LEASE_MS = 60_000;
/** How long an add of contacts holds its campaign (a crashed add is repaired after it). */
export const ADD_LOCK_MS = 120_000;

export interface CampaignItem extends Campaign, Key {
  entity: typeof CAMPAIGN_ENTITY;
  /** The `agent_version` asked on create (a number or "draft"); absent: the published version at the first start. */
  agent_version_pin?: number | 'draft' | null;
  /** True once the campaign's version is fixed (its first start, or a numbered pin): its calls all use `agent_version`. */
  agent_version_fixed?: boolean;
  version: number;
  gsi1pk: string;
  gsi1sk: string;
  gsi2pk?: string;
  gsi2sk?: string;
  /** Set while contacts are being added (a lock with an expiry). */
  adding_until?: string;
}

export interface CampaignContactItem extends CampaignContact, Key {
  entity: typeof CONTACT_ENTITY;
  campaign_id: string;
  /**
   * The zone of the contact's window with `use_contact_timezone`, fixed when added: the contact's
   * own, else its number's (one zone only), else '' (the campaign's zone applies).
   */
  timezone: string;
  /** Where `timezone` came from; absent on items added before it was recorded (then `contact`, or `campaign` when empty). */
  timezone_source?: ZoneSource;
  /** The campaign contact that brought the same number in earlier in the same add; this one fails as a duplicate. */
  duplicate_of?: string;
  /** When a pending contact is next due (its entry in the due index). */
  due_at?: string;
  /** Claimed, call not yet placed: re-placed after this time. */
  lease_until?: string;
  /** Consecutive placements that did not reach the carrier (dialer error, carrier unavailable): the back-off's exponent. */
  dial_failures?: number;
  /** Attempts the carrier never dialed; they do not count against `retry_attempts` (up to MAX_UNDIALED). */
  undialed_attempts?: number;
  created_at: string;
  updated_at: string;
  gsi1pk?: string;
  gsi1sk?: string;
  gsi2pk: string;
  gsi2sk: string;
}

/** A campaign contact's id: derived from campaign and contact, so a contact is in a campaign at most once. */
export const campaignContactId = (campaignId: string, contactId: string) => uuidv5(contactId, campaignId);

export const emptyStats = (): ContactStats => ({ total: 0, contacted: 0, successful: 0, failed: 0, no_answer: 0, pending: 0, in_progress: 0 });

/** Which active-campaigns shard a campaign sits in (stable: from its id). */
export function activeShard(campaignId: string): number {
  let h = 0;
  for (const ch of campaignId) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return h % ACTIVE_SHARDS;
}

export const activeIndex = (orgId: string, campaignId: string) => ({
  gsi2pk: gsi2.activeCampaigns(activeShard(campaignId)),
  gsi2sk: gsi2.activeCampaignEntry(orgId, campaignId),
});

export const statusIndex = (orgId: string, id: string, status: string) => ({ gsi1pk: gsi1.byStatus(orgId, CAMPAIGN_ENTITY, status), gsi1sk: id });

export const contactStatusIndex = (orgId: string, campaignId: string, id: string, status: CampaignContactStatus) => ({
  gsi2pk: gsi2.campaignContactsByStatus(orgId, campaignId, status),
  gsi2sk: id,
});

export const dueIndex = (orgId: string, campaignId: string, id: string, dueAt: string) => ({
  due_at: dueAt,
  gsi1pk: gsi1.campaignDue(orgId, campaignId),
  gsi1sk: `${dueAt}#${id}`,
});

export const leaseIndex = (orgId: string, campaignId: string, id: string, leaseUntil: string) => ({
  lease_until: leaseUntil,
  gsi1pk: gsi1.campaignLeases(orgId, campaignId),
  gsi1sk: `${leaseUntil}#${id}`,
});

export function campaignView(item: CampaignItem): Campaign {
  // Bookkeeping of the version rule stays inside: the document's Campaign has no such members.
  const { adding_until, agent_version_pin, agent_version_fixed, ...rest } = stripKeys(item as unknown as Record<string, unknown>) as unknown as CampaignItem;
  void adding_until;
  void agent_version_pin;
  void agent_version_fixed;
  // Campaigns written before the engine could pause them have no pause_reason (nor, before versions, agent_version).
  return { ...rest, agent_version: rest.agent_version ?? null, pause_reason: rest.pause_reason ?? null };
}

/** A campaign in the list: the short form the document promises (`CampaignSummary`). */
export function campaignSummaryView(item: CampaignItem): CampaignSummary {
  return { id: item.id, name: item.name, status: item.status, execution_status: item.execution_status, contact_stats: item.contact_stats, created_at: item.created_at };
}

export function campaignContactView(item: CampaignContactItem): CampaignContact {
  return {
    id: item.id,
    contact_id: item.contact_id,
    name: item.name,
    phone: item.phone,
    email: item.email,
    status: item.status,
    attempt_count: item.attempt_count,
    last_attempted_at: item.last_attempted_at,
    next_retry_at: item.next_retry_at,
    call_duration_sec: item.call_duration_sec,
    error_message: item.error_message,
    call_session_id: item.call_session_id,
    tags: item.tags,
  };
}

/**
 * Counts a campaign's contacts by status from the items themselves (O(campaign)): the repair
 * after an interrupted add, and what tests compare `contact_stats` with.
 */
export async function recountContacts(orgId: string, campaignId: string): Promise<ContactStats> {
  const stats = emptyStats();
  const items = queryAll<Pick<CampaignContactItem, 'status' | 'attempt_count'>>(
    { pkName: 'pk', pkValue: keys.campaignPartition(orgId, campaignId), skName: 'sk', skPrefix: 'CC#' },
    ['status', 'attempt_count'],
    true,
  );
  for await (const item of items) {
    stats.total++;
    stats[item.status]++;
    if (item.attempt_count > 0) stats.contacted++;
  }
  return stats;
}
