import type * as z from 'zod/mini';
import type { Access } from '../access/declaration';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/**
 * Error statuses an operation may declare beyond those the OpenAPI generator derives from its
 * shape (400, 405, 500 always; 401 and 429 with a key; 404 with path parameters; 409 on
 * authenticated writes; 413 with a body). The text says when this operation answers it.
 */
export type DeclaredErrors = Partial<Record<401 | 404 | 409 | 422 | 429 | 502 | 503, string>>;

/** A request header the function reads itself (documented in the OpenAPI document). */
export interface RequestHeader {
  name: string;
  description: string;
  required: boolean;
}

/** What a function may touch (declared in ../access/declaration.ts, below storage, which it guards). */
export type { Access } from '../access/declaration';

/** A file shipped with a function's code (the reference page's script, say). */
export interface BundleFile {
  /** Path relative to the repository root. */
  from: string;
  /** File name in the function's directory. */
  to: string;
}

/** Partition key prefix of the rate-limit counter items, the only items `rateLimitCounters` may update. */
export { RATE_COUNTER_KEY_PREFIX } from '../access/declaration';

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
  /** The body only carries options (a preview's assumptions): no body is read as `{}`. Otherwise a declared body is required. */
  bodyOptional?: boolean;
  /** Schema of `data` in the success envelope; absent for deletions. */
  response?: z.ZodMiniType;
  /** True for list operations, whose envelope carries `meta`. */
  list?: boolean;
  access: Access;
  /** Error statuses beyond the derived ones, each with when it happens. */
  errors?: DeclaredErrors;
  /** Request headers the function reads itself (signatures, for instance). */
  headers?: RequestHeader[];
  /** The function returns the HTTP body itself (the OpenAPI document, or a `rawBody` such as TwiML), not envelope data. */
  rawResponse?: boolean;
  /** Media type of a raw response other than JSON (documents the `rawBody` the function returns). */
  rawContentType?: string;
  /**
   * Files the function reads at run time, copied beside its bundled code (`to`, a file name, read
   * from `LAMBDA_TASK_ROOT`); `from` is relative to the repository root (lib/bundle.ts).
   */
  bundleFiles?: BundleFile[];
  /** How the body arrives: JSON (default) or form-encoded (carrier callbacks such as Twilio's). */
  bodyFormat?: 'json' | 'form';
  /** The envelope's `message` on success (a default per method otherwise). */
  successMessage?: string;
  /**
   * When the operation may answer 202 (its function returns `accepted(data)`,
   * shared/domain/common/accepted.ts): the OpenAPI document's description of that answer.
   */
  accepted?: string;
  /** The envelope's `message` of a 202. */
  acceptedMessage?: string;
  /**
   * The OpenAI-compatible endpoint (docs/api.md, "The agent as an OpenAI model"): the key may also
   * come as `Authorization: Bearer <key>`, and errors are OpenAI-shaped (`{ error: { message, type,
   * param, code } }`) instead of the envelope.
   */
  openAiCompatible?: boolean;
  /**
   * The answer may stream (server-sent events): deployed, the operation is also served by the
   * streaming REST API (lib/streaming-api.ts) through its entry file's `streamHandler`.
   */
  streams?: boolean;
  /** Lambda memory and timeout overrides. */
  memoryMb?: number;
  timeoutSeconds?: number;
}

/**
 * Declares an operation; a helper only so the schema types flow to the handler. It has no side
 * effects, and every declaration says so to the bundler (`/* @__PURE__ *\/ defineOperation(…)`,
 * kept by a test): a function imports its one operation from its area's module, and esbuild then
 * drops the area's other declarations instead of compiling them on every cold start (esbuild
 * does not carry a `@__NO_SIDE_EFFECTS__` mark on this function across files).
 */
export function defineOperation<P extends z.ZodMiniType, Q extends z.ZodMiniType, B extends z.ZodMiniType>(
  op: Operation<P, Q, B>,
): Operation<P, Q, B> {
  // Authentication stamps a key's last use through the api-key-usage queue, and the rate limit
  // counts each request in a RATE# counter item, so every authenticated function may do both.
  if (!op.auth) return op;
  const queues = [...new Set([...(op.access.queues ?? []), 'api-key-usage'])];
  return { ...op, access: { ...op.access, queues, rateLimitCounters: true } };
}
