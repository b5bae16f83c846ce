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
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 5,
    batchSize: 10,
    access: { table: 'RW' },
  },
  {
    kind: 'queue',
    name: 'rag-ingest',
    entry: 'functions/jobs/rag-ingest.ts',
    description: 'Fetches, extracts, chunks and indexes knowledge-base documents.',
    // Above the function timeout (Lambda requires it) with room for a slow page.
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 3,
    batchSize: 10,
    timeoutSeconds: 120,
    memoryMb: 1024,
    access: { table: 'RW', bucket: 'RW', bucketPrefixes: objectKeys.grantPatterns },
  },
  {
    kind: 'queue',
    name: 'kb-cleanup',
    entry: 'functions/jobs/kb-cleanup.ts',
    description: 'Removes a deleted knowledge base\'s documents, objects, index and agent references, one bounded page per run.',
    // A run is one page (500 items or 1,000 objects), seconds at most; a message for a knowledge
    // base whose item is still there waits for this long before it is seen again.
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
    batchSize: 1,
    timeoutSeconds: 30,
    access: { table: 'RW', bucket: 'RW', bucketPrefixes: [objectKeys.kbGrantPattern], queues: ['kb-cleanup'] },
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
