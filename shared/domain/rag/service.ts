import { pause } from '../../db/retry';
import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { collections, gsi1, keys, Prefix } from '../../db/keys';
import {
  ConditionFailed,
  ignoreConditionFailed,
  deleteExisting,
  getItem,
  putNew,
  queryPage,
  readCounter,
  stripKeys,
  transact,
  updateExisting,
  type PageRequest,
} from '../../db/store';
import { ConflictError, NotFoundError, ValidationError } from '../../errors';
import { listResult } from '../common/list-result';
import { checkUrlShape, EgressRefusedError } from '../../adapters/egress';
import { normalizeUrl } from '../../adapters/crawler/url';
import { deleteObjects, deletePrefix, getObject, putObject } from '../../adapters/kb-objects';
import { presignPut } from '../../adapters/presigned-urls';
import { queue } from '../../adapters/queue';
import { getOr404, listCollection } from '../common/collection';
import { references } from '../references';
import { chunkIdsOf, forgetIndex, updateIndex } from './index-store';
import { objectKeys } from './object-keys';
import { queueKnowledgeBaseCleanup } from './kb-deletion';
import type {
  CreateKnowledgeBaseInput,
  CreateUploadInput,
  DocumentSource,
  DocumentStatus,
  IngestInput,
  KbDocument,
  KbDocumentSummary,
  KnowledgeBase,
} from './schemas';

const KB_ENTITY = 'KB';
const DOC_ENTITY = 'KBDOC';
const UPLOAD_ENTITY = 'KBUPLOAD';
/** The queue job that indexes documents (shared/jobs/registry.ts). */
export const INGEST_QUEUE = 'rag-ingest';
const UPLOAD_URL_SECONDS = 900;

/** A message of the ingest queue: one document, one ingestion (generation). */
export interface IngestMessage {
  org_id: string;
  kb_id: string;
  doc_id: string;
  generation: string;
}

type KbItem = Omit<KnowledgeBase, 'document_count'> & { pk: string; sk: string; index_version?: number; index_key?: string; index_chunks?: number };
export type DocItem = Omit<KbDocumentSummary, never> & {
  pk: string;
  sk: string;
  generation: string;
  text_key?: string;
};
interface UploadItem {
  upload_id: string;
  content_type: string;
  size_bytes: number;
  filename?: string;
}


// ---------------------------------------------------------------- knowledge bases

async function withCount(orgId: string, item: KbItem): Promise<KnowledgeBase> {
  const { index_version, index_key, index_chunks, ...rest } = stripKeys(item) as KbItem;
  void index_version; void index_key; void index_chunks;
  return { ...(rest as Omit<KnowledgeBase, 'document_count'>), document_count: await readCounter(orgId, collections.kbDocuments(item.id)) };
}

export async function createKnowledgeBase(orgId: string, input: CreateKnowledgeBaseInput): Promise<KnowledgeBase> {
  const now = new Date().toISOString();
  const id = uuidv7();
  const kb = { id, organization_id: orgId, name: input.name, description: input.description, created_at: now, updated_at: now };
  await transact([putNew({ ...keys.knowledgeBase(orgId, id), entity: KB_ENTITY, version: 1, index_version: 0, ...kb })], [
    { orgId, collection: collections.knowledgeBases, delta: 1 },
  ]);
  return { ...kb, document_count: 0 };
}

/** The knowledge base exists (not deleted): a conversation may search it. One GetItem, no count. */
export async function knowledgeBaseExists(orgId: string, kbId: string): Promise<boolean> {
  return !!(await getItem(keys.knowledgeBase(orgId, kbId)));
}

export async function getKnowledgeBase(orgId: string, kbId: string): Promise<KnowledgeBase> {
  return withCount(orgId, await getOr404<KbItem>(keys.knowledgeBase(orgId, kbId), 'Knowledge base', kbId));
}

export async function listKnowledgeBases(orgId: string, query: PageRequest) {
  const page = await listCollection<KbItem, KbItem>(orgId, Prefix.knowledgeBase, collections.knowledgeBases, query, (i) => i);
  // One counter read per listed knowledge base (a page is at most 100), in parallel.
  return { ...page, items: await Promise.all(page.items.map((i) => withCount(orgId, i))) };
}

/**
 * Deletes a knowledge base and answers at once: the cleanup job is queued first, then the item
 * is deleted (with its count), which hides the knowledge base from every read and stops new
 * documents and ingestion at once. Documents, objects, the index and agents' references go in
 * the kb-cleanup job (kb-deletion.ts), in bounded runs, whatever the knowledge base's size.
 */
export async function deleteKnowledgeBase(orgId: string, kbId: string): Promise<void> {
  const kbKey = keys.knowledgeBase(orgId, kbId);
  await getOr404(kbKey, 'Knowledge base', kbId);
  // Queued before the delete, so a deletion that lands is never left without its cleanup; the job
  // waits (redelivery) while the item is still there.
  await queueKnowledgeBaseCleanup(orgId, kbId);
  try {
    await transact([deleteExisting(kbKey)], [{ orgId, collection: collections.knowledgeBases, delta: -1 }]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new NotFoundError('Knowledge base', kbId);
    throw err;
  }
  forgetIndex(orgId, kbId);
}

// ---------------------------------------------------------------- uploads

export async function createUpload(orgId: string, input: CreateUploadInput) {
  const id = uuidv7();
  const now = Date.now();
  const expiresAt = new Date(now + UPLOAD_URL_SECONDS * 1000).toISOString();
  const url = await presignPut(objectKeys.upload(orgId, id), input.content_type, input.size_bytes, UPLOAD_URL_SECONDS);
  await transact([
    putNew({
      ...keys.kbUpload(orgId, id),
      entity: UPLOAD_ENTITY,
      upload_id: id,
      content_type: input.content_type,
      size_bytes: input.size_bytes,
      ...(input.filename ? { filename: input.filename } : {}),
      created_at: new Date(now).toISOString(),
      // An upload not ingested within a day is forgotten (the object stays until a lifecycle rule or KB deletion).
      ttl: Math.floor(now / 1000) + 24 * 3600,
    }),
  ]);
  return {
    upload_id: id,
    upload_url: url,
    method: 'PUT' as const,
    headers: { 'content-type': input.content_type },
    content_type: input.content_type,
    size_bytes: input.size_bytes,
    expires_at: expiresAt,
  };
}

// ---------------------------------------------------------------- ingest

interface DocSpec {
  docId: string;
  source: DocumentSource;
  text?: string;
}

/** A URL's document id within a knowledge base: re-ingesting the same URL replaces its document. */
export function urlDocId(kbId: string, url: string): string {
  return `url-${createHash('sha256').update(`${kbId} ${url}`).digest('hex').slice(0, 32)}`;
}

function checkedUrl(raw: string, path: string): string {
  const url = normalizeUrl(raw);
  if (!url) throw ValidationError.field(path, 'must be an http(s) URL');
  try {
    checkUrlShape(url);
  } catch (err) {
    if (err instanceof EgressRefusedError) throw ValidationError.field(path, `is refused: ${err.reason}`);
    throw err;
  }
  return url;
}

async function docSpecs(orgId: string, input: IngestInput): Promise<DocSpec[]> {
  const given = (['text', 'url', 'urls', 'upload_id'] as const).filter((f) => input[f] !== undefined);
  if (given.length !== 1) {
    const message = given.length ? `give only one of text, url, urls, upload_id (got ${given.join(', ')})` : 'give one of text, url, urls, upload_id';
    throw new ValidationError(`body: ${message}`, (given.length ? given : ['text']).map((path) => ({ path, message })));
  }
  if (input.urls && input.doc_id) throw ValidationError.field('doc_id', 'cannot be given with urls (each URL gets its own document)');
  if (input.text !== undefined) return [{ docId: input.doc_id ?? uuidv7(), source: { type: 'text', content_type: 'text/plain' }, text: input.text }];
  if (input.url !== undefined) {
    const url = checkedUrl(input.url, 'url');
    return [{ docId: input.doc_id ?? urlDocId(input.kb_id, url), source: { type: 'url', url } }];
  }
  if (input.urls) {
    const seen = new Set<string>();
    return input.urls
      .map((raw, i) => checkedUrl(raw, `urls.${i}`))
      .filter((url) => !seen.has(url) && !!seen.add(url))
      .map((url) => ({ docId: urlDocId(input.kb_id, url), source: { type: 'url', url } }));
  }
  const upload = await getItem<UploadItem>(keys.kbUpload(orgId, input.upload_id!));
  if (!upload) throw new NotFoundError('Upload', input.upload_id);
  return [{ docId: input.doc_id ?? uuidv7(), source: { type: 'upload', upload_id: upload.upload_id, content_type: upload.content_type } }];
}

export function docView(item: DocItem): KbDocumentSummary {
  const { generation, text_key, gsi1pk, gsi1sk, ...rest } = stripKeys(item) as DocItem & { gsi1pk?: string; gsi1sk?: string };
  void generation; void text_key; void gsi1pk; void gsi1sk;
  return rest as KbDocumentSummary;
}

/**
 * Writes a document as `pending` under a fresh generation: a new one (counted), or the
 * replacement of an existing one of the same knowledge base. Conditioned on the generation
 * read, so of two racing re-ingests exactly one wins each round.
 */
async function upsertPending(orgId: string, kbId: string, spec: DocSpec, input: IngestInput, generation: string): Promise<DocItem> {
  const key = keys.kbDocument(orgId, spec.docId);
  const guard = references.knowledgeBase(orgId, kbId, 'kb_id');
  for (let attempt = 0; attempt < 10; attempt++) {
    const now = new Date().toISOString();
    const existing = await getItem<DocItem>(key);
    if (existing && existing.kb_id !== kbId && !(await getItem(keys.knowledgeBase(orgId, existing.kb_id)))) {
      // Left by a deleted knowledge base, not cleaned up yet: the id is free again.
      await transact([deleteExisting(key, '#g = :g', { ':g': existing.generation }, { '#g': 'generation' })]).catch(ignoreConditionFailed);
      continue;
    }
    if (existing && existing.kb_id !== kbId) {
      throw new ConflictError(`doc_id ${spec.docId} belongs to knowledge base ${existing.kb_id}; document ids are unique per organization`, {
        doc_id: spec.docId,
        kb_id: existing.kb_id,
      });
    }
    const fields = {
      title: input.title ?? existing?.title ?? '',
      metadata: input.metadata ?? {},
      status: 'pending' as DocumentStatus,
      source: spec.source,
      generation,
      error: null,
      updated_at: now,
    };
    try {
      if (existing) {
        await transact(
          [updateExisting(key, fields, { condition: '#g = :g', names: { '#g': 'generation' }, values: { ':g': existing.generation } })],
          [],
          [guard],
        );
        return { ...existing, ...fields };
      }
      const item: DocItem = {
        ...key,
        org_id: orgId,
        kb_id: kbId,
        doc_id: spec.docId,
        ...fields,
        chunk_count: 0,
        created_at: now,
        indexed_at: null,
      };
      await transact(
        [putNew({ ...item, entity: DOC_ENTITY, gsi1pk: gsi1.kbDocuments(orgId, kbId), gsi1sk: spec.docId })],
        [{ orgId, collection: collections.kbDocuments(kbId), delta: 1 }],
        [guard],
      );
      return item;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The document is being changed by other requests; retry', { doc_id: spec.docId });
}

/**
 * Queues documents for indexing and answers at once: each document is written `pending` with a
 * new generation and one message per document goes to the ingest queue. Inline text is stored
 * first (a queue message holds at most 256 KB).
 */
export async function ingest(orgId: string, input: IngestInput): Promise<{ kb_id: string; documents: KbDocumentSummary[] }> {
  await getOr404(keys.knowledgeBase(orgId, input.kb_id), 'Knowledge base', input.kb_id);
  const specs = await docSpecs(orgId, input);
  const documents: KbDocumentSummary[] = [];
  // A few at a time: a list of 100 URLs is 100 small writes and sends.
  for (let i = 0; i < specs.length; i += 10) {
    const batch = await Promise.all(
      specs.slice(i, i + 10).map(async (spec) => {
        const generation = uuidv7();
        if (spec.text !== undefined) {
          await putObject(objectKeys.original(orgId, input.kb_id, spec.docId, generation), spec.text, 'text/plain; charset=utf-8');
        }
        const item = await upsertPending(orgId, input.kb_id, spec, input, generation);
        const message: IngestMessage = { org_id: orgId, kb_id: input.kb_id, doc_id: spec.docId, generation };
        await queue().send(INGEST_QUEUE, message);
        return docView(item);
      }),
    );
    documents.push(...batch);
  }
  return { kb_id: input.kb_id, documents };
}

// ---------------------------------------------------------------- documents

/** `org_id` must be the caller's organization; any other is answered as not found. */
function sameOrgOr404(callerOrg: string, orgId: string, docId: string): void {
  if (callerOrg !== orgId) throw new NotFoundError('Document', docId);
}

/** A document whose knowledge base still exists (a deleted one's documents wait for the cleanup job, unseen). */
async function liveDocumentOr404(orgId: string, docId: string): Promise<DocItem> {
  const item = await getOr404<DocItem>(keys.kbDocument(orgId, docId), 'Document', docId);
  if (!(await getItem(keys.knowledgeBase(orgId, item.kb_id)))) throw new NotFoundError('Document', docId);
  return item;
}

export async function getDocument(callerOrg: string, orgId: string, docId: string): Promise<KbDocument> {
  sameOrgOr404(callerOrg, orgId, docId);
  const item = await liveDocumentOr404(orgId, docId);
  const text = item.text_key ? ((await getObject(item.text_key))?.body.toString('utf8') ?? '') : '';
  return { ...docView(item), text };
}

export async function listDocuments(orgId: string, query: PageRequest & { kb_id: string }) {
  await getOr404(keys.knowledgeBase(orgId, query.kb_id), 'Knowledge base', query.kb_id);
  const [page, total] = await Promise.all([
    queryPage<DocItem>({ index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.kbDocuments(orgId, query.kb_id), skName: 'gsi1sk' }, query),
    readCounter(orgId, collections.kbDocuments(query.kb_id)),
  ]);
  return listResult({ items: page.items.map(docView), nextCursor: page.nextCursor }, total, query);
}

/** Deletes a document: its item (and count), its passages from the index, then its objects. */
export async function deleteDocument(callerOrg: string, orgId: string, docId: string): Promise<void> {
  sameOrgOr404(callerOrg, orgId, docId);
  const key = keys.kbDocument(orgId, docId);
  const item = await liveDocumentOr404(orgId, docId);
  try {
    await transact([deleteExisting(key)], [{ orgId, collection: collections.kbDocuments(item.kb_id), delta: -1 }]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new NotFoundError('Document', docId);
    throw err;
  }
  await removeFromIndex(orgId, item.kb_id, docId);
  await deletePrefix(objectKeys.docPrefix(orgId, item.kb_id, docId));
}

/** Removes every passage of a document from its knowledge base's index (any generation, or only `generation`). */
export async function removeFromIndex(orgId: string, kbId: string, docId: string, generation?: string): Promise<void> {
  await updateIndex(orgId, kbId, (state) => {
    const entry = state.docs[docId];
    if (!entry || (generation && entry.generation !== generation)) return false;
    state.ranker.remove(chunkIdsOf(docId, entry));
    delete state.docs[docId];
    return true;
  });
}

export { queryKnowledgeBase } from './query';

/** Deletes objects of abandoned ingestions (best effort). */
export async function discardObjects(keysToDelete: string[]): Promise<void> {
  await deleteObjects(keysToDelete).catch(() => undefined);
}
