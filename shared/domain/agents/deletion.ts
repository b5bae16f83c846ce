import { collections, gsi2, keys, shardOf, SWEEP_SHARDS } from '../../db/keys';
import { deleteKeys, getItem, putNew, queryAll, queryPage, type TransactItem } from '../../db/store';
import { queue } from '../../adapters/queue';
import { clockMs } from '../../clock';
import { logger } from '../../logger';
import { detachAgentFromNumbers } from '../phone-numbers/agent-references';
import { forgetAgentVersions } from './versions';
import { removeAgentFromHandoffs } from './handoff-references';

/**
 * An agent's deletion, behind a tombstone. The request deletes the agent item and puts its
 * tombstone (`AGENTDELETION#<agent>`) in one transaction, then queues the agent-cleanup job; the
 * job deletes the agent's partition (versions, tests, runs, results) a page per message, then
 * detaches its phone numbers and deletes its counters and the tombstone. Nothing depends on the
 * request living long enough (a 10 s function timing out half-way orphaned versions and tests
 * before), and a lost message is queued again by the sweep from the tombstones' index.
 */

export const AGENT_CLEANUP_QUEUE = 'agent-cleanup';
/** Items deleted per message: a run stays far below its timeout however many results the agent had. */
export const AGENT_CLEANUP_PAGE = 500;
/** A tombstone older than this is queued again by the sweep (its message was lost, or the job keeps failing). */
export const CLEANUP_STALE_MS = 15 * 60_000;

export interface AgentCleanupMessage {
  organization_id: string;
  agent_id: string;
}

/** The tombstone's write, for the transaction that deletes the agent item. */
export function tombstoneWrite(orgId: string, agentId: string): TransactItem {
  const at = new Date(clockMs()).toISOString();
  return putNew({
    ...keys.agentDeletion(orgId, agentId),
    entity: 'AGENT_DELETION',
    organization_id: orgId,
    agent_id: agentId,
    deleted_at: at,
    gsi2pk: gsi2.agentDeletions(shardOf(agentId)),
    gsi2sk: gsi2.agentDeletionEntry(at, orgId, agentId),
  });
}

/** Queues the cleanup; a failure is logged, not thrown (the agent is already deleted; the sweep queues it again). */
export async function queueAgentCleanup(orgId: string, agentId: string): Promise<void> {
  await queue().send(AGENT_CLEANUP_QUEUE, { organization_id: orgId, agent_id: agentId } satisfies AgentCleanupMessage).catch((err: unknown) => {
    logger.warn('agent cleanup not queued; the sweep queues it again', { agent_id: agentId, error: (err as Error).message });
  });
}

/** One page of a deleted agent's cleanup: 'more' while its partition has items, 'done' once everything is gone (or there was no tombstone). */
export async function cleanUpAgent(m: AgentCleanupMessage, pageSize = AGENT_CLEANUP_PAGE): Promise<'more' | 'done'> {
  if (!(await getItem(keys.agentDeletion(m.organization_id, m.agent_id)))) return 'done';
  const page: { pk: string; sk: string }[] = [];
  for await (const item of queryAll<{ pk: string; sk: string }>({ pkName: 'pk', pkValue: keys.agentPartition(m.organization_id, m.agent_id) }, ['pk', 'sk'])) {
    page.push(item);
    if (page.length >= pageSize) break;
  }
  forgetAgentVersions(m.organization_id, m.agent_id);
  if (page.length) {
    await deleteKeys(page);
    return 'more';
  }
  // Numbers that answered with this agent no longer do, agents that handed off to it no longer list it; then its counters and the tombstone.
  await detachAgentFromNumbers(m.organization_id, m.agent_id);
  await removeAgentFromHandoffs(m.organization_id, m.agent_id);
  await deleteKeys([keys.counter(m.organization_id, collections.agentTests(m.agent_id)), keys.counter(m.organization_id, collections.agentTestRuns(m.agent_id))]);
  await deleteKeys([keys.agentDeletion(m.organization_id, m.agent_id)]);
  return 'done';
}

/** The agent-cleanup job: one page, then the message again while pages remain. */
export async function runAgentCleanup(m: AgentCleanupMessage): Promise<void> {
  if ((await cleanUpAgent(m)) === 'more') await queue().send(AGENT_CLEANUP_QUEUE, m);
}

/** Queues again every cleanup whose tombstone is older than CLEANUP_STALE_MS (run by the agent-test sweep). */
export async function sweepAgentDeletions(nowMs = clockMs()): Promise<number> {
  const before = new Date(nowMs - CLEANUP_STALE_MS).toISOString();
  let queued = 0;
  for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
    let cursor: string | undefined;
    do {
      const page = await queryPage<{ organization_id: string; agent_id: string }>({ index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.agentDeletions(shard), skName: 'gsi2sk', skBelow: before }, { limit: 50, ...(cursor ? { cursor } : {}) });
      for (const t of page.items) {
        await queueAgentCleanup(t.organization_id, t.agent_id);
        queued++;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return queued;
}

