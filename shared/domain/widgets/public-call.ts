import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { header } from '../common/header';
import type { PublicCall } from './public-chats';

/** What a public widget call brings, read from the gateway's event: method, origin, token, client address. */
export function publicCall(widgetId: string, event: APIGatewayProxyEventV2, setHeader: (name: string, value: string) => void): PublicCall {
  return {
    widgetId,
    method: event.requestContext?.http?.method,
    origin: header(event, 'origin'),
    authorization: header(event, 'authorization'),
    sourceIp: event.requestContext?.http?.sourceIp,
    setHeader,
  };
}
