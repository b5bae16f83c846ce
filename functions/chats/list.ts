import { http } from '../../shared/http/handler';
import { listChats as op } from '../../shared/domain/chats/operations';
import { listChats } from '../../shared/domain/chats/service';

export const handler = http(op, ({ caller, query }) => listChats(caller.organizationId, query));
