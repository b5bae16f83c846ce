import { sqsWorker } from '../../shared/jobs/worker';

// STAND-IN, replaced by the webhooks branch (wt/webhooks) on merge: nothing fans out yet.
export const handler = sqsWorker<unknown>(async () => undefined);
