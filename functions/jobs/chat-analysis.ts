import { sqsWorker } from '../../shared/jobs/worker';
import { analyzeChat } from '../../shared/domain/chats/analysis';

export const handler = sqsWorker<{ organization_id: string; chat_id: string }>((m) => analyzeChat(m.organization_id, m.chat_id));
