import { v7 as uuidv7 } from 'uuid';
import { keys } from '../../db/keys';
import { addToMap } from '../../db/filtered-query';
import { putNew } from '../../db/store';
import type { ActivityType } from './schemas';

/**
 * Building blocks other areas put into their own transactions, so a contact's timeline and
 * stats are written with the event itself, never recomputed on read.
 */
export const STAT_FIELDS = ['total_calls', 'answered_calls', 'total_call_duration_sec', 'appointments', 'notes'] as const;
export type StatField = (typeof STAT_FIELDS)[number];

/** Longest activity description kept (a note's text is cut there in the timeline; the note keeps it all). */
export const MAX_DESCRIPTION = 500;

/** A new timeline entry at `at` (ISO UTC); the key sorts by time, then by a UUID v7. */
export function activityPut(orgId: string, contactId: string, type: ActivityType, description: string, at: string) {
  const id = uuidv7();
  const text = description.length > MAX_DESCRIPTION ? `${description.slice(0, MAX_DESCRIPTION - 1)}…` : description;
  return putNew({ ...keys.contactActivity(orgId, contactId, at, id), entity: 'CONTACT_ACTIVITY', type, description: text, timestamp: at });
}

/** Bumps a contact's stats counters; fails its condition (ConditionFailed) when the contact is gone. */
export function statsBump(orgId: string, contactId: string, add: Partial<Record<StatField, number>>, opts: Parameters<typeof addToMap>[3] = {}) {
  return addToMap(keys.contact(orgId, contactId), 'stats', add, opts);
}
