import type { SQSEvent } from 'aws-lambda';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetConfig } from '../../shared/config';
import { currentIndex, forgetIndex } from '../../shared/domain/rag/index-store';
import { ingestBatchHandler } from '../../shared/domain/rag/ingest-worker';
import { IngestBody } from '../../shared/domain/rag/schemas';
import {
  createKnowledgeBase,
  deleteDocument,
  deleteKnowledgeBase,
  getDocument,
  ingest,
  queryKnowledgeBase,
  type IngestMessage,
} from '../../shared/domain/rag/service';
import { asFunction } from '../support/access';

/** Messages the service queued, captured instead of run. */
const sent: IngestMessage[] = [];
const ingestWorker = ingestBatchHandler(3);
/** The ingest job's handler, run with the rag-ingest job's grants. */
const handler = (e: SQSEvent) => asFunction('rag-ingest', () => ingestWorker(e));
let seq = 0;

function event(messages: IngestMessage[], receiveCount = 1): SQSEvent {
  return {
    Records: messages.map((m) => ({
      messageId: `m-${++seq}`,
      receiptHandle: 'r',
      body: JSON.stringify(m),
      attributes: { ApproximateReceiveCount: String(receiveCount), SentTimestamp: '0', SenderId: 'test', ApproximateFirstReceiveTimestamp: '0' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:local:0:rag-ingest',
      awsRegion: 'local',
    })),
  };
}

const ingestText = (orgId: string, body: Record<string, unknown>) => asFunction('ingestDocuments', () => ingest(orgId, IngestBody.parse(body)));
const drain = () => sent.splice(0);
const query = (org: string, body: Parameters<typeof queryKnowledgeBase>[1]) => asFunction('queryKnowledgeBase', () => queryKnowledgeBase(org, body));

beforeAll(() => {
  resetConfig();
  installLocalQueue({ send: async (queue, body) => void (queue === 'rag-ingest' && sent.push(body as IngestMessage)) });
});
afterAll(() => installLocalQueue(undefined));

describe('the ingest worker', () => {
  it('never indexes a document twice when a message is delivered again', async () => {
    // Prepare
    const org = uuidv7();
    const kb = await createKnowledgeBase(org, { name: 'kb', description: '' });
    await ingestText(org, { kb_id: kb.id, doc_id: 'lamp', text: 'The desk lamp uses a warm white LED bulb rated for 25,000 hours.' });
    const [message] = drain();
    // Act: the same message three times, once in a batch with itself, as SQS may deliver it.
    expect(await handler(event([message!, message!]))).toEqual({ batchItemFailures: [] });
    const afterFirst = await currentIndex(org, kb.id);
    expect(await handler(event([message!], 2))).toEqual({ batchItemFailures: [] });
    forgetIndex(); // read what is stored, not this process's cache
    const afterRedelivery = await currentIndex(org, kb.id);
    // Assess
    expect(afterRedelivery!.version).toBe(afterFirst!.version);
    expect(afterRedelivery!.ranker.size()).toBe(1);
    const result = await query(org, { kb_id: kb.id, query: 'lamp bulb hours', top_k: 5 });
    expect(result.passages).toHaveLength(1);
    expect((await getDocument(org, org, 'lamp')).status).toBe('indexed');
  });

  it('ignores a late message of an older generation after a re-ingest (the newer text stays, no duplicate passages)', async () => {
    const org = uuidv7();
    const kb = await createKnowledgeBase(org, { name: 'kb', description: '' });
    await ingestText(org, { kb_id: kb.id, doc_id: 'a', text: 'Alpha passage about gardening tools.' });
    const first = drain();
    await handler(event(first));
    // A message of an older generation arrives after a re-ingest: it must change nothing.
    await ingestText(org, { kb_id: kb.id, doc_id: 'a', text: 'Alpha replaced: now about kitchen knives.' });
    const second = drain();
    await handler(event(second));
    await handler(event(first, 2));
    forgetIndex();
    const index = await currentIndex(org, kb.id);
    expect(index!.ranker.size()).toBe(1);
    expect(index!.docs.a!.generation).toBe(second[0]!.generation);
    const hits = await query(org, { kb_id: kb.id, query: 'gardening knives', top_k: 5 });
    expect(hits.passages.map((p) => p.text)).toEqual(['Alpha replaced: now about kitchen knives.']);
    expect((await getDocument(org, org, 'a')).text).toBe('Alpha replaced: now about kitchen knives.');
  });

  it('removes a deleted document from the index and a deleted knowledge base with everything in it', async () => {
    const org = uuidv7();
    const kb = await createKnowledgeBase(org, { name: 'kb', description: '' });
    await ingestText(org, { kb_id: kb.id, doc_id: 'x', text: 'Xylophones are percussion instruments.' });
    await ingestText(org, { kb_id: kb.id, doc_id: 'y', text: 'Yodelling is a form of singing.' });
    await handler(event(drain()));
    await asFunction('deleteKbDocument', () => deleteDocument(org, org, 'x'));
    forgetIndex();
    expect((await query(org, { kb_id: kb.id, query: 'xylophones percussion', top_k: 5 })).passages).toEqual([]);
    expect((await currentIndex(org, kb.id))!.ranker.size()).toBe(1);
    // A message for the deleted document (redelivered late) changes nothing.
    await ingestText(org, { kb_id: kb.id, doc_id: 'z', text: 'Zithers have many strings.' });
    const late = drain();
    await asFunction('deleteKnowledgeBase', () => deleteKnowledgeBase(org, kb.id));
    expect(await handler(event(late))).toEqual({ batchItemFailures: [] });
    expect(await currentIndex(org, kb.id)).toBeUndefined();
    await expect(getDocument(org, org, 'y')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('commits the documents that worked when others in the batch fail', async () => {
    const org = uuidv7();
    const kb = await createKnowledgeBase(org, { name: 'kb', description: '' });
    await ingestText(org, { kb_id: kb.id, doc_id: 'ok', text: 'Oak trees live for centuries.' });
    // An unreachable host (nothing listens on port 9 of loopback) with loopback allowed: a transient failure.
    process.env.ALLOW_LOOPBACK_FETCH = 'true';
    resetConfig();
    await ingestText(org, { kb_id: kb.id, url: 'http://127.0.0.1:9/down' });
    const messages = drain();
    const first = await handler(event(messages));
    expect(first.batchItemFailures).toHaveLength(1); // only the unreachable page is retried
    expect((await getDocument(org, org, 'ok')).status).toBe('indexed');
    const last = await handler(event([messages[1]!], 3)); // its last delivery
    expect(last.batchItemFailures).toHaveLength(0);
    const failed = await getDocument(org, org, messages[1]!.doc_id);
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringContaining('request failed') });
    delete process.env.ALLOW_LOOPBACK_FETCH;
    resetConfig();
  });
});
