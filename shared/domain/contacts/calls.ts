import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, putNew, queryPage, stripKeys, transact, type PageRequest } from '../../db/store';
import { ConflictError, NotFoundError } from '../../errors';
import { listResult } from '../common/list-result';
import { activityPut, statsBump } from './history';
import type { ContactCall } from './schemas';


/** What the call and campaign workers hand over when a call to a contact has ended. */
export interface CallRecord {
  /** The call session id (UUID v7: the history sorts by it). */
  id: string;
  agent_id?: string | null;
  campaign_id?: string | null;
  direction?: 'outbound' | 'inbound';
  /** Final call status (`completed`, `no_answer`, `failed`, `busy`…). */
  status: string;
  answered: boolean;
  from_phone_number: string;
  to_phone_number: string;
  started_at: string;
  ended_at?: string | null;
  duration_sec: number;
}

function describe(call: CallRecord): string {
  const direction = call.direction === 'inbound' ? 'Inbound' : 'Outbound';
  return call.answered ? `${direction} call answered (${call.duration_sec} s)` : `${direction} call not answered (${call.status})`;
}

/**
 * Records a finished call in a contact's history: the call item (`CALL#<callId>` in the
 * contact's history partition), its timeline entry and the stats counters, in one transaction.
 * Idempotent per call id (queues deliver at least once): a repeat returns `recorded: false` and
 * counts nothing again. `last_call_at` only moves forward, so calls recorded out of order keep it
 * at the latest start. 404 when the contact does not exist.
 */
export async function recordContactCall(orgId: string, contactId: string, call: CallRecord): Promise<{ recorded: boolean }> {
  const item: ContactCall = {
    id: call.id,
    contact_id: contactId,
    agent_id: call.agent_id ?? null,
    campaign_id: call.campaign_id ?? null,
    direction: call.direction ?? 'outbound',
    status: call.status,
    answered: call.answered,
    from_phone_number: call.from_phone_number,
    to_phone_number: call.to_phone_number,
    started_at: call.started_at,
    ended_at: call.ended_at ?? null,
    duration_sec: Math.max(0, Math.round(call.duration_sec)),
  };
  const callKey = keys.contactCall(orgId, contactId, call.id);
  let moveLastCall = true;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const add = { total_calls: 1, answered_calls: call.answered ? 1 : 0, total_call_duration_sec: item.duration_sec };
    const bump = moveLastCall
      ? statsBump(orgId, contactId, add, {
          set: { last_call_at: call.started_at },
          condition: '(attribute_not_exists(#m.#s0) OR #m.#s0 < :s0)',
        })
      : statsBump(orgId, contactId, add);
    try {
      await transact([putNew({ ...callKey, entity: 'CONTACT_CALL', ...item }), bump, activityPut(orgId, contactId, 'call', describe(call), call.started_at)]);
      return { recorded: true };
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (err.message !== 'transaction conflict') {
        if (await getItem(callKey)) return { recorded: false };
        if (!(await getItem(keys.contact(orgId, contactId)))) throw new NotFoundError('Contact', contactId);
        // Only the last_call_at guard is left: an older call; count it without moving the time.
        moveLastCall = false;
        continue;
      }
      await pause(attempt);
    }
  }
  throw new ConflictError('The contact is being changed by other requests; retry', { id: contactId });
}

/** A contact's call history, newest first; the total is the contact's `total_calls` counter. */
export async function listContactCalls(orgId: string, contactId: string, query: PageRequest) {
  const contact = await getItem<{ stats?: { total_calls?: number } }>(keys.contact(orgId, contactId));
  if (!contact) throw new NotFoundError('Contact', contactId);
  const page = await queryPage<ContactCall & { pk: string; sk: string }>(
    { pkName: 'pk', pkValue: keys.contactHistory(orgId, contactId), skName: 'sk', skPrefix: keys.contactHistoryPrefix.call, descending: true },
    query,
  );
  return listResult({ items: page.items.map((c) => stripKeys(c) as ContactCall), nextCursor: page.nextCursor }, contact.stats?.total_calls ?? 0, query);
}
