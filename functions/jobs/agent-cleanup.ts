import { sqsWorker } from '../../shared/jobs/worker';
import { runAgentCleanup, type AgentCleanupMessage } from '../../shared/domain/agents/deletion';

export const handler = sqsWorker<AgentCleanupMessage>((m) => runAgentCleanup(m));
