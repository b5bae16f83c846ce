// Generated from the registry by `npm run openapi` (a test keeps it current): the few routes
// that can shadow a `{param}` route, not the whole table (every function bundles this module).
import routeList from '../shadowing-routes.json';
import { compileRoutes, fixedPathMethods } from '../route-match';
import { MethodNotAllowedError } from '../../errors';
import { httpState } from '../context';
import type { HttpMiddleware } from './types';

const routes = compileRoutes(routeList);

/**
 * A wrong method on a fixed path reaches the `{param}` route of the same shape (API Gateway
 * picks `PATCH /contacts/{id}` for `PATCH /contacts/search`); answer it as the fallback does, 405
 * with `Allow`, before the path parameter is judged (it would be "id must be a UUID").
 */
export function fixedPath(): HttpMiddleware {
  return {
    name: 'fixed-path',
    before: (request) => {
      const op = httpState(request).operation;
      if (!op.path.includes('{')) return;
      const method = request.event.requestContext?.http?.method ?? op.method;
      // The path rebuilt from the route and its parameters, so a stage prefix in rawPath does not matter.
      const params = request.event.pathParameters ?? {};
      const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => params[name] ?? `{${name}}`);
      const allowed = fixedPathMethods(routes, op.path, method, path);
      if (allowed) throw new MethodNotAllowedError(method, path, allowed);
    },
  };
}
