import { http } from '../../shared/http/handler';
import { streamResponses } from '../../shared/http/streaming';
import { sendWidgetChatMessage as op } from '../../shared/domain/widgets/operations';
import { sendWidgetMessage } from '../../shared/domain/widgets/public-turns';
import { publicCall } from '../../shared/domain/widgets/public-call';
import { wantsEventStream } from '../../shared/domain/common/stream-body';

export const handler = http(op, ({ params, body, event, setHeader, requestId, receivedMs, afterAnswer }) =>
  sendWidgetMessage(publicCall(params.id, event, setHeader), params.chat_id, body.content, wantsEventStream(event) ? { requestId } : undefined, { afterAnswer, receivedMs }),
);

/** Deployed behind the REST API's streaming routes (lib/streaming-api.ts): the same handler, its events written as they come. */
export const streamHandler = streamResponses(handler);
