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
    kind: 'queue',
    name: 'kb-cleanup',
    entry: 'functions/jobs/kb-cleanup.ts',
    description: 'Removes a deleted knowledge base\'s documents, objects, index and agent references, one bounded page per run.',
    // A run is one page (500 items or 1,000 objects), seconds at most; a message for a knowledge
    // base whose item is still there waits for this long before it is seen again.
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    batchSize: 1,
    timeoutSeconds: 30,
    access: { table: 'RW', bucket: 'RW', bucketPrefixes: [objectKeys.kbGrantPattern], bucketList: true, queues: ['kb-cleanup'] },
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
    kind: 'schedule',
    name: 'campaign-tick',
    entry: 'functions/jobs/campaign-tick.ts',
    description: 'Every minute: queues one dispatch per started campaign (opens windows, recovers expired leases) when its marker has come; one GetItem otherwise.',
    rateMinutes: 1,
    // Writes its marker (SWEEP#campaign-tick) before reading the engine's index.
    access: { table: 'RW', queues: ['campaign-dispatch'] },
  },
  {
    kind: 'queue',
    name: 'campaign-dispatch',
    entry: 'functions/jobs/campaign-dispatch.ts',
    description: 'Fills a campaign\'s free call slots with due contacts and places their calls through the campaign dialer.',
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 5,
    batchSize: 10,
    timeoutSeconds: 60,
    // Re-queues itself when its budget of due entries runs out; completes campaigns (number in_use);
    // creates campaign calls through the calls service, which queues their call-place jobs.
    access: { table: 'RW', queues: ['campaign-dispatch', 'event-fanout', 'call-place'] },
  },
  {
    kind: 'queue',
    name: 'campaign-cleanup',
    entry: 'functions/jobs/campaign-cleanup.ts',
    description: 'Fails a cancelled campaign\'s pending contacts, or deletes a deleted campaign\'s contacts, page by page.',
    visibilityTimeoutSeconds: 3600,
    maxReceiveCount: 5,
    batchSize: 1,
    timeoutSeconds: 600,
    access: { table: 'RW', queues: ['event-fanout'] },
  },
  {
    kind: 'queue',
    name: 'event-fanout',
    entry: 'functions/jobs/event-fanout.ts',
    description: 'Turns each new event into one delivery job per subscribed webhook endpoint.',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    batchSize: 10,
    timeoutSeconds: 30,
    access: { table: 'RW', queues: ['webhook-delivery'] },
  },
  {
    kind: 'queue',
    name: 'webhook-delivery',
    entry: 'functions/jobs/webhook-delivery.ts',
    description: 'Makes one signed delivery attempt of an event to an endpoint and schedules its retry.',
    // A batch's attempts run in parallel, each bounded at 15 s. The visibility timeout is 6 × the
    // function timeout (QUEUE_RULES); the job's claim (90 s) outlives any one invocation, so a
    // redelivery after the visibility timeout finds it expired and attempts again.
    visibilityTimeoutSeconds: 270,
    maxReceiveCount: 5,
    batchSize: 10,
    timeoutSeconds: 45,
    access: { table: 'RW', secrets: true, queues: ['webhook-delivery'] },
  },
  {
    kind: 'schedule',
    name: 'webhook-sweep',
    entry: 'functions/jobs/webhook-sweep.ts',
    description: 'Re-queues fan-out of events left undispatched and delivery attempts whose wait has come.',
    rateMinutes: 1,
    timeoutSeconds: 60,
    access: { table: 'RW', queues: ['event-fanout', 'webhook-delivery'] },
  },
  {
    kind: 'queue',
    name: 'call-place',
    entry: 'functions/jobs/call-place.ts',
    description: 'Dials a queued call once: do-not-call checked again, the dial claimed, the carrier asked.',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    batchSize: 10,
    timeoutSeconds: 30,
    // Ends the calls it cannot dial (do-not-call, carrier refusal): call.ended, contact history, analysis,
    // and a campaign call's outcome (which dispatches the campaign's next contact).
    access: { table: 'RW', telephony: true, queues: ['call-events', 'call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'] },
  },
  {
    kind: 'queue',
    name: 'call-events',
    entry: 'functions/jobs/call-events.ts',
    description: 'Feeds carrier status events (and Twilio recordings) to the call state machine.',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    batchSize: 10,
    timeoutSeconds: 30,
    memoryMb: 512,
    // Writes recordings (simulated: synthesized; Twilio: downloaded with the account's credentials) and signs their links in events.
    // A campaign call's end records its outcome and dispatches the campaign's next contact.
    // An answered simulated call is a conversation run by the engine: the model, the knowledge base
    // (index and passages), webhook tools (sealed secrets) and built-ins (appointments).
    access: { table: 'RW', bucket: 'RW', bucketPrefixes: [...recordingKeys.grantPatterns, ...objectKeys.grantPatterns], telephony: true, llm: true, secrets: true, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'] },
  },
  {
    kind: 'queue',
    name: 'call-analysis',
    entry: 'functions/jobs/call-analysis.ts',
    description: 'Post-call analysis of an ended call; a failure is retried by the queue.',
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 5,
    batchSize: 5,
    timeoutSeconds: 60,
    access: { table: 'RW', analysis: true, bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['event-fanout'] },
  },
  {
    kind: 'queue',
    name: 'chat-analysis',
    entry: 'functions/jobs/chat-analysis.ts',
    description: 'Analysis of an ended chat (as of calls); a failure is retried by the queue.',
    visibilityTimeoutSeconds: 360,
    maxReceiveCount: 5,
    batchSize: 5,
    timeoutSeconds: 60,
    access: { table: 'RW', analysis: true, queues: ['event-fanout'] },
  },
  {
    kind: 'queue',
    name: 'agent-test-run',
    entry: 'functions/jobs/agent-test-run.ts',
    description: 'Runs one test × attempt of an agent test run (mocked tools, nothing acts on the world) and completes the run with its last result.',
    // A persona test of 30 turns against a real model may take minutes (each turn has 25 s at most).
    timeoutSeconds: 900,
    visibilityTimeoutSeconds: 5400,
    maxReceiveCount: 5,
    // Each record is one test; a batch's records run in parallel (the default concurrency cap, 10, keeps 100 tests at a time).
    batchSize: 10,
    memoryMb: 512,
    // The model (conversation, persona, judge), the calendar (check_availability, Cal.com's sealed key),
    // the knowledge base's passages, and test_run.completed through the outbox.
    access: { table: 'RW', llm: true, secrets: true, bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, queues: ['event-fanout'] },
  },
  {
    kind: 'queue',
    name: 'agent-cleanup',
    entry: 'functions/jobs/agent-cleanup.ts',
    description: 'Deletes a deleted agent\'s versions, tests, runs and results a page per message, then detaches its numbers and removes its tombstone.',
    // A run is one page (500 items), seconds at most.
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    batchSize: 1,
    timeoutSeconds: 30,
    access: { table: 'RW', queues: ['agent-cleanup'] },
  },
  {
    kind: 'schedule',
    name: 'agent-test-sweep',
    entry: 'functions/jobs/agent-test-sweep.ts',
    description: 'Every 5 minutes: completes each agent test run past its expiry, every missing result an `error` (a job that died or never ran); queues again an agent cleanup whose tombstone is older than 15 minutes.',
    rateMinutes: 5,
    timeoutSeconds: 120,
    // Reads the open runs' and agent tombstones' indexes, writes error results and completions (test_run.completed through the outbox).
    access: { table: 'RW', queues: ['event-fanout', 'agent-cleanup'] },
  },
  {
    kind: 'schedule',
    name: 'chat-sweep',
    entry: 'functions/jobs/chat-sweep.ts',
    description: 'Ends `inactivity` every open chat with no message for 30 minutes.',
    rateMinutes: 1,
    timeoutSeconds: 50,
    access: { table: 'RW', queues: ['event-fanout', 'chat-analysis'] },
  },
  {
    kind: 'schedule',
    name: 'call-recovery',
    entry: 'functions/jobs/call-recovery.ts',
    description: 'Ends failed every call that got no final carrier event by its due time.',
    rateMinutes: 1,
    timeoutSeconds: 50,
    // A campaign call ended by the sweep records its outcome (failed, retryable) like any other end. A warm transfer's watch
    // (calls/warm-transfer.ts, superviseTransfers) asks the carrier about calls and sends callers back to the agent (a
    // resumed session's or stream's token).
    access: { table: 'RW', bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, telephony: true, tokens: true, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'] },
  },
];
