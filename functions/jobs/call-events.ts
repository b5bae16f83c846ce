import { sqsWorker } from '../../shared/jobs/worker';
import { handleCallEventMessage, type CallEventMessage } from '../../shared/domain/calls/lifecycle';

export const handler = sqsWorker<CallEventMessage>(handleCallEventMessage);
