import { sqsWorker } from '../../shared/jobs/worker';
import { analyzeCall } from '../../shared/domain/calls/analysis';

export const handler = sqsWorker<{ organization_id: string; call_id: string }>((m) => analyzeCall(m.organization_id, m.call_id));
