import { http } from '../../shared/http/handler';
import { streamResponses } from '../../shared/http/streaming';
import { openAiChatCompletions as op } from '../../shared/domain/openai-compat/operations';
import { chatCompletion } from '../../shared/domain/openai-compat/completions';

export const handler = http(op, ({ caller, body, receivedMs }) => chatCompletion(caller.organizationId, body, receivedMs));

/** Deployed behind the REST API's streaming route (lib/streaming-api.ts). */
export const streamHandler = streamResponses(handler);
