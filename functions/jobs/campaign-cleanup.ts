import { sqsWorker } from '../../shared/jobs/worker';
import { runCleanup, type DispatchMessage } from '../../shared/domain/campaigns/engine';

export const handler = sqsWorker<DispatchMessage & { op: 'cancel' | 'purge' }>((m) => runCleanup(m));
