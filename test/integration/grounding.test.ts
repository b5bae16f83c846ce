import type { SQSEvent } from 'aws-lambda';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetConfig } from '../../shared/config';
import { groundingPassages } from '../../shared/domain/conversations/grounding';
import { currentIndex, forgetIndex } from '../../shared/domain/rag/index-store';
import { ingestBatchHandler } from '../../shared/domain/rag/ingest-worker';
import { IngestBody } from '../../shared/domain/rag/schemas';
import { createKnowledgeBase, ingest, type IngestMessage } from '../../shared/domain/rag/service';
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
