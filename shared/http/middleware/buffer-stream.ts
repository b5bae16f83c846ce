import { invocationStreams, isStreamBody } from '../../domain/common/stream-body';
import type { HttpMiddleware } from './types';

/**
 * A stream body answered where the response cannot stream: the HTTP API (which buffers a whole
 * response and takes its body only as a string, docs/api.md "Streaming a turn") and any direct
 * invoke. The stream is read to its end and answered as its whole text (the same server-sent
 * events, status 200, `text/event-stream`), so a client of the buffered URL reads the same events,
 * all at once. Invocations that stream (the streaming REST API's `streamHandler`, the local server)
 * mark their context and get the stream itself. Runs after idempotency's `after` (it is used before
 * it), so the stream's `whenDone` hooks (the idempotent answer stored) run as the text is read.
 */
export function bufferStream(): HttpMiddleware {
  return {
    name: 'buffer-stream',
    after: async (request) => {
      const body: unknown = request.response?.body;
      if (!isStreamBody(body) || invocationStreams(request.context)) return;
      let text = '';
      for await (const chunk of body.chunks) text += chunk;
      request.response = { ...request.response, body: text };
    },
  };
}
