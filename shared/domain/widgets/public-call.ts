import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { header } from '../common/header';
import type { PublicCall } from './public-chats';

/** What a public widget call brings, read from the gateway's event: origin, token, client address. */
export function publicCall(widgetId: string, event: APIGatewayProxyEventV2, setHeader: (name: string, value: string) => void): PublicCall {
  return {
    widgetId,
    origin: header(event, 'origin'),
    authorization: header(event, 'authorization'),
    sourceIp: event.requestContext?.http?.sourceIp,
    setHeader,
  };
}
