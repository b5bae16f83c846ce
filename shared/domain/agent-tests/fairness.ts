import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { clockMs } from '../../clock';
import { db, tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConditionFailed, getItem, transact, updateExisting, putNew, type TransactItem } from '../../db/store';
import { TEST_DEADLINE_MS } from './run-items';

/**
 * Fairness on the agent-test-run queue: one organization runs at most ORG_JOB_CAP tests at a
 * time, so a 1,000-test suite of one organization cannot keep every other organization's tests
 * waiting behind it (a batch of SQS messages runs in one function; the queue's consumers are
 * capped). A job claims a slot before it converses; with none free, it goes back on the queue with
 * a delay and the consumer moves on to other messages. Slots are leases in one item per
 * organization (`jobs`: job → lease end), so a job that dies frees its slot when its lease ends;
 * the result's transaction frees it otherwise. A job costs one UpdateItem more than before.
 */

/** Most tests of one organization running at once: two batches of the queue's 10 concurrent ones. */
export const ORG_JOB_CAP = 20;
/** How long a slot is held at most: the test's deadline and a margin to store its result. */
const LEASE_MS = TEST_DEADLINE_MS + 5 * 60_000;
/** The delay before a job that found no free slot is delivered again. */
export const DEFER_SECONDS = 10;

const slotsKey = (orgId: string) => ({ pk: keys.partition(orgId), sk: 'AGENTTESTSLOTS' });

interface SlotsItem {
  jobs?: Record<string, number>;
  version?: number;
}

/**
 * Claims a slot for `job` (true), or answers false when the organization's cap is reached. One
 * conditional UpdateItem while live slots are free; only when it is refused (or the item is new)
 * does it read the item, prune expired leases and write it back conditioned on its version.
 */
export async function claimSlot(orgId: string, job: string, cap = ORG_JOB_CAP): Promise<boolean> {
  const key = slotsKey(orgId);
  const until = clockMs() + LEASE_MS;
  try {
    await db().send(new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: 'SET #jobs.#job = :until ADD #v :one',
      ConditionExpression: 'size(#jobs) < :cap OR attribute_exists(#jobs.#job)',
      ExpressionAttributeNames: { '#jobs': 'jobs', '#job': job, '#v': 'version' },
      ExpressionAttributeValues: { ':until': until, ':cap': cap, ':one': 1 },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException' && (err as Error).name !== 'ValidationException') throw err;
  }
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const now = clockMs();
    const item = await getItem<SlotsItem>(key);
    const live = Object.entries(item?.jobs ?? {}).filter(([k, leaseEnd]) => leaseEnd > now && k !== job);
    if (live.length >= cap) return false;
    const next = Object.fromEntries([...live, [job, now + LEASE_MS]]);
    try {
      await transact([
        item
          ? updateExisting(key, { jobs: next }, { condition: '#v = :read', values: { ':read': item.version ?? 0 } })
          : putNew({ ...key, entity: 'AGENT_TEST_SLOTS', jobs: next, version: 1 }),
      ]);
      return true;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt); // another job of the organization claimed or released meanwhile
    }
  }
  return false;
}

/** The write that frees `job`'s slot, put in the transaction that stores its result (no request of its own). */
export function releaseSlotWrite(orgId: string, job: string): TransactItem {
  return {
    Update: {
      TableName: tableName(),
      Key: slotsKey(orgId),
      UpdateExpression: 'REMOVE #jobs.#job',
      ExpressionAttributeNames: { '#jobs': 'jobs', '#job': job },
    },
  };
}
