import { websocket } from '../../shared/http/websocket';
import { relayConnect } from '../../shared/domain/relay/operations';
import { connectRelay } from '../../shared/domain/relay/session';

export const handler = websocket(relayConnect, async ({ connectionId, query, event }) => {
  const answer = await connectRelay(connectionId, query.token, event.headers ?? {});
  return answer.admitted ? { statusCode: 200 } : { statusCode: answer.status, body: answer.reason };
});
