import type { SQSEvent } from 'aws-lambda';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetConfig } from '../../shared/config';
import { db } from '../../shared/db/client';
import { gsi1 } from '../../shared/db/keys';
import { groundingPassages, groundingSource } from '../../shared/domain/conversations/grounding';
import { currentIndex, forgetIndex } from '../../shared/domain/rag/index-store';
import { ingestBatchHandler } from '../../shared/domain/rag/ingest-worker';
import { IngestBody } from '../../shared/domain/rag/schemas';
import { KB_CLEANUP_QUEUE, runKnowledgeBaseCleanup, type KbCleanupMessage } from '../../shared/domain/rag/kb-deletion';
import { createKnowledgeBase, deleteKnowledgeBase, getDocument, ingest, type IngestMessage } from '../../shared/domain/rag/service';
import { logger } from '../../shared/logger';
import { asFunction } from '../support/access';

logger.setLogLevel('SILENT');

const sent: IngestMessage[] = [];
const worker = ingestBatchHandler(3);
let seq = 0;
const event = (messages: IngestMessage[]): SQSEvent => ({
  Records: messages.map((m) => ({
    messageId: `m-${++seq}`, receiptHandle: 'r', body: JSON.stringify(m),
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'test', ApproximateFirstReceiveTimestamp: '0' },
    messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:0:rag-ingest', awsRegion: 'local',
  })),
});

beforeAll(() => {
  resetConfig();
  installLocalQueue({ send: async (queue, body) => void (queue === 'rag-ingest' && sent.push(body as IngestMessage)) });
});
afterAll(() => installLocalQueue(undefined));

const FACTS = ['The clinic opens at 8 am on weekdays.', 'A checkup costs 40 dollars.', 'Parking is free in the garage on Elm Street.', 'Doctor Smith sees children on Tuesdays.', 'Flu shots are given every Friday.', 'The pharmacy closes at 6 pm.'];
const QUESTIONS = ['When does the clinic open?', 'How much is a checkup?', 'Where is the parking garage?', 'When does Doctor Smith see children?', 'When are flu shots given?', 'When does the pharmacy close?'];

/**
 * Issue 25: grounding on simulated calls was intermittent. Ingest workers racing for the same
 * index version wrote the same object key: the loser overwrote the winner's object, then deleted
 * it. The container that won kept the right index in memory (chats answered), but any container
 * loading it afresh (a cold start, or this one once other knowledge bases had pushed it out of
 * its cache) found a wrong index or none, and the call's agent said it had no information.
 */
it.each([1, 2, 3])('grounds every question on what its knowledge base holds after documents were indexed by concurrent workers, also from a cold cache (round %i)', async () => {
  const org = uuidv7();
  const kb = await createKnowledgeBase(org, { name: 'clinic', description: '' });
  for (const [i, text] of FACTS.entries()) await asFunction('ingestDocuments', () => ingest(org, IngestBody.parse({ kb_id: kb.id, doc_id: `d${i}`, text })));
  const messages = sent.splice(0);
  // One batch per message, all at once, as the queue runner (and Lambda) runs them.
  await Promise.all(messages.map((m) => asFunction('rag-ingest', () => worker(event([m])))));
  for (const fresh of [false, true]) {
    if (fresh) forgetIndex(); // another container, or this one after other knowledge bases pushed this index out
    const state = await currentIndex(org, kb.id);
    expect(Object.keys(state!.docs).sort()).toEqual(FACTS.map((_, i) => `d${i}`));
    for (const [i, q] of QUESTIONS.entries()) {
      const passages = await groundingPassages(org, kb.id, q);
      expect(passages[0]?.text).toBe(FACTS[i]);
    }
  }
}, 60_000);

/**
 * Issue 36.5: a simulated call answered "I don't have information about that" when the same
 * organization had earlier chatted with an agent on another knowledge base holding documents with
 * the same ids. Document items are keyed by organization and `doc_id` alone, and a deleted
 * knowledge base frees its ids at once (docs/api.md, "Knowledge base"), so the new knowledge base's
 * documents sit under the very keys the old one's cleanup was about to delete: the cleanup read its
 * page of keys (a GSI query, which DynamoDB may also answer from a stale index), the ids were
 * ingested again meanwhile, and its unconditional delete removed the new documents; their ingestion
 * then found them gone and took them out of the new index, and the call grounded on nothing.
 */
it('grounds a call on its knowledge base after an earlier chat on a deleted knowledge base that held the same document ids, whose cleanup raced the new ingestion', async () => {
  const org = uuidv7();
  const ids = FACTS.map((_, i) => `d${i}`);
  const queueAll = async (kbId: string, texts: string[]) => {
    for (const [i, text] of texts.entries()) await asFunction('ingestDocuments', () => ingest(org, IngestBody.parse({ kb_id: kbId, doc_id: ids[i], text })));
  };
  const runWorkers = () => Promise.all(sent.splice(0).map((m) => asFunction('rag-ingest', () => worker(event([m])))));
  const ingestAll = async (kbId: string, texts: string[]) => {
    await queueAll(kbId, texts);
    await runWorkers();
  };
  // The earlier chat: an agent on the first knowledge base answers from it.
  const first = await createKnowledgeBase(org, { name: 'shop', description: '' });
  const SHOP = FACTS.map((_, i) => `The shop sells bicycle model ${i} in red.`);
  await ingestAll(first.id, SHOP);
  expect((await groundingPassages(org, first.id, 'Which bicycle is red?'))[0]?.text).toMatch(/bicycle/);
  const cleanups: KbCleanupMessage[] = [];
  installLocalQueue({ send: async (queue, body) => void (queue === KB_CLEANUP_QUEUE ? cleanups.push(body as KbCleanupMessage) : sent.push(body as IngestMessage)) });
  try {
    await deleteKnowledgeBase(org, first.id);
    const second = await createKnowledgeBase(org, { name: 'clinic', description: '' });
    // The cleanup reads its page of the first knowledge base's documents; before it deletes them, the same ids are ingested into the second.
    const reingest = withAfterQuery(gsi1.kbDocuments(org, first.id), () => queueAll(second.id, FACTS));
    try {
      for (let runs = 0; cleanups.length && runs < 20; runs++) await asFunction('kb-cleanup', () => runKnowledgeBaseCleanup(cleanups.shift()!));
    } finally {
      reingest.remove();
    }
    expect(reingest.ran()).toBe(true);
    await runWorkers();
    // The simulated call's grounding (one index read, each caller line ranked against it), from a warm and from a cold cache.
    for (const fresh of [false, true]) {
      if (fresh) forgetIndex();
      const ground = await groundingSource(org, second.id);
      for (const [i, q] of QUESTIONS.entries()) expect((await ground(q))[0]?.text).toBe(FACTS[i]);
    }
    for (const id of ids) expect(await getDocument(org, org, id)).toMatchObject({ kb_id: second.id, status: 'indexed' });
  } finally {
    installLocalQueue({ send: async (queue, body) => void (queue === 'rag-ingest' && sent.push(body as IngestMessage)) });
  }
}, 60_000);

/** Runs `work` once, right after the first query of the GSI partition `partition` answers (the interleaving a race needs, made deterministic). */
function withAfterQuery(partition: string, work: () => Promise<void>) {
  let done = false;
  const name = `after-query-${partition}`;
  db().middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (!done && context.commandName === 'QueryCommand' && JSON.stringify(args.input).includes(partition)) {
        done = true;
        await work();
      }
      return out;
    },
    { step: 'initialize', name },
  );
  return { ran: () => done, remove: () => db().middlewareStack.remove(name) };
}
