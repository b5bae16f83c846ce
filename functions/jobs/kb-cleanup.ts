import { sqsWorker } from '../../shared/jobs/worker';
import { runKnowledgeBaseCleanup, type KbCleanupMessage } from '../../shared/domain/rag/kb-deletion';

export const handler = sqsWorker<KbCleanupMessage>((m) => runKnowledgeBaseCleanup(m));
