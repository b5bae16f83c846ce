/**
 * Knowledge-base benchmark: ingest throughput and query latency at 1,000 and 10,000 chunks,
 * and retrieval quality (mean reciprocal rank) of 20 plain-language questions whose answers sit
 * among the generated filler. Runs the real service and worker code against DynamoDB Local and
 * the S3 emulator (started here unless the environment already points at them).
 *
 *   npx tsx bench/rag.ts         prints the markdown section
 *   import { ragBenchmark }      returns it (npm run bench writes docs/benchmarks.md)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSEvent } from 'aws-lambda';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../shared/adapters/queue';
import { resetBlobStore } from '../shared/adapters/blob-store';
import { getObject } from '../shared/adapters/kb-objects';
import { resetConfig } from '../shared/config';
import { resetDb } from '../shared/db/client';
import { keys } from '../shared/db/keys';
import { getItem } from '../shared/db/store';
import { forgetIndex } from '../shared/domain/rag/index-store';
import { ingestBatchHandler } from '../shared/domain/rag/ingest-worker';
import { objectKeys } from '../shared/domain/rag/object-keys';
import { IngestBody } from '../shared/domain/rag/schemas';
import { createKnowledgeBase, ingest, queryKnowledgeBase, type IngestMessage } from '../shared/domain/rag/service';
import { startDynamoLocal } from '../shared/local/dynamo';
import { startS3Local } from '../shared/local/s3';
import { ensureTable } from '../shared/local/table';

/** Answers (one document each) and a plain-language question for each. */
const FACTS: [doc: string, text: string, question: string][] = [
  ['refunds', 'Refunds are issued to the original payment card within five business days after we receive the returned item.', 'How long until I get my money refunded?'],
  ['returns', 'You may return unworn items within 30 days of delivery using the prepaid return label in the box.', 'Can I send back clothes I did not wear?'],
  ['shipping-eu', 'Standard shipping within the European Union takes three to five working days from our Rotterdam warehouse.', 'How many days does shipping to Europe take?'],
  ['shipping-us', 'Orders to the United States ship by air freight and arrive in seven to ten days; customs duties are prepaid.', 'Do I pay customs duties when shipping to the United States?'],
  ['password', 'To reset your password open Settings, choose Security and press Send reset link; the link expires after one hour.', 'How do I reset my password?'],
  ['two-factor', 'Two-factor authentication can be enabled under Security with any authenticator app that supports TOTP codes.', 'Which authenticator app works for two-factor login?'],
  ['hours', 'Our phone support line is open Monday to Friday from 9am to 6pm Central European Time.', 'What time is phone support open?'],
  ['warranty', 'Every kettle and toaster carries a two year warranty; send warranty claims with the serial number to our service desk.', 'What do I need for a warranty claim on my toaster?'],
  ['gift-cards', 'Gift cards never expire and can be combined with discount codes at checkout, but cannot be exchanged for cash.', 'Do gift cards expire?'],
  ['invoice', 'A VAT invoice is attached to the order confirmation email and can be downloaded again from your order history.', 'Where can I download my VAT invoice?'],
  ['cancel', 'An order can be cancelled free of charge until it leaves the warehouse, usually within two hours of purchase.', 'Can I cancel my order after buying?'],
  ['address', 'The delivery address can be changed in the order page as long as the parcel has not been handed to the courier.', 'How can I change the delivery address of my parcel?'],
  ['payment', 'We accept Visa, Mastercard, PayPal, iDEAL and Apple Pay; bank transfers are not accepted.', 'Can I pay with PayPal or a bank transfer?'],
  ['student', 'Students receive a fifteen percent discount after verifying their enrolment with a university email address.', 'Is there a discount for students?'],
  ['recycling', 'Old appliances can be brought to any store for free recycling, even if they were bought elsewhere.', 'Where can I recycle my old appliance?'],
  ['size-guide', 'Our size guide lists chest, waist and hip measurements in centimetres for every clothing size from XS to XXL.', 'How do I find my clothing size?'],
  ['newsletter', 'You can unsubscribe from the newsletter with the link at the bottom of every email or in account preferences.', 'How do I unsubscribe from the newsletter emails?'],
  ['data', 'You can request an export or deletion of your personal data from the privacy page; we answer within thirty days.', 'How can I delete my personal data?'],
  ['stores', 'Our stores in Amsterdam, Utrecht and Antwerp are open on Sundays from noon until five in the afternoon.', 'Are the stores open on Sunday?'],
  ['loyalty', 'Loyalty points are earned at one point per euro spent and expire eighteen months after they were earned.', 'When do loyalty points expire?'],
];

/** Deterministic pseudo-random numbers (the corpus is the same in every run). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const SYLLABLES = 'ka lo mi ne ru sa ti vo pe da go hu ji be fa'.split(' ');
function vocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) words.add(Array.from({ length: 2 + Math.floor(random() * 3) }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join(''));
  // Some real words too, so filler competes with the answers on shared terms.
  return [...words, ...'order delivery store account email payment card days item service customer product support time week price'.split(' ')];
}

/** A filler document of about `chunks` chunks (180 words each; chunkText's default size). */
function fillerDoc(random: () => number, vocab: string[], chunks: number): string {
  const sentences: string[] = [];
  for (let w = 0; w < chunks * 150; ) {
    const len = 8 + Math.floor(random() * 12);
    sentences.push(`${Array.from({ length: len }, () => vocab[Math.floor(Math.pow(random(), 2) * vocab.length)]).join(' ')}.`);
    w += len;
  }
  return sentences.join(' ');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function withStorage<T>(fn: () => Promise<T>): Promise<T> {
  if (process.env.DYNAMODB_ENDPOINT && process.env.S3_ENDPOINT && process.env.TABLE_NAME) return fn();
  const dir = mkdtempSync(join(tmpdir(), 'vap-rag-bench-'));
  const saved = { ...process.env };
  const [dynamo, s3] = await Promise.all([startDynamoLocal(), startS3Local({ directory: join(dir, 's3'), buckets: ['rag-bench'] })]);
  try {
    await ensureTable(dynamo.endpoint, 'rag-bench');
    Object.assign(process.env, {
      TABLE_NAME: 'rag-bench', BUCKET_NAME: 'rag-bench', DYNAMODB_ENDPOINT: dynamo.endpoint, S3_ENDPOINT: s3.endpoint, RUNTIME: 'local',
      AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    });
    resetConfig(); resetDb(); resetBlobStore();
    return await fn();
  } finally {
    process.env = saved;
    resetConfig(); resetDb(); resetBlobStore();
    await Promise.all([dynamo.stop(), s3.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

interface ScaleResult {
  chunks: number;
  docs: number;
  ingestSeconds: number;
  chunksPerSecond: number;
  indexBytes: number;
  coldQueryMs: number;
  warmP50: number;
  warmP95: number;
  mrr: number;
  top1: number;
}

async function runScale(targetChunks: number): Promise<ScaleResult> {
  const random = rng(42);
  const vocab = vocabulary(4000, random);
  const org = uuidv7();
  const kb = await createKnowledgeBase(org, { name: `bench-${targetChunks}`, description: '' });
  const sent: IngestMessage[] = [];
  installLocalQueue({ send: async (_q, body) => void sent.push(body as IngestMessage) });
  const handler = ingestBatchHandler(3);
  const CHUNKS_PER_DOC = 10;
  const fillerDocs = Math.max(0, Math.round((targetChunks - FACTS.length) / CHUNKS_PER_DOC));
  const docs: { doc_id: string; text: string }[] = [
    ...FACTS.map(([doc, text]) => ({ doc_id: doc, text })),
    ...Array.from({ length: fillerDocs }, (_, i) => ({ doc_id: `filler-${i}`, text: fillerDoc(random, vocab, CHUNKS_PER_DOC) })),
  ];
  // Shuffle so the answers are spread across batches.
  for (let i = docs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [docs[i], docs[j]] = [docs[j]!, docs[i]!];
  }
  const started = performance.now();
  for (let i = 0; i < docs.length; i += 10) {
    const batch = docs.slice(i, i + 10);
    await Promise.all(batch.map((d) => ingest(org, IngestBody.parse({ kb_id: kb.id, doc_id: d.doc_id, text: d.text }))));
    const messages = sent.splice(0);
    const event: SQSEvent = {
      Records: messages.map((m, k) => ({
        messageId: `${i}-${k}`, receiptHandle: 'r', body: JSON.stringify(m),
        attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'bench', ApproximateFirstReceiveTimestamp: '0' },
        messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'bench', awsRegion: 'local',
      })),
    };
    const out = await handler(event);
    if (out.batchItemFailures.length) throw new Error(`ingest failures: ${JSON.stringify(out.batchItemFailures)}`);
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  const kbItem = await getItem<{ index_version: number; index_chunks: number }>(keys.knowledgeBase(org, kb.id));
  const indexObject = await getObject(objectKeys.index(org, kb.id, kbItem!.index_version));

  forgetIndex();
  const coldStart = performance.now();
  await queryKnowledgeBase(org, { kb_id: kb.id, query: FACTS[0]![2], top_k: 5 });
  const coldQueryMs = performance.now() - coldStart;

  const latencies: number[] = [];
  let rr = 0;
  let top1 = 0;
  for (let round = 0; round < 5; round++) {
    for (const [doc, , question] of FACTS) {
      const t = performance.now();
      const { passages } = await queryKnowledgeBase(org, { kb_id: kb.id, query: question, top_k: 10 });
      latencies.push(performance.now() - t);
      if (round === 0) {
        const rank = passages.findIndex((p) => p.doc_id === doc);
        if (rank >= 0) rr += 1 / (rank + 1);
        if (rank === 0) top1++;
      }
    }
  }
  installLocalQueue(undefined);
  return {
    chunks: kbItem!.index_chunks,
    docs: docs.length,
    ingestSeconds,
    chunksPerSecond: kbItem!.index_chunks / ingestSeconds,
    indexBytes: indexObject?.size ?? 0,
    coldQueryMs,
    warmP50: median(latencies),
    warmP95: pct(latencies, 95),
    mrr: rr / FACTS.length,
    top1,
  };
}

/** Runs the benchmark and returns its markdown section. */
export async function ragBenchmark(scales: number[] = [1_000, 10_000]): Promise<string> {
  const results = await withStorage(async () => {
    const out: ScaleResult[] = [];
    for (const s of scales) out.push(await runScale(s));
    return out;
  });
  const rows = results.map(
    (r) =>
      `| ${r.chunks.toLocaleString('en')} | ${r.docs} | ${r.ingestSeconds.toFixed(1)} s | ${r.chunksPerSecond.toFixed(0)} | ${(r.indexBytes / 1024 / 1024).toFixed(2)} MB | ` +
      `${r.coldQueryMs.toFixed(0)} ms | ${r.warmP50.toFixed(2)} ms | ${r.warmP95.toFixed(2)} ms | ${r.mrr.toFixed(3)} | ${r.top1}/${FACTS.length} |`,
  );
  return [
    '## Knowledge base (RAG)',
    '',
    'Real service and worker code against DynamoDB Local and the S3 emulator on this machine (`npx tsx bench/rag.ts`).',
    'Ingest: documents of about ten chunks, queued ten at a time (one SQS-sized batch), each batch prepared and committed',
    'to the index as the worker does (one new index version per batch). Query: BM25 (MiniSearch) over the knowledge base;',
    '"cold" is the first query of a container (loads the index object from S3), "warm" the next 100 (index cached by version;',
    'chunk files of hit documents read from S3 or cache). Quality: 20 plain-language questions, each answered by one of 20',
    'hand-written passages hidden among generated filler; MRR over the top 10, and how often the answer came first.',
    '',
    '| chunks | documents | ingest time | chunks/s | index object | cold query | warm p50 | warm p95 | MRR@10 | answer first |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    'The whole index is rewritten per batch, so ingest cost per batch grows with the knowledge base; that is the price of a',
    'query path that needs one GetItem and (when the index changed) one object read. See docs/api.md, "Knowledge base (RAG)".',
    '',
  ].join('\n');
}

if (require.main === module) {
  ragBenchmark()
    .then((md) => console.log(md))
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    });
}
