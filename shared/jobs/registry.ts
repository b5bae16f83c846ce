import { recordingKeys } from '../domain/calls/recordings';
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
  {
    kind: 'queue',
    name: 'call-place',
    entry: 'functions/jobs/call-place.ts',
    description: 'Dials a queued call once: do-not-call checked again, the dial claimed, the carrier asked.',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 3,
    batchSize: 10,
    timeoutSeconds: 30,
    // Ends the calls it cannot dial (do-not-call, carrier refusal): call.ended, contact history, analysis.
    access: { table: 'RW', telephony: true, queues: ['call-events', 'call-analysis', 'event-fanout'] },
  },
  {
    kind: 'queue',
    name: 'call-events',
    entry: 'functions/jobs/call-events.ts',
    description: 'Feeds carrier status events (and Twilio recordings) to the call state machine.',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
    batchSize: 10,
    timeoutSeconds: 30,
    memoryMb: 512,
    // Writes recordings (simulated: synthesized; Twilio: downloaded with the account's credentials) and signs their links in events.
    access: { table: 'RW', bucket: 'RW', bucketPrefixes: recordingKeys.grantPatterns, telephony: true, queues: ['call-analysis', 'event-fanout'] },
  },
  {
    kind: 'queue',
    name: 'call-analysis',
    entry: 'functions/jobs/call-analysis.ts',
    description: 'Post-call analysis of an ended call; a failure is retried by the queue.',
    visibilityTimeoutSeconds: 90,
    maxReceiveCount: 4,
    batchSize: 5,
    timeoutSeconds: 60,
    access: { table: 'RW', analysis: true, bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['event-fanout'] },
  },
  {
    kind: 'schedule',
    name: 'call-recovery',
    entry: 'functions/jobs/call-recovery.ts',
    description: 'Ends failed every call that got no final carrier event by its due time.',
    rateMinutes: 1,
    timeoutSeconds: 50,
    access: { table: 'RW', bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['call-analysis', 'event-fanout'] },
  },
  // STAND-IN, replaced by the webhooks branch (wt/webhooks) on merge: the queue the event fan-out
  // reads, declared so publishing functions can be granted it; its consumer does nothing yet.
  {
    kind: 'queue',
    name: 'event-fanout',
    entry: 'functions/jobs/event-fanout.ts',
    description: 'Fans platform events out to webhook deliveries (stand-in: no-op until the webhooks area lands).',
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 5,
    batchSize: 10,
    access: {},
  },
];
