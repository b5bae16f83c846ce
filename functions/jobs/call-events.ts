import { sqsWorker } from '../../shared/jobs/worker';
import { handleCallEventMessage } from '../../shared/domain/calls/carrier-events';
import { type CallEventMessage } from '../../shared/domain/calls/lifecycle';

export const handler = sqsWorker<CallEventMessage>(handleCallEventMessage);
