import type { SQSEvent } from 'aws-lambda';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { s3 } from '../../shared/adapters/blob-store';
import { config, resetConfig } from '../../shared/config';
import { collections, gsi1, keys, Prefix } from '../../shared/db/keys';
import { getItem, queryAll } from '../../shared/db/store';
import { createAgent, getAgent } from '../../shared/domain/agents/service';
import { CreateAgentBody } from '../../shared/domain/agents/schemas';
import { ingestBatchHandler } from '../../shared/domain/rag/ingest-worker';
import { cleanUpKnowledgeBase, KB_CLEANUP_QUEUE, runKnowledgeBaseCleanup, WAIT_FOR_DELETE_SECONDS, type KbCleanupMessage } from '../../shared/domain/rag/kb-deletion';
import { objectKeys } from '../../shared/domain/rag/object-keys';
import { IngestBody } from '../../shared/domain/rag/schemas';
import {
  createKnowledgeBase,
  deleteDocument,
  deleteKnowledgeBase,
  getDocument,
  getKnowledgeBase,
  ingest,
  listDocuments,
  listKnowledgeBases,
  queryKnowledgeBase,
} from '../../shared/domain/rag/service';
import { handler as cleanupJob } from '../../functions/jobs/kb-cleanup';
import { lambdaContext } from '../support/events';

/** Messages sent, by queue, captured instead of run. */
const sent: { queue: string; body: any; delaySeconds?: number }[] = [];
const take = (queue: string) => {
  const out = sent.filter((m) => m.queue === queue).map((m) => m.body);
  sent.splice(0, sent.length, ...sent.filter((m) => m.queue !== queue));
  return out;
};
let seq = 0;
const sqsEvent = (bodies: unknown[]): SQSEvent => ({
  Records: bodies.map((b) => ({
    messageId: `m-${++seq}`, receiptHandle: 'r', body: JSON.stringify(b), messageAttributes: {}, md5OfBody: '',
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 't', ApproximateFirstReceiveTimestamp: '0' },
    eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:0:q', awsRegion: 'local',
  })),
});

const objectsUnder = async (prefix: string) =>
  (await (await s3()).send(new ListObjectsV2Command({ Bucket: config().bucketName, Prefix: prefix }))).KeyCount ?? 0;
const documentItems = async (orgId: string) => {
  let n = 0;
  for await (const item of queryAll({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.kbDocument }, ['pk'], true)) n += item ? 1 : 0;
  return n;
};
const indexedDocuments = async (orgId: string, kbId: string) => {
  let n = 0;
  for await (const item of queryAll({ index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.kbDocuments(orgId, kbId), skName: 'gsi1sk' }, ['pk'])) n += item ? 1 : 0;
  return n;
};

/** A knowledge base with `count` indexed documents and an agent that names it. */
async function bigKnowledgeBase(count: number) {
  const org = uuidv7();
  const kb = await createKnowledgeBase(org, { name: 'big', description: '' });
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) =>
        ingest(org, IngestBody.parse({ kb_id: kb.id, doc_id: `doc-${i + j}`, text: `Document ${i + j} is about topic ${i + j}.` })),
      ),
    );
  }
  const ingestWorker = ingestBatchHandler(3);
  const messages = take('rag-ingest');
  for (let i = 0; i < messages.length; i += 10) await ingestWorker(sqsEvent(messages.slice(i, i + 10)));
  const agent = await createAgent(org, CreateAgentBody.parse({ name: 'uses kb', knowledge_base: kb.id }));
  return { org, kb, agent };
}

beforeAll(() => {
  resetConfig();
  installLocalQueue({ send: async (queue, body, options) => void sent.push({ queue, body, delaySeconds: options?.delaySeconds }) });
});
afterAll(() => installLocalQueue(undefined));

describe('deleting a large knowledge base', () => {
  it('answers at once, hides it from every read at once, and leaves nothing once the job has run (even run twice or cut off midway)', async () => {
    // Prepare: 120 documents, indexed (originals, texts, chunks and index versions in the bucket).
    const { org, kb, agent } = await bigKnowledgeBase(120);
    const kbPrefix = objectKeys.kbPrefix(org, kb.id);
    expect(await objectsUnder(kbPrefix)).toBeGreaterThan(120);

    // Act: the request.
    await deleteKnowledgeBase(org, kb.id);

    // Assess: nothing was cleaned inside the request (it did O(1) work) …
    expect(await documentItems(org)).toBe(120);
    expect(await objectsUnder(kbPrefix)).toBeGreaterThan(120);
    // … yet every read answers 404 at once.
    const notFound = { statusCode: 404 };
    await expect(getKnowledgeBase(org, kb.id)).rejects.toMatchObject(notFound);
    expect((await listKnowledgeBases(org, { limit: 100 })).items).toEqual([]);
    await expect(listDocuments(org, { kb_id: kb.id, limit: 10 })).rejects.toMatchObject(notFound);
    await expect(getDocument(org, org, 'doc-1')).rejects.toMatchObject(notFound);
    await expect(deleteDocument(org, org, 'doc-1')).rejects.toMatchObject(notFound);
    await expect(queryKnowledgeBase(org, { kb_id: kb.id, query: 'topic', top_k: 3 })).rejects.toMatchObject(notFound);
    await expect(ingest(org, IngestBody.parse({ kb_id: kb.id, text: 'late' }))).rejects.toMatchObject(notFound);
    await expect(deleteKnowledgeBase(org, kb.id)).rejects.toMatchObject(notFound);
    const [message] = take(KB_CLEANUP_QUEUE) as KbCleanupMessage[];
    expect(message).toMatchObject({ org_id: org, kb_id: kb.id });
    expect(take(KB_CLEANUP_QUEUE)).toEqual([]); // the second (404) delete queued nothing

    // Act: one page, then the run "dies" (its re-queue never happens) and SQS delivers the same message again, twice at once.
    expect(await cleanUpKnowledgeBase(message!, 50)).toBe('more');
    expect(await documentItems(org)).toBe(70);
    const results = await Promise.all([cleanupJob(sqsEvent([message]), lambdaContext), cleanupJob(sqsEvent([message]), lambdaContext)]);
    expect(results).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    // Each run re-queues the message while work remains: deliver until none is left.
    for (let rounds = 0; rounds < 20; rounds++) {
      const next = take(KB_CLEANUP_QUEUE);
      if (!next.length) break;
      await cleanupJob(sqsEvent(next), lambdaContext);
    }
    // And once more after the end: a redelivery of a finished cleanup changes nothing.
    expect(await cleanUpKnowledgeBase(message!)).toBe('done');

    // Assess: nothing of it remains in the table or the bucket; the agent's reference is cleared.
    expect(await documentItems(org)).toBe(0);
    expect(await indexedDocuments(org, kb.id)).toBe(0);
    expect(await getItem(keys.counter(org, collections.kbDocuments(kb.id)))).toBeUndefined();
    expect(await objectsUnder(kbPrefix)).toBe(0);
    expect((await getAgent(org, agent.id)).knowledge_base).toBe('');
    expect(take(KB_CLEANUP_QUEUE)).toEqual([]);
  });

  it('never cleans a knowledge base that still exists (the message waits for the delete to land)', async () => {
    const { org, kb } = await bigKnowledgeBase(2);
    const message: KbCleanupMessage = { org_id: org, kb_id: kb.id, requested_at: new Date().toISOString() };
    expect(await cleanUpKnowledgeBase(message)).toBe('wait');
    // The job looks again later: a delayed copy of the message, and a successful delivery (no retry, no dead letter).
    take(KB_CLEANUP_QUEUE);
    await runKnowledgeBaseCleanup(message);
    expect(sent.filter((m) => m.queue === KB_CLEANUP_QUEUE)).toEqual([{ queue: KB_CLEANUP_QUEUE, body: message, delaySeconds: WAIT_FOR_DELETE_SECONDS }]);
    // Long after, it is dropped rather than retried forever.
    expect(await cleanUpKnowledgeBase(message, 500, Date.now() + 3_600_000)).toBe('done');
    expect((await getKnowledgeBase(org, kb.id)).document_count).toBe(2);
    expect(await objectsUnder(objectKeys.kbPrefix(org, kb.id))).toBeGreaterThan(0);
  });

  it('frees a deleted knowledge base\'s document ids for another knowledge base before the cleanup runs', async () => {
    const { org, kb } = await bigKnowledgeBase(1);
    await deleteKnowledgeBase(org, kb.id);
    const other = await createKnowledgeBase(org, { name: 'other', description: '' });
    const again = await ingest(org, IngestBody.parse({ kb_id: other.id, doc_id: 'doc-0', text: 'A new life.' }));
    expect(again.documents[0]).toMatchObject({ doc_id: 'doc-0', kb_id: other.id, status: 'pending' });
    take('rag-ingest');
    take(KB_CLEANUP_QUEUE);
  });
});
