/** A compiled path template: literal segments outrank `{param}` segments. */
export interface CompiledRoute<T> {
  method: string;
  segments: string[];
  value: T;
}

export function compileRoutes<T extends { method: string; path: string }>(routes: T[]): CompiledRoute<T>[] {
  return routes.map((r) => ({ method: r.method, segments: r.path.split('/').filter(Boolean), value: r }));
}

function matchSegments(template: string[], actual: string[]): Record<string, string> | null {
  if (template.length !== actual.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i];
    if (t.startsWith('{') && t.endsWith('}')) {
      let value: string;
      try {
        value = decodeURIComponent(actual[i]);
      } catch {
        value = actual[i];
      }
      params[t.slice(1, -1)] = value;
    } else if (t !== actual[i]) return null;
  }
  return params;
}

/** Whether one request path can match both templates: at each segment a parameter in either, or the same literal. */
function overlap(a: string[], b: string[]): boolean {
  const param = (s: string) => s.startsWith('{');
  return a.length === b.length && a.every((s, i) => param(s) || param(b[i]) || s === b[i]);
}

/** Specificity: more literal segments first, so `/health/ready` beats `/health/{x}`. */
function literalCount(segments: string[]): number {
  return segments.filter((s) => !s.startsWith('{')).length;
}

export type MatchResult<T> =
  | { kind: 'match'; route: T; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

/** Finds the route for a method and path, tolerating one trailing slash. */
export function matchRoute<T>(routes: CompiledRoute<T>[], method: string, path: string): MatchResult<T> {
  const actual = path.split('?')[0].split('/').filter(Boolean);
  const candidates = routes
    .map((r) => ({ r, params: matchSegments(r.segments, actual) }))
    .filter((c): c is { r: CompiledRoute<T>; params: Record<string, string> } => c.params !== null);
  if (!candidates.length) return { kind: 'not-found' };
  const best = Math.max(...candidates.map((c) => literalCount(c.r.segments)));
  const top = candidates.filter((c) => literalCount(c.r.segments) === best);
  const hit = top.find((c) => c.r.method === method.toUpperCase());
  if (hit) return { kind: 'match', route: hit.r.value, params: hit.params };
  const elsewhere = candidates.find((c) => c.r.method === method.toUpperCase());
  if (elsewhere) return { kind: 'match', route: elsewhere.r.value, params: elsewhere.params };
  return { kind: 'method-not-allowed', allowed: [...new Set(candidates.map((c) => c.r.method))].sort() };
}

/**
 * API Gateway sends `PATCH /contacts/search` to the `PATCH /contacts/{id}` route when only
 * `GET /contacts/search` exists. When `path` is such a fixed path (a route with more literal
 * segments matches it), this returns the methods that path has, for a 405; otherwise undefined.
 */
export function fixedPathMethods<T>(routes: CompiledRoute<T>[], template: string, method: string, path: string): string[] | undefined {
  const own = literalCount(template.split('/').filter(Boolean));
  const actual = path.split('?')[0].split('/').filter(Boolean);
  const matching = routes.filter((r) => matchSegments(r.segments, actual) !== null);
  const best = Math.max(own, ...matching.map((r) => literalCount(r.segments)));
  if (best === own) return undefined;
  const fixed = matching.filter((r) => literalCount(r.segments) === best);
  if (fixed.some((r) => r.method === method.toUpperCase())) return undefined;
  return [...new Set(fixed.map((r) => r.method))].sort();
}

/** The methods and paths of the registry, all the fallback function needs (kept in route-table.json). */
export function routeTable(routes: { method: string; path: string }[]): { method: string; path: string }[] {
  return routes.map(({ method, path }) => ({ method, path }));
}

/**
 * The routes `fixedPathMethods` can answer with (kept in shadowing-routes.json, bundled with every
 * `{param}` function): every route of a path with more literal segments than another route some
 * request path matches together with it (`GET /contacts/search` beside `PATCH /contacts/{id}`).
 * A function checks its requests against these alone, not against the whole route table.
 */
export function shadowingRoutes(routes: { method: string; path: string }[]): { method: string; path: string }[] {
  const compiled = compileRoutes(routes);
  const shadowing = new Set(
    compiled
      .filter((r) => compiled.some((p) => literalCount(p.segments) < literalCount(r.segments) && overlap(p.segments, r.segments)))
      .map((r) => r.value.path),
  );
  return routeTable(routes.filter((r) => shadowing.has(r.path)));
}
