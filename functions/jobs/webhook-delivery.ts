import { sqsWorker } from '../../shared/jobs/worker';
import { runAutomaticAttempt, type DeliveryMessage } from '../../shared/domain/webhooks/deliveries';

export const handler = sqsWorker<DeliveryMessage>(async (m) => {
  await runAutomaticAttempt(m);
});
