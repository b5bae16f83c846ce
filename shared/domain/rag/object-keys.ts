/**
 * Object keys of the bucket for the knowledge base. Every key starts with `orgs/<org>/`, so
 * an organization's objects share one prefix (and one IAM prefix grant).
 */
const orgPrefix = (orgId: string) => `orgs/${orgId}/`;
const kbPrefix = (orgId: string, kbId: string) => `${orgPrefix(orgId)}kb/${kbId}/`;
const docPrefix = (orgId: string, kbId: string, docId: string) => `${kbPrefix(orgId, kbId)}docs/${encodeURIComponent(docId)}/`;

export const objectKeys = {
  /** A file uploaded through a presigned URL, before ingestion. */
  upload: (orgId: string, uploadId: string) => `${orgPrefix(orgId)}uploads/${uploadId}`,
  /** Everything of one knowledge base (deleted with it). */
  kbPrefix,
  /** Everything of one document. */
  docPrefix,
  /** One ingestion (generation) of a document: its original, its text and its chunks. */
  original: (orgId: string, kbId: string, docId: string, generation: string) => `${docPrefix(orgId, kbId, docId)}${generation}/original`,
  text: (orgId: string, kbId: string, docId: string, generation: string) => `${docPrefix(orgId, kbId, docId)}${generation}/text.txt`,
  chunks: (orgId: string, kbId: string, docId: string, generation: string) => `${docPrefix(orgId, kbId, docId)}${generation}/chunks.json`,
  /** A version of the knowledge base's search index. */
  index: (orgId: string, kbId: string, version: number) => `${kbPrefix(orgId, kbId)}index/${String(version).padStart(10, '0')}.json`,
  /** The object key patterns the knowledge-base functions are granted (IAM wildcards). */
  grantPatterns: ['orgs/*/kb/*', 'orgs/*/uploads/*'],
};
