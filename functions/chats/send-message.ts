import { http } from '../../shared/http/handler';
import { streamResponses } from '../../shared/http/streaming';
import { sendChatMessage as op } from '../../shared/domain/chats/operations';
import { sendMessage } from '../../shared/domain/chats/turns';
import { streamChatTurn } from '../../shared/domain/chats/stream';
import { wantsEventStream } from '../../shared/domain/common/stream-body';

export const handler = http(op, ({ caller, params, body, event, requestId, receivedMs, afterAnswer }) =>
  wantsEventStream(event)
    ? streamChatTurn((listener) => sendMessage(caller.organizationId, params.id, body.content, { listener, receivedMs }), { successMessage: op.successMessage!, requestId })
    : sendMessage(caller.organizationId, params.id, body.content, { afterAnswer, receivedMs }),
);

/** Deployed behind the REST API's streaming routes (lib/streaming-api.ts): the same handler, its events written as they come. */
export const streamHandler = streamResponses(handler);
