import { http } from '../../shared/http/handler';
import { streamResponses } from '../../shared/http/streaming';
import { openAiRetrieveModel as op } from '../../shared/domain/openai-compat/operations';
import { retrieveModel } from '../../shared/domain/openai-compat/models';

export const handler = http(op, ({ caller, params }) => retrieveModel(caller.organizationId, params.model));

/** Also behind the streaming REST API, so the whole of /openai/v1 is on one base URL (lib/api-area.ts). */
export const streamHandler = streamResponses(handler);
