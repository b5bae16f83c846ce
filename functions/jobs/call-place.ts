import { sqsWorker } from '../../shared/jobs/worker';
import { placeQueuedCall } from '../../shared/domain/calls/lifecycle';
import { connectWaitingCaller } from '../../shared/domain/calls/inbound-overflow';

// An incoming call placed out of the overflow queue is connected, not dialed (inbound-overflow.ts).
export const handler = sqsWorker<{ organization_id: string; call_id: string }>((m) => placeQueuedCall(m.organization_id, m.call_id, { connectCaller: connectWaitingCaller }));
