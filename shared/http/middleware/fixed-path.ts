// Generated from the registry by `npm run openapi` (a test keeps it current): the few routes
// that can shadow a `{param}` route, not the whole table (every function bundles this module).
import routeList from '../shadowing-routes.json';
import { compileRoutes, fixedPathMethods } from '../route-match';
import { MethodNotAllowedError } from '../../errors';
import { httpState } from '../context';
import type { HttpMiddleware } from './types';

const routes = compileRoutes(routeList);

const isParam = (segment: string) => segment.startsWith('{');

/**
 * The routes that can shadow a template's requests: more literal segments, and at each segment a
 * parameter in either or the same literal. The others never change fixedPathMethods' answer for
 * any path of the template, so most operations (none shadows them) skip the check per request.
 */
const shadowing = new Map<string, typeof routes>();
function shadowingOf(template: string): typeof routes {
  let found = shadowing.get(template);
  if (!found) {
    const own = template.split('/').filter(Boolean);
    const literals = own.filter((s) => !isParam(s)).length;
    found = routes.filter(({ segments }) =>
      segments.length === own.length && segments.filter((s) => !isParam(s)).length > literals && segments.every((s, i) => isParam(s) || isParam(own[i]!) || s === own[i]));
    shadowing.set(template, found);
  }
  return found;
}

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
      const candidates = shadowingOf(op.path);
      if (!candidates.length) return;
      const method = request.event.requestContext?.http?.method ?? op.method;
      // The path rebuilt from the route and its parameters, so a stage prefix in rawPath does not matter.
      const params = request.event.pathParameters ?? {};
      const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => params[name] ?? `{${name}}`);
      const allowed = fixedPathMethods(candidates, op.path, method, path);
      if (allowed) throw new MethodNotAllowedError(method, path, allowed);
    },
  };
}
