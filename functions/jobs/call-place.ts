import { sqsWorker } from '../../shared/jobs/worker';
import { placeQueuedCall } from '../../shared/domain/calls/lifecycle';

export const handler = sqsWorker<{ organization_id: string; call_id: string }>((m) => placeQueuedCall(m.organization_id, m.call_id));
