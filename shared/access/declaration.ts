/**
 * Access declarations: what a function may touch. Operations (shared/http/operation.ts) and jobs
 * (shared/jobs/definition.ts) each carry one; the CDK stack turns it into least-privilege grants
 * (lib/api-function.ts) and the local runtime checks every call against it (./enforce.ts). It
 * lives here, below storage, because the storage clients are guarded by it.
 */

/** What a function may touch; the CDK stack turns this into least-privilege grants. */
export interface Access {
  table?: 'R' | 'RW';
  /**
   * Objects: `R` reads them (s3:GetObject), `RW` also writes and deletes them (s3:PutObject,
   * s3:DeleteObject). `head` touches no object: it only asks whether the bucket answers
   * (HeadBucket, which IAM authorizes as s3:ListBucket), as readiness does.
   */
  bucket?: 'R' | 'RW' | 'head';
  /**
   * Object key patterns the bucket grant is narrowed to (IAM wildcards such as orgs, any organization, then kb/ and anything);
   * absent: the whole bucket.
   */
  bucketPrefixes?: string[];
  /** Lists object keys (s3:ListBucket), only under `bucketPrefixes` (an `s3:prefix` condition). */
  bucketList?: boolean;
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
  /**
   * Signs or verifies short-lived tokens (shared/adapters/signed-token.ts: the voice stream's and
   * the widget's): gets TOKEN_SECRET_ARN and read access to the token-signing secret.
   */
  tokens?: boolean;
  /**
   * Runs the conversation model (shared/adapters/llm): gets LLM_PROVIDER (and the base URL and
   * default model when set) and, for the `openai` model, read access to its API-key secret.
   */
  llm?: boolean;
  /**
   * The implicit grant of every authenticated operation (set by `defineOperation`): UpdateItem
   * on the per-key rate-limit counters only, items whose partition key begins with `RATE#`.
   */
  rateLimitCounters?: boolean;
}

/**
 * Partition key prefix of the rate-limit counter items, the only items `rateLimitCounters` may
 * update (the IAM grant's dynamodb:LeadingKeys condition). The grant owns it; shared/db/keys.ts
 * builds the counters' keys on it.
 */
export const RATE_COUNTER_KEY_PREFIX = 'RATE#';
