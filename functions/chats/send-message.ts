import { http } from '../../shared/http/handler';
import { sendChatMessage as op } from '../../shared/domain/chats/operations';
import { sendMessage } from '../../shared/domain/chats/turns';

export const handler = http(op, ({ caller, params, body }) => sendMessage(caller.organizationId, params.id, body.content));
