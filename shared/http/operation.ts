import type * as z from 'zod/mini';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** What a function may touch; the CDK stack turns this into least-privilege grants. */
export interface Access {
  table?: 'R' | 'RW';
  bucket?: 'R' | 'RW';
  /**
   * Object key patterns the bucket grant is narrowed to (IAM wildcards such as orgs, any organization, then kb/ and anything);
   * absent: the whole bucket.
   */
  bucketPrefixes?: string[];
  /** Queues the function sends to, by name from the job registry. */
  queues?: string[];
  /** Needs the secrets key (KMS in AWS) to encrypt or decrypt secrets at rest. */
  secrets?: boolean;
  /** Talks to the telephony carrier: gets TELEPHONY_PROVIDER and read access to the provider's credentials secret. */
  telephony?: boolean;
  /**
   * Runs post-call analysis (shared/adapters/analysis): gets ANALYSIS_PROVIDER (and the base URL and
   * default model when set) and, for the `openai` analyzer, read access to its API-key secret.
   */
  analysis?: boolean;
}

/**
 * One API operation, declared once. The route registry collects these; the CDK stack,
 * the local runtime, the OpenAPI document and a test all read the same declaration.
 */
export interface Operation<
  P extends z.ZodMiniType = z.ZodMiniType,
  Q extends z.ZodMiniType = z.ZodMiniType,
  B extends z.ZodMiniType = z.ZodMiniType,
> {
  method: HttpMethod;
  /** Path under the base URL with `{param}` placeholders, without a trailing slash. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  /** Entry file, relative to the repository root. */
  entry: string;
  /** False only for public operations (health, widget config, OpenAPI). */
  auth: boolean;
  params?: P;
  query?: Q;
  body?: B;
  /** Schema of `data` in the success envelope; absent for deletions. */
  response?: z.ZodMiniType;
  /** True for list operations, whose envelope carries `meta`. */
  list?: boolean;
  access: Access;
  /** The function returns the HTTP body itself (the OpenAPI document, or a `rawBody` such as TwiML), not envelope data. */
  rawResponse?: boolean;
  /** Media type of a raw response other than JSON (documents the `rawBody` the function returns). */
  rawContentType?: string;
  /** How the body arrives: JSON (default) or form-encoded (carrier callbacks such as Twilio's). */
  bodyFormat?: 'json' | 'form';
  /** The envelope's `message` on success (a default per method otherwise). */
  successMessage?: string;
  /** Lambda memory and timeout overrides. */
  memoryMb?: number;
  timeoutSeconds?: number;
}

/** Declares an operation; a helper only so the schema types flow to the handler. */
export function defineOperation<P extends z.ZodMiniType, Q extends z.ZodMiniType, B extends z.ZodMiniType>(
  op: Operation<P, Q, B>,
): Operation<P, Q, B> {
  // Authentication stamps a key's last use through the api-key-usage queue, so every
  // authenticated function may send to it.
  if (!op.auth) return op;
  return { ...op, access: { ...op.access, queues: [...new Set([...(op.access.queues ?? []), 'api-key-usage'])] } };
}
