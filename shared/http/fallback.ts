import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
// Generated from the registry by `npm run openapi` (a test keeps it current), so this function
// bundles a list of paths instead of every operation's schemas.
import routeList from './route-table.json';
import { compileRoutes, matchRoute } from './route-match';
import { requestContext } from './middleware/request-context';
import { errorEnvelope } from './middleware/error-envelope';
import { MethodNotAllowedError, AppError } from '../errors';
import { errorBody, jsonResponse } from './envelope';
import type { Operation } from './operation';

const routes = compileRoutes(routeList);

const fallbackOperation: Operation = {
  method: 'GET',
  path: '/{proxy+}',
  operationId: 'fallback',
  summary: 'Unknown routes and wrong methods',
  tag: 'System',
  entry: 'functions/system/fallback.ts',
  auth: false,
  access: {},
};

/** Answers what no operation matched: 405 when the path exists with other methods, else 404. */
export function fallback() {
  const core = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    const method = event.requestContext?.http?.method ?? 'GET';
    const path = event.rawPath ?? '/';
    const result = matchRoute(routes, method, path);
    // API Gateway routes `/x/` to the `/x` route itself; should a trailing-slash request ever
    // land here instead, send the client to the canonical path (308 keeps method and body).
    if (result.kind === 'match' && path.length > 1 && path.endsWith('/')) {
      const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
      return jsonResponse(308, errorBody({ code: 'NOT_FOUND', message: `Use ${path.replace(/\/+$/, '')}`, details: {} }), {
        location: `${path.replace(/\/+$/, '')}${query}`,
      });
    }
    if (result.kind === 'method-not-allowed') throw new MethodNotAllowedError(method, path, result.allowed);
    throw new AppError(404, 'NOT_FOUND', `No route for ${method} ${path}`, { method, path });
  };
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>(core)
    .use(requestContext(fallbackOperation))
    .use(errorEnvelope());
}
