import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { operations, fallbackEntry, websocketRoutes } from '../../../shared/http/registry';
import { jobs } from '../../../shared/jobs/registry';
import { buildOpenApi } from '../../../shared/http/openapi';
import { routeTable, shadowingRoutes } from '../../../shared/http/route-match';
import pkg from '../../../package.json';

const root = join(__dirname, '..', '..', '..');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [relative(root, full)];
  });
}

describe('route registry', () => {
  const entries = new Set([...operations.map((o) => o.entry), fallbackEntry, ...jobs.map((j) => j.entry), ...websocketRoutes.map((r) => r.entry)]);

  it('has an entry file for every operation and job', () => {
    const missing = [...entries].filter((e) => !existsSync(join(root, e)));
    expect(missing).toEqual([]);
  });

  it('marks every operation declaration pure, so a bundle drops its area\'s other operations', () => {
    const unmarked = filesUnder(join(root, 'shared')).filter((f) => f.endsWith('.ts') && f !== join('shared', 'http', 'operation.ts'))
      .flatMap((f) => readFileSync(join(root, f), 'utf8').split('\n').map((line, i) => ({ where: `${f}:${i + 1}`, line })))
      .filter(({ line }) => /^export const \w+ = (?!\/\* @__PURE__ \*\/ )/.test(line) && /defineOperation\(|preflight\(/.test(line))
      .map(({ where }) => where);
    expect(unmarked).toEqual([]);
    // What the mark buys: a function's bundle holds its own operation, not its area's others (test/infra/cold-start.test.ts).
  });

  it('has a registry entry for every entry file', () => {
    const orphans = filesUnder(join(root, 'functions')).filter((f) => f.endsWith('.ts') && !entries.has(f));
    expect(orphans).toEqual([]);
  });

  it('declares each method and path once, and each operation id once', () => {
    const routes = operations.map((o) => `${o.method} ${o.path}`);
    expect(routes.length).toBe(new Set(routes).size);
    const ids = operations.map((o) => o.operationId);
    expect(ids.length).toBe(new Set(ids).size);
  });

  it('keeps paths under /api/v1 without a trailing slash, and each entry file imports its own operation', () => {
    for (const op of operations) {
      expect(op.path).toMatch(/^\/api\/v1\/[^?#]*[^/]$/);
      const source = readFileSync(join(root, op.entry), 'utf8');
      expect(source).toMatch(new RegExp(`\\b${op.operationId}\\b`));
      expect(source).not.toMatch(/shared\/http\/registry/);
    }
  });

  it('keeps shared/http/route-table.json in step with the registry (run `npm run openapi`)', () => {
    const written = JSON.parse(readFileSync(join(root, 'shared', 'http', 'route-table.json'), 'utf8'));
    expect(written).toEqual(routeTable(operations));
  });

  it('keeps shared/http/shadowing-routes.json in step with the registry (run `npm run openapi`)', () => {
    const written = JSON.parse(readFileSync(join(root, 'shared', 'http', 'shadowing-routes.json'), 'utf8'));
    expect(written).toEqual(shadowingRoutes(operations));
    // Every fixed path that shadows a `{param}` route of the same shape, with all its methods.
    expect(written).toEqual(expect.arrayContaining([{ method: 'GET', path: '/api/v1/contacts/search' }, { method: 'POST', path: '/api/v1/phone-numbers/buy' }]));
    expect(written.length).toBeLessThan(routeTable(operations).length / 4);
  });

  it('keeps docs/openapi.json in step with the registry (run `npm run openapi`)', () => {
    const written = JSON.parse(readFileSync(join(root, 'docs', 'openapi.json'), 'utf8'));
    expect(written).toEqual(JSON.parse(JSON.stringify(buildOpenApi(operations, pkg.version))));
  });
});

/**
 * package.json says which of our modules do something when imported (`sideEffects`); esbuild
 * drops every other module a function imports without using (its own transitive imports too),
 * which keeps code off the functions' cold starts (docs/operations.md, "Bundles and cold starts").
 * The tests run the sources unbundled, so only this check stands between a module whose import
 * does something and a bundle that silently leaves it out.
 */
/**
 * An operation's response schema is set in its area's `RESPONSES:` block, never in the
 * declaration itself: function bundles drop that block (lib/bundle.ts `dropLabels`), so no function
 * builds a schema only the OpenAPI document reads. One in the declaration would go back on every
 * cold start of that function, silently.
 */
it('declares response schemas only in the RESPONSES blocks function bundles drop', () => {
  const declaring = filesUnder(join(root, 'shared', 'domain')).filter((f) => /operations\.ts$/.test(f));
  expect(declaring.length).toBeGreaterThan(15);
  const inline = declaring.filter((f) => /^(?!\s*\w+\.response = ).*\bresponse: /m.test(readFileSync(join(root, f), 'utf8')));
  expect(inline).toEqual([]);
  const withResponse = operations.filter((o) => o.response).length;
  expect(withResponse).toBeGreaterThan(100);
});

describe('modules that act when imported', () => {
  const listed = new Set(pkg.sideEffects.map((f) => f.replace(/^\.\//, '')));
  const sources = [...filesUnder(join(root, 'shared')), ...filesUnder(join(root, 'functions'))].filter((f) => f.endsWith('.ts') && !f.startsWith(join('shared', 'local')));

  it('are listed in package.json sideEffects: a statement at the top level that is not a declaration', () => {
    const acting = sources.filter((f) => readFileSync(join(root, f), 'utf8').split('\n').some((line) => /^(void |if |for |while |try|await |[A-Za-z_$][\w$.]*\(|[A-Za-z_$][\w$.]*\s*=[^=>])/.test(line)));
    expect(acting.filter((f) => !listed.has(f))).toEqual([]);
  });

  it('are listed when imported for their effect alone (`import "./module"`)', () => {
    const bare = sources.flatMap((f) =>
      [...readFileSync(join(root, f), 'utf8').matchAll(/^import ['"](\.[^'"]+)['"];/gm)].map((m) => relative(root, join(root, f, '..', `${m[1]}.ts`))),
    );
    expect(bare.length).toBeGreaterThan(0);
    expect(bare.filter((f) => !listed.has(f))).toEqual([]);
  });

  it('lists only files that exist', () => {
    expect([...listed].filter((f) => !sources.includes(f))).toEqual([]);
  });
});
