import { http } from '../../shared/http/handler';
import { getChat as op } from '../../shared/domain/chats/operations';
import { getChat } from '../../shared/domain/chats/service';

export const handler = http(op, ({ caller, params }) => getChat(caller.organizationId, params.id));
