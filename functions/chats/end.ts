import { http } from '../../shared/http/handler';
import { endChat as op } from '../../shared/domain/chats/operations';
import { endChat } from '../../shared/domain/chats/service';

export const handler = http(op, ({ caller, params }) => endChat(caller.organizationId, params.id));
