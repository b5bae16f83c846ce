import { http } from '../../shared/http/handler';
import { submitChatToolResults as op } from '../../shared/domain/chats/operations';
import { submitToolResults } from '../../shared/domain/chats/turns';

export const handler = http(op, ({ caller, params, body }) => submitToolResults(caller.organizationId, params.id, body.results));
