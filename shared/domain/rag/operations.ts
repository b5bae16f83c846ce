import { objectKeys } from './object-keys';
import { defineOperation } from '../../http/operation';
import {
  CreateKnowledgeBaseBody,
  CreateUploadBody,
  DiscoverBody,
  DiscoverResult,
  DocumentListQuery,
  DocumentQuery,
  IngestBody,
  IngestResult,
  KbDocument,
  KbDocumentSummary,
  KbListQuery,
  KbParams,
  KnowledgeBase,
  QueryBody,
  QueryResult,
  Upload,
} from './schemas';

const tag = 'Knowledge base (RAG)';

export const createKnowledgeBase = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/rag/knowledge-bases', operationId: 'createKnowledgeBase', tag, auth: true,
  summary: 'Create a knowledge base', entry: 'functions/rag/create-knowledge-base.ts',
  body: CreateKnowledgeBaseBody, successMessage: 'Knowledge base created successfully', access: { table: 'RW' },
});

export const listKnowledgeBases = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/rag/knowledge-bases', operationId: 'listKnowledgeBases', tag, auth: true,
  summary: 'List knowledge bases with their document counts', entry: 'functions/rag/list-knowledge-bases.ts',
  query: KbListQuery, list: true, access: { table: 'R' },
});

export const getKnowledgeBase = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/rag/knowledge-bases/{kb_id}', operationId: 'getKnowledgeBase', tag, auth: true,
  summary: 'Get one knowledge base', entry: 'functions/rag/get-knowledge-base.ts',
  params: KbParams, access: { table: 'R' },
});

export const deleteKnowledgeBase = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/rag/knowledge-bases/{kb_id}', operationId: 'deleteKnowledgeBase', tag, auth: true,
  summary: 'Delete a knowledge base; its documents, chunks and index are removed in the background', entry: 'functions/rag/delete-knowledge-base.ts',
  params: KbParams, successMessage: 'Knowledge base deleted successfully', access: { table: 'RW', queues: ['kb-cleanup'] },
});

export const discoverUrls = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/rag/discover', operationId: 'discoverUrls', tag, auth: true,
  summary: 'Crawl a site (sitemap, then links breadth-first) and return the URLs found',
  entry: 'functions/rag/discover.ts', body: DiscoverBody,
  successMessage: 'URLs discovered', access: { table: 'R' }, timeoutSeconds: 29, memoryMb: 512,
  errors: { 422: 'The root URL cannot be resolved or fetched' },
});

export const createKbUpload = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/rag/uploads', operationId: 'createKbUpload', tag, auth: true,
  summary: 'Get a presigned URL to upload a file (PDF, HTML, Markdown, plain text) for ingestion',
  entry: 'functions/rag/create-upload.ts', body: CreateUploadBody,
  successMessage: 'Upload URL issued', access: { table: 'RW', bucket: 'RW', bucketPrefixes: objectKeys.grantPatterns },
});

export const ingestDocuments = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/rag/ingest', operationId: 'ingestDocuments', tag, auth: true,
  summary: 'Queue text, a URL, a list of URLs or an uploaded file for indexing; documents start `pending`',
  entry: 'functions/rag/ingest.ts', body: IngestBody,
  successMessage: 'Documents queued for ingestion', access: { table: 'RW', bucket: 'RW', bucketPrefixes: objectKeys.grantPatterns, queues: ['rag-ingest'] }, timeoutSeconds: 29,
  errors: {
    404: 'The knowledge base or the upload does not exist',
    409: 'The `doc_id` belongs to another knowledge base, or the document kept changing',
  },
});

export const queryKnowledgeBase = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/rag/query', operationId: 'queryKnowledgeBase', tag, auth: true,
  summary: 'The `top_k` passages of a knowledge base that best answer a query (BM25)',
  entry: 'functions/rag/query.ts', body: QueryBody,
  successMessage: 'Query answered', access: { table: 'R', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns }, memoryMb: 1024, timeoutSeconds: 15,
  errors: { 404: 'The knowledge base does not exist' },
});

export const listKbDocuments = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/rag/documents', operationId: 'listKbDocuments', tag, auth: true,
  summary: 'List the documents of a knowledge base (without their text)', entry: 'functions/rag/list-documents.ts',
  query: DocumentListQuery, list: true, access: { table: 'R' },
  errors: { 404: 'The knowledge base does not exist' },
});

export const getKbDocument = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/rag/document', operationId: 'getKbDocument', tag, auth: true,
  summary: 'Get one document with its extracted text', entry: 'functions/rag/get-document.ts',
  query: DocumentQuery, access: { table: 'R', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns },
  errors: { 404: 'No such document, or `org_id` is not your organization' },
});

export const deleteKbDocument = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/rag/document', operationId: 'deleteKbDocument', tag, auth: true,
  summary: 'Delete a document and remove it from the index', entry: 'functions/rag/delete-document.ts',
  query: DocumentQuery, successMessage: 'Document deleted successfully', access: { table: 'RW', bucket: 'RW', bucketPrefixes: objectKeys.grantPatterns, bucketList: true }, timeoutSeconds: 29,
  errors: { 404: 'No such document, or `org_id` is not your organization' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createKnowledgeBase.response = KnowledgeBase;
  listKnowledgeBases.response = KnowledgeBase;
  getKnowledgeBase.response = KnowledgeBase;
  discoverUrls.response = DiscoverResult;
  createKbUpload.response = Upload;
  ingestDocuments.response = IngestResult;
  queryKnowledgeBase.response = QueryResult;
  listKbDocuments.response = KbDocumentSummary;
  getKbDocument.response = KbDocument;
}
