import { objectKeys } from '../domain/rag/object-keys';
import type { JobDefinition } from './definition';

/**
 * Every background job. The CDK stack makes a queue (with a dead-letter queue and an alarm)
 * or a schedule for each, and the local runtime runs the same handlers in process.
 */
export const jobs: JobDefinition[] = [
  {
    kind: 'queue',
    name: 'api-key-usage',
    entry: 'functions/jobs/api-key-usage.ts',
    description: 'Records when each API key was last used, off the request path.',
    // 6 × the default 10 s function timeout.
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
    batchSize: 10,
    access: { table: 'RW' },
  },
  {
    kind: 'queue',
    name: 'rag-ingest',
    entry: 'functions/jobs/rag-ingest.ts',
    description: 'Fetches, extracts, chunks and indexes knowledge-base documents.',
    // 6 × the function timeout (AWS's advice for an SQS event source).
    visibilityTimeoutSeconds: 720,
    maxReceiveCount: 5,
    batchSize: 10,
    // A bulk ingest (thousands of URLs) queues thousands of messages: at most this many 1 GB
    // workers run at once, so the API keeps the account's concurrency.
    maxConcurrency: 5,
    timeoutSeconds: 120,
    memoryMb: 1024,
    access: { table: 'RW', bucket: 'RW', bucketPrefixes: objectKeys.grantPatterns },
  },
  {
    kind: 'schedule',
    name: 'billing-renewals',
    entry: 'functions/jobs/billing-renewals.ts',
    description: 'Charges the monthly renewal of every purchased number that is due.',
    // Hourly: a renewal is charged within an hour of falling due; reruns charge nothing twice.
    rateMinutes: 60,
    // Room for many numbers per run; the run itself stops starting numbers 15 s before the end.
    timeoutSeconds: 300,
    access: { table: 'RW' },
  },
];
