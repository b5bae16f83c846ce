import { sqsWorker } from '../../shared/jobs/worker';
import type { FanoutMessage } from '../../shared/domain/events/publish';
import { fanOutEvent } from '../../shared/domain/webhooks/deliveries';

export const handler = sqsWorker<FanoutMessage>(async (m) => {
  await fanOutEvent(m.organization_id, m.event_id, Date.now(), m.type);
});
