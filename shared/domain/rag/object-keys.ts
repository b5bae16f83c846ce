/**
 * Object keys of the bucket for the knowledge base. Every key starts with `orgs/<org>/` (or
 * `uploads/<org>/` for files not ingested yet), so an organization's objects share a prefix.
 */
const orgPrefix = (orgId: string) => `orgs/${orgId}/`;
/** Where presigned uploads land; the stack expires objects here after UPLOAD_RETENTION_DAYS. */
export const UPLOADS_PREFIX = 'uploads/';
export const UPLOAD_RETENTION_DAYS = 2;
const kbPrefix = (orgId: string, kbId: string) => `${orgPrefix(orgId)}kb/${kbId}/`;
const docPrefix = (orgId: string, kbId: string, docId: string) => `${kbPrefix(orgId, kbId)}docs/${encodeURIComponent(docId)}/`;

const KB_GRANT_PATTERN = 'orgs/*/kb/*';

export const objectKeys = {
  /**
   * A file uploaded through a presigned URL, before ingestion. Uploads live under their own
   * top-level prefix so one bucket lifecycle rule expires those never ingested (the worker keeps
   * its own copy of the original with the document).
   */
  upload: (orgId: string, uploadId: string) => `${UPLOADS_PREFIX}${orgId}/${uploadId}`,
  /** Everything of one knowledge base (deleted with it). */
  kbPrefix,
  /** Everything of one document. */
  docPrefix,
  /** One ingestion (generation) of a document: its original, its text and its chunks. */
  original: (orgId: string, kbId: string, docId: string, generation: string) => `${docPrefix(orgId, kbId, docId)}${generation}/original`,
  text: (orgId: string, kbId: string, docId: string, generation: string) => `${docPrefix(orgId, kbId, docId)}${generation}/text.txt`,
  chunks: (orgId: string, kbId: string, docId: string, generation: string) => `${docPrefix(orgId, kbId, docId)}${generation}/chunks.json`,
  /** A version of the knowledge base's search index, as written before each writer had a key of its own (still read). */
  index: (orgId: string, kbId: string, version: number) => `${kbPrefix(orgId, kbId)}index/${String(version).padStart(10, '0')}.json`,
  /** A version of the index as one writer wrote it: writers racing for the same version never share a key. */
  indexObject: (orgId: string, kbId: string, version: number, writer: string) => `${kbPrefix(orgId, kbId)}index/${String(version).padStart(10, '0')}-${writer}.json`,
  /** The pattern of every knowledge base's objects (IAM wildcard). */
  kbGrantPattern: KB_GRANT_PATTERN,
  /** The object key patterns the knowledge-base functions are granted (IAM wildcards). */
  grantPatterns: [KB_GRANT_PATTERN, `${UPLOADS_PREFIX}*`],
};
