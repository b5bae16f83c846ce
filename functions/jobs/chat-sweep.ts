import { sweepIdleChats } from '../../shared/domain/chats/service';

export const handler = async () => {
  await sweepIdleChats();
};
