import { collections, gsi1, keys, Prefix } from '../../db/keys';
import { deleteExisting, deleteKeys, getItem, ignoreConditionFailed, queryAll, transact, updateExisting } from '../../db/store';
import { deletePrefixPage } from '../../adapters/kb-objects';
import { queue } from '../../adapters/queue';
import { logger } from '../../logger';
import { objectKeys } from './object-keys';

/** The queue job that removes what a deleted knowledge base leaves behind (shared/jobs/registry.ts). */
export const KB_CLEANUP_QUEUE = 'kb-cleanup';
/** Document items deleted per run: a run stays far below its timeout however large the knowledge base. */
export const CLEANUP_PAGE_SIZE = 500;
/**
 * A message for a knowledge base that still exists this long after the request is dropped: its
 * deletion never landed. Below the job's receives × visibility timeout, so it ends here rather
 * than in the dead-letter queue.
 */
const STALE_AFTER_MS = 3 * 60_000;

export interface KbCleanupMessage {
  org_id: string;
  kb_id: string;
  requested_at: string;
}

/** How long a message for a knowledge base whose item is still there waits before it looks again. */
export const WAIT_FOR_DELETE_SECONDS = 10;

/** Starts the cleanup of a knowledge base (its item is deleted by the caller right after). */
export async function queueKnowledgeBaseCleanup(orgId: string, kbId: string, now = new Date()): Promise<void> {
  const message: KbCleanupMessage = { org_id: orgId, kb_id: kbId, requested_at: now.toISOString() };
  await queue().send(KB_CLEANUP_QUEUE, message);
}

/**
 * One bounded run of a deleted knowledge base's cleanup: a page of document items, else a page
 * of its objects (originals, texts, chunks, index versions), else its counter and agents'
 * references. Everything it does is derived from what is left, so it is idempotent and resumes
 * wherever a run died. Answers 'more' when work remains (the job re-queues the message), 'wait'
 * while the knowledge base's item is still there (the delete that follows the send has not landed:
 * the job re-queues the message with a delay, a success rather than a failed delivery).
 */
export async function cleanUpKnowledgeBase(m: KbCleanupMessage, pageSize = CLEANUP_PAGE_SIZE, now = Date.now()): Promise<'more' | 'wait' | 'done'> {
  // The item is deleted after the message is sent: never clean a knowledge base that still exists.
  if (await getItem(keys.knowledgeBase(m.org_id, m.kb_id))) {
    if (now - Date.parse(m.requested_at) > STALE_AFTER_MS) {
      logger.warn('knowledge base cleanup dropped: the knowledge base still exists', { kb_id: m.kb_id });
      return 'done';
    }
    return 'wait';
  }
  const docs: { pk: string; sk: string }[] = [];
  for await (const d of queryAll<{ pk: string; sk: string }>(
    { index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.kbDocuments(m.org_id, m.kb_id), skName: 'gsi1sk' },
    ['pk', 'sk'],
  )) {
    docs.push(d);
    if (docs.length >= pageSize) break;
  }
  if (docs.length) {
    await deleteOwnDocuments(m, docs);
    return 'more';
  }
  const objects = await deletePrefixPage(objectKeys.kbPrefix(m.org_id, m.kb_id));
  if (objects.more) return 'more';
  await deleteKeys([keys.counter(m.org_id, collections.kbDocuments(m.kb_id))]);
  await clearAgentReferences(m.org_id, m.kb_id);
  return 'done';
}

/** Conditioned deletes sent at once (a page is at most CLEANUP_PAGE_SIZE of them). */
const DELETES_IN_FLIGHT = 25;

/**
 * Deletes document items of the deleted knowledge base, each conditioned on still belonging to
 * it. A document item's key is the organization and its `doc_id` alone, and a deleted knowledge
 * base's ids are free at once: between this run's read of its page (a GSI query, which may also
 * be stale) and its delete, the same id may have been ingested into another knowledge base, under
 * the same key. An unconditional delete removed that new document, whose ingestion then took it
 * out of the new index (issue 36.5). Single conditioned DeleteItems cost the same writes as a batch.
 */
async function deleteOwnDocuments(m: KbCleanupMessage, docs: { pk: string; sk: string }[]): Promise<void> {
  for (let i = 0; i < docs.length; i += DELETES_IN_FLIGHT) {
    await Promise.all(
      docs.slice(i, i + DELETES_IN_FLIGHT).map((key) =>
        transact([deleteExisting(key, '#kb = :kb', { ':kb': m.kb_id }, { '#kb': 'kb_id' })]).catch(ignoreConditionFailed),
      ),
    );
  }
}

/** Agents that named the deleted knowledge base get `knowledge_base` "" (conditioned, never clobbering). */
async function clearAgentReferences(orgId: string, kbId: string): Promise<void> {
  const agents = queryAll<{ id: string; knowledge_base?: string }>(
    { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.agent },
    ['id', 'knowledge_base'],
    true,
  );
  for await (const agent of agents) {
    if (agent.knowledge_base !== kbId) continue;
    await transact([
      updateExisting(keys.agent(orgId, agent.id), { knowledge_base: '', updated_at: new Date().toISOString() }, {
        condition: '#kb = :kb',
        names: { '#kb': 'knowledge_base' },
        values: { ':kb': kbId },
      }),
    ]).catch(ignoreConditionFailed);
  }
}

/** The job's work for one message: one run, then the message again when more remains. */
export async function runKnowledgeBaseCleanup(m: KbCleanupMessage): Promise<void> {
  const result = await cleanUpKnowledgeBase(m);
  if (result === 'more') await queue().send(KB_CLEANUP_QUEUE, m);
  else if (result === 'wait') await queue().send(KB_CLEANUP_QUEUE, m, { delaySeconds: WAIT_FOR_DELETE_SECONDS });
}
