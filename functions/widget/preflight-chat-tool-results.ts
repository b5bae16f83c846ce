import { http } from '../../shared/http/handler';
import { streamResponses } from '../../shared/http/streaming';
import { header } from '../../shared/http/context';
import { preflightWidgetChatToolResults as op } from '../../shared/domain/widgets/operations';
import { preflightWidgetConfig } from '../../shared/domain/widgets/public-config';

export const handler = http(op, async ({ params, event, setHeader }) => {
  const headers = await preflightWidgetConfig(params.id, header(event, 'origin'), 'POST, OPTIONS');
  Object.entries(headers).forEach(([name, value]) => setHeader(name, value));
});

/** Deployed, the streaming REST API answers this preflight too (lib/streaming-api.ts): the same handler through the streaming integration. */
export const streamHandler = streamResponses(handler);
