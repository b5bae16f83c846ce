import { sqsWorker } from '../../shared/jobs/worker';
import { recordApiKeyUse } from '../../shared/domain/api-keys/service';

export const handler = sqsWorker<{ organization_id: string; key_id: string; used_at: string }>((m) =>
  recordApiKeyUse(m.organization_id, m.key_id, m.used_at),
);
