/**
 * The API Gateway Management API (signing name `execute-api`, REST-JSON) for the local AWS
 * endpoint: PostToConnection (`POST …/@connections/<id>`, the body is the data) and
 * DeleteConnection (`DELETE …/@connections/<id>`).
 *
 * The SDK appends the operation's path to its endpoint's path, so a function given
 * `http://127.0.0.1:<port>/_ws/<apiId>/<stage>` calls `/_ws/<apiId>/<stage>/@connections/<id>`;
 * `/<stage>/@connections/<id>` (the form of the real `https://<api>.execute-api…/<stage>`) is
 * accepted too when one API has that stage. It mirrors AWS: the action is
 * `execute-api:ManageConnections` on `arn:aws:execute-api:<region>:<account>:<apiId>/<stage>/
 * <METHOD>/@connections/<id>`; a data frame over 128 KB is 413 PayloadTooLargeException; a
 * connection that is gone is 410 GoneException. GetConnection and unknown APIs are refused.
 */
import { sendRestJsonError, type AwsCall } from './protocol';

export interface LocalWebSocketApi {
  apiId: string;
  stage: string;
  post(connectionId: string, data: Buffer): Promise<'ok' | 'gone'>;
  close(connectionId: string): Promise<'ok' | 'gone'>;
}

interface ApiGatewayOptions {
  region: string;
  accountId: string;
  webSocketApis?: LocalWebSocketApi[];
}

/** API Gateway's WebSocket frame limit for PostToConnection. */
const MAX_PAYLOAD_BYTES = 128 * 1024;

/** Serves the Management API of the runner's WebSocket APIs. */
export function apiGatewayManagementService(options: ApiGatewayOptions) {
  const apis = options.webSocketApis ?? [];
  const route = (pathname: string) => {
    const prefixed = /^\/_ws\/([^/]+)\/([^/]+)\/@connections\/([^/]+)$/.exec(pathname);
    if (prefixed) return { api: apis.find((a) => a.apiId === prefixed[1] && a.stage === prefixed[2]), connectionId: decodeURIComponent(prefixed[3]!) };
    const staged = /^\/([^/]+)\/@connections\/([^/]+)$/.exec(pathname);
    if (staged) return { api: apis.find((a) => a.stage === staged[1]), connectionId: decodeURIComponent(staged[2]!) };
    return undefined;
  };

  return async (call: AwsCall): Promise<void> => {
    const method = call.req.method ?? 'GET';
    const found = route(call.url.pathname);
    if (!found || (method !== 'POST' && method !== 'DELETE')) {
      call.log(`UnknownOperationException: the local AWS endpoint does not serve execute-api ${method} ${call.url.pathname}`);
      return sendRestJsonError(call, 400, 'UnknownOperationException', `The local AWS endpoint does not serve execute-api ${method} ${call.url.pathname}.`);
    }
    const { api, connectionId } = found;
    if (!api) return sendRestJsonError(call, 403, 'ForbiddenException', 'Forbidden');
    const resource = `arn:aws:execute-api:${options.region}:${options.accountId}:${api.apiId}/${api.stage}/${method}/@connections/${connectionId}`;
    const denial = call.authorize('execute-api:ManageConnections', resource);
    if (denial) return sendRestJsonError(call, 403, 'AccessDeniedException', denial.message!, 'Message');
    let outcome: 'ok' | 'gone';
    if (method === 'POST') {
      const data = await call.body();
      if (data.length > MAX_PAYLOAD_BYTES) return sendRestJsonError(call, 413, 'PayloadTooLargeException', 'Message too long');
      outcome = await api.post(connectionId, data);
    } else {
      outcome = await api.close(connectionId);
    }
    if (outcome === 'gone') return sendRestJsonError(call, 410, 'GoneException', 'Gone');
    call.res.writeHead(method === 'POST' ? 200 : 204, { 'x-amzn-requestid': call.requestId, 'content-length': '0' });
    call.res.end();
  };
}
