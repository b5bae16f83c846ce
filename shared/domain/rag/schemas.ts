import * as z from 'zod/mini';
import { named } from '../common/named';
import { freeFormObject, pageQueryShape, uuid } from '../common/schemas';
import { lazy } from '../common/lazy';

/** Document statuses: `pending` (queued), `indexed` (searchable), `failed` (see `error`). */
export const DOCUMENT_STATUSES = ['pending', 'indexed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** Content types a file upload may have. */
export const UPLOAD_CONTENT_TYPES = ['application/pdf', 'text/html', 'text/markdown', 'text/plain'] as const;
export type UploadContentType = (typeof UPLOAD_CONTENT_TYPES)[number];
/** Largest file accepted through POST /rag/uploads. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
/** Largest `text` accepted inline (the request body cap is 1 MB). */
export const MAX_TEXT_CHARS = 900_000;
/** URLs one ingest call may queue (discover returns at most 100). */
export const MAX_URLS = 100;

const jsonObject = () => z.record(z.string(), z.unknown());
/** Client-chosen document ids: letters, digits and `._:@~-`, up to 128 characters. */
export const docId = () => z.string().check(z.regex(/^[A-Za-z0-9._:@~-]{1,128}$/, 'must be 1–128 letters, digits or ._:@~-'));
const httpUrl = () => z.string().check(z.maxLength(2048), z.regex(/^https?:\/\//i, 'must be an http(s) URL'));

export const KbParams = /* @__PURE__ */ lazy(() => z.strictObject({ kb_id: uuid() }));

export const CreateKnowledgeBaseBody = /* @__PURE__ */ named('CreateKnowledgeBaseRequest', () => z.strictObject({
  name: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200)),
  description: z._default(z.string().check(z.maxLength(2000)), ''),
}));
export type CreateKnowledgeBaseInput = z.output<typeof CreateKnowledgeBaseBody>;

export const KnowledgeBase = /* @__PURE__ */ named('KnowledgeBase', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  description: z.string(),
  document_count: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
}), 'A knowledge base: documents an agent can search');
export type KnowledgeBase = z.output<typeof KnowledgeBase>;

export const KbListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export const DiscoverBody = /* @__PURE__ */ named('DiscoverRequest', () => z.strictObject({
  url: httpUrl(),
  max_depth: z._default(z.int().check(z.minimum(0), z.maximum(10)), 5),
  limit: z._default(z.int().check(z.minimum(1), z.maximum(1000)), 100),
}));
export const DiscoverResult = /* @__PURE__ */ named('DiscoverResult', () => z.object({ urls: z.array(z.string()), total: z.number() }), 'The URLs found on a site');

export const CreateUploadBody = /* @__PURE__ */ named('CreateUploadRequest', () => z.strictObject({
  content_type: z.enum(UPLOAD_CONTENT_TYPES),
  size_bytes: z.int().check(z.minimum(1), z.maximum(MAX_UPLOAD_BYTES)),
  filename: z.optional(z.string().check(z.maxLength(255))),
}));
export type CreateUploadInput = z.output<typeof CreateUploadBody>;
export const Upload = /* @__PURE__ */ named('Upload', () => z.object({
  upload_id: z.string(),
  upload_url: z.string(),
  method: z.literal('PUT'),
  headers: z.record(z.string(), z.string()),
  content_type: z.string(),
  size_bytes: z.number(),
  expires_at: z.string(),
}), 'A presigned upload: PUT the file to `upload_url` with `headers`, then ingest `upload_id`');

export const IngestBody = /* @__PURE__ */ named('IngestRequest', () => z.strictObject({
  kb_id: uuid(),
  text: z.optional(z.string().check(z.minLength(1), z.maxLength(MAX_TEXT_CHARS))),
  url: z.optional(httpUrl()),
  urls: z.optional(z.array(httpUrl()).check(z.minLength(1), z.maxLength(MAX_URLS))),
  upload_id: z.optional(uuid()),
  doc_id: z.optional(docId()),
  title: z.optional(z.string().check(z.maxLength(500))),
  metadata: z.optional(freeFormObject()),
}));
export type IngestInput = z.output<typeof IngestBody>;

export const DocumentSource = /* @__PURE__ */ named('DocumentSource', () => z.object({
  type: z.enum(['text', 'url', 'upload']),
  url: z.optional(z.string()),
  upload_id: z.optional(z.string()),
  content_type: z.optional(z.string()),
}), 'Where a document came from');
export type DocumentSource = z.output<typeof DocumentSource>;

const documentFields = /* @__PURE__ */ lazy(() => ({
  org_id: z.string(),
  kb_id: z.string(),
  doc_id: z.string(),
  metadata: jsonObject(),
  status: z.enum(DOCUMENT_STATUSES),
  title: z.string(),
  source: DocumentSource,
  chunk_count: z.number(),
  error: z.nullable(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
  indexed_at: z.nullable(z.string()),
}));
/** A document as lists and ingest return it (no `text`). */
export const KbDocumentSummary = /* @__PURE__ */ named('DocumentSummary', () => z.object(documentFields), 'A document without its text (lists, ingest)');
export type KbDocumentSummary = z.output<typeof KbDocumentSummary>;
/** The seed's knowledge base document: the summary plus the extracted `text`. */
export const KbDocument = /* @__PURE__ */ named('Document', () => z.object({ ...documentFields, text: z.string() }), 'A knowledge base document with its extracted text');
export type KbDocument = z.output<typeof KbDocument>;

export const IngestResult = /* @__PURE__ */ named('IngestResult', () => z.object({ kb_id: z.string(), documents: z.array(KbDocumentSummary) }), 'The documents queued for ingestion');

export const DocumentQuery = /* @__PURE__ */ lazy(() => z.strictObject({ org_id: uuid(), doc_id: docId() }));
export const DocumentListQuery = /* @__PURE__ */ lazy(() => z.strictObject({ ...pageQueryShape, kb_id: uuid() }));

export const QueryBody = /* @__PURE__ */ named('QueryRequest', () => z.strictObject({
  kb_id: uuid(),
  query: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(2000)),
  top_k: z._default(z.int().check(z.minimum(1), z.maximum(50)), 5),
}));
export const Passage = /* @__PURE__ */ named('Passage', () => z.object({
  doc_id: z.string(),
  text: z.string(),
  score: z.number(),
  metadata: jsonObject(),
  chunk_index: z.number(),
}), 'A passage of a document that answers a query');
export type Passage = z.output<typeof Passage>;
export const QueryResult = /* @__PURE__ */ named('QueryResult', () => z.object({ kb_id: z.string(), query: z.string(), passages: z.array(Passage) }), 'The passages that best answer a query');
