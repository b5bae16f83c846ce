import { sweepIdleChats } from '../../shared/domain/chats/service';
import { scheduledJob } from '../../shared/telemetry/jobs';

export const handler = scheduledJob('chat-sweep', async () => {
  await sweepIdleChats();
});
