import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, ignoreConditionFailed, transact, updateExisting } from '../../db/store';
import { EgressRefusedError, FetchFailedError, safeFetch } from '../../adapters/egress';
import { getObject, ObjectTooLargeError, putObject } from '../../adapters/kb-objects';
import { logger } from '../../logger';
import { chunkText } from './chunk';
import { contentKind, extractText } from './extract';
import { chunkId, updateIndex } from './index-store';
import { objectKeys } from './object-keys';
import { MAX_UPLOAD_BYTES } from './schemas';
import { removeFromIndex, type DocItem, type IngestMessage } from './service';

/** Largest page or file fetched for ingestion. */
export const MAX_SOURCE_BYTES = MAX_UPLOAD_BYTES;

/** A failure retrying will not fix: the document is marked `failed` with this reason at once. */
export class PermanentFailure extends Error {}

/** A document read, extracted, chunked and stored, waiting for the index commit. */
export interface PreparedDoc {
  message: IngestMessage;
  title: string;
  metadata: Record<string, unknown>;
  chunks: string[];
  textKey: string;
  /** A `url` document's page. */
  url: string | null;
}

/**
 * One document's ingestion up to the index: load the source (inline text, a URL through the
 * egress guard, or an uploaded file), keep the original, extract readable text, chunk it and
 * store text and chunks under the document's generation. Returns undefined when the message is
 * stale (the document was deleted, re-ingested since, or already done).
 */
export async function prepareDocument(message: IngestMessage): Promise<PreparedDoc | undefined> {
  const { org_id: orgId, kb_id: kbId, doc_id: docId, generation } = message;
  const doc = await getItem<DocItem>(keys.kbDocument(orgId, docId));
  if (!doc || doc.generation !== generation || doc.kb_id !== kbId || doc.status !== 'pending') return undefined;
  const originalKey = objectKeys.original(orgId, kbId, docId, generation);
  let body: Buffer;
  let contentType: string;
  let url: string | undefined;
  if (doc.source.type === 'text') {
    const object = await getObject(originalKey);
    if (!object) throw new PermanentFailure('the text to ingest was not stored');
    body = object.body;
    contentType = 'text/plain';
  } else if (doc.source.type === 'url') {
    url = doc.source.url!;
    const res = await safeFetch(url, { timeoutMs: 15_000, maxBytes: MAX_SOURCE_BYTES + 1 });
    if (res.truncated) throw new PermanentFailure(`the page is larger than ${MAX_SOURCE_BYTES} bytes`);
    if (res.status >= 500) throw new FetchFailedError(url, `HTTP ${res.status} fetching ${url}`, res.status);
    if (res.status < 200 || res.status >= 300) throw new PermanentFailure(`HTTP ${res.status} fetching ${url}`);
    body = res.body;
    contentType = res.contentType;
    url = res.url;
    await putObject(originalKey, body, contentType || 'application/octet-stream');
  } else {
    let object;
    try {
      object = await getObject(objectKeys.upload(orgId, doc.source.upload_id!), MAX_UPLOAD_BYTES);
    } catch (err) {
      if (err instanceof ObjectTooLargeError) throw new PermanentFailure(`the uploaded file is ${err.size} bytes; at most ${err.maxBytes} are accepted`);
      throw err;
    }
    if (!object) throw new PermanentFailure('the file was not uploaded: PUT it to the upload_url first');
    body = object.body;
    contentType = doc.source.content_type ?? object.contentType;
    await putObject(originalKey, body, contentType);
  }
  const kind = contentKind(contentType, url);
  if (!kind) throw new PermanentFailure(`content type "${contentType || 'unknown'}" is not supported (HTML, PDF, Markdown, plain text)`);
  let extracted;
  try {
    extracted = await extractText(body, kind, url);
  } catch (err) {
    throw new PermanentFailure(`could not read the ${kind} content: ${(err as Error).message}`);
  }
  if (!extracted.text) throw new PermanentFailure('no readable text');
  const title = doc.title || extracted.title;
  const chunks = chunkText(extracted.text);
  const textKey = objectKeys.text(orgId, kbId, docId, generation);
  await Promise.all([
    putObject(textKey, extracted.text, 'text/plain; charset=utf-8'),
    putObject(objectKeys.chunks(orgId, kbId, docId, generation), JSON.stringify(chunks), 'application/json'),
  ]);
  return { message, title, metadata: doc.metadata ?? {}, chunks, textKey, url: doc.source.type === 'url' ? (doc.source.url ?? null) : null };
}

/**
 * Puts prepared documents of one knowledge base into its index in one new version. A document
 * whose generation is already there is skipped (a redelivered message never indexes twice);
 * an older generation of it is replaced. Then each document is marked `indexed`, conditioned on
 * its generation: when that fails the document was deleted or re-ingested meanwhile, and a
 * deleted one is taken out of the index again.
 */
export async function commitDocuments(orgId: string, kbId: string, prepared: PreparedDoc[]): Promise<void> {
  if (!prepared.length) return;
  const state = await updateIndex(orgId, kbId, (index) => {
    let changed = false;
    for (const p of prepared) {
      const { doc_id: docId, generation } = p.message;
      const entry = index.docs[docId];
      if (entry?.generation === generation) continue;
      if (entry) index.ranker.remove(Array.from({ length: entry.chunk_count }, (_, n) => chunkId(docId, n)));
      index.ranker.add(p.chunks.map((text, n) => ({ id: chunkId(docId, n), doc_id: docId, n, title: p.title, text })));
      index.docs[docId] = { generation, chunk_count: p.chunks.length, title: p.title, metadata: p.metadata, url: p.url };
      changed = true;
    }
    return changed;
  });
  if (!state) return; // The knowledge base was deleted; its objects went with it.
  const now = new Date().toISOString();
  for (const p of prepared) {
    const { doc_id: docId, generation } = p.message;
    try {
      await transact([
        updateExisting(
          keys.kbDocument(orgId, docId),
          { status: 'indexed', chunk_count: p.chunks.length, title: p.title, text_key: p.textKey, indexed_at: now, updated_at: now, error: null },
          { condition: '#g = :g', names: { '#g': 'generation' }, values: { ':g': generation } },
        ),
      ]);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (!(await getItem(keys.kbDocument(orgId, docId)))) await removeFromIndex(orgId, kbId, docId, generation);
    }
  }
}

/** Marks one ingestion `failed` with a reason (only while it is still the document's current one). */
export async function markFailed(message: IngestMessage, reason: string): Promise<void> {
  const now = new Date().toISOString();
  await transact([
    updateExisting(keys.kbDocument(message.org_id, message.doc_id), { status: 'failed', error: reason.slice(0, 1000), updated_at: now }, {
      condition: '#g = :g AND #s = :pending',
      names: { '#g': 'generation', '#s': 'status' },
      values: { ':g': message.generation, ':pending': 'pending' },
    }),
  ]).catch(ignoreConditionFailed);
}

/**
 * The ingest queue's batch handler, in two phases: every record is prepared on its own (one
 * failing page never stops the others), then the prepared documents of each knowledge base are
 * committed to its index in one new version (one index write per batch, not per document).
 * Permanent failures (a refused address, HTTP 4xx, an unsupported type) mark the document
 * `failed` at once; transient ones (HTTP 5xx, network, storage) are reported as batch item
 * failures and retried, and on the last delivery the document is marked `failed` with the
 * reason instead. A commit that fails reports its records for retry.
 */
export function ingestBatchHandler(maxReceiveCount: number) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const failures = new Set<string>();
    const prepared = new Map<string, { record: SQSRecord; doc: PreparedDoc }[]>();
    await Promise.all(
      event.Records.map(async (record) => {
        let message: IngestMessage;
        try {
          message = JSON.parse(record.body) as IngestMessage;
        } catch {
          logger.error('dropping unparseable ingest message', { message_id: record.messageId });
          return;
        }
        try {
          const doc = await prepareDocument(message);
          if (!doc) return;
          const group = `${message.org_id}/${message.kb_id}`;
          prepared.set(group, [...(prepared.get(group) ?? []), { record, doc }]);
        } catch (err) {
          const reason = (err as Error).message;
          const lastTry = Number(record.attributes.ApproximateReceiveCount ?? 1) >= maxReceiveCount;
          if (err instanceof PermanentFailure || err instanceof EgressRefusedError || lastTry) {
            logger.warn('document ingestion failed', { doc_id: message.doc_id, reason });
            await markFailed(message, reason).catch(() => failures.add(record.messageId));
          } else {
            logger.warn('document ingestion will be retried', { doc_id: message.doc_id, reason });
            failures.add(record.messageId);
          }
        }
      }),
    );
    for (const entries of prepared.values()) {
      const { org_id: orgId, kb_id: kbId } = entries[0]!.doc.message;
      try {
        await commitDocuments(orgId, kbId, entries.map((e) => e.doc));
      } catch (err) {
        logger.error('index commit failed; the batch records will be retried', { kb_id: kbId, error: (err as Error).message });
        for (const e of entries) failures.add(e.record.messageId);
      }
    }
    return { batchItemFailures: [...failures].map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
