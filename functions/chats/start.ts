import { http } from '../../shared/http/handler';
import { startChat as op } from '../../shared/domain/chats/operations';
import { startChat } from '../../shared/domain/chats/service';

export const handler = http(op, ({ caller, body }) => startChat(caller.organizationId, body));
