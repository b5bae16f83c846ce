import { jobs } from '../../shared/jobs/registry';
import { ingestBatchHandler } from '../../shared/domain/rag/ingest-worker';

// Two-phase batch handler (prepare each record, then one index commit per knowledge base);
// see ingest-worker.ts for why it does not use the per-message sqsWorker.
const job = jobs.find((j) => j.name === 'rag-ingest');
export const handler = ingestBatchHandler(job && job.kind === 'queue' ? job.maxReceiveCount : 3);
