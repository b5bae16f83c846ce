import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * The house rules for imports, read from the real source files (issue 22.8; docs/architecture.md).
 *
 * Layers, lowest first. A file may import from its own layer and from any layer below it, never
 * from one above:
 *
 *   0 foundation      shared/*.ts (clock, errors, config, logger, …): files directly in shared/,
 *                     and shared/telemetry/ (traces: every layer's hooks call it, it calls none)
 *   1 access          shared/access/        what a function may touch (declarations) and the local IAM mirror
 *   2 storage         shared/db/            the table: keys, store, counters
 *   3 common rules    shared/domain/common/ value rules every area and the adapters share (phone
 *                                           numbers, schema helpers, list results, response bodies)
 *   4 adapters        shared/adapters/      the outside world (carrier, queue, blobs, models, secrets);
 *                                           may use storage (the simulated carrier keeps its pool there)
 *   5 domain          shared/domain/<area>/ business rules; use adapters and storage
 *   6 interfaces      shared/http/, shared/jobs/, shared/domain/<area>/operations.ts (each area's
 *                                           HTTP declarations, kept beside the area by convention;
 *                                           `<part>-operations.ts` for a part whose functions load
 *                                           apart, e.g. calls/web-call-operations.ts)
 *   7 runtimes        shared/local/, functions/, voice/, lib/, bin/
 *
 * And no circle between files: every import counts, static, re-export, dynamic `import()`,
 * `require()` and type-only (`import type`, `import('…')` in a type) alike, since a type-only
 * import still ties two files' meanings together and hides the same tangle.
 */

const ROOT = path.resolve(__dirname, '../../..');
const SCANNED = ['shared', 'functions', 'lib', 'voice', 'bin'];

interface Layer {
  rank: number;
  name: string;
  test: (file: string) => boolean;
}

/** First match wins (operations.ts and common/ before the rest of shared/domain/). */
const LAYERS: Layer[] = [
  { rank: 0, name: 'foundation (shared/*.ts)', test: (f) => /^shared\/[^/]+\.ts$/.test(f) },
  { rank: 0, name: 'foundation (shared/telemetry/)', test: (f) => f.startsWith('shared/telemetry/') },
  { rank: 1, name: 'access (shared/access/)', test: (f) => f.startsWith('shared/access/') },
  { rank: 2, name: 'storage (shared/db/)', test: (f) => f.startsWith('shared/db/') },
  { rank: 3, name: 'common rules (shared/domain/common/)', test: (f) => f.startsWith('shared/domain/common/') },
  { rank: 4, name: 'adapters (shared/adapters/)', test: (f) => f.startsWith('shared/adapters/') },
  { rank: 6, name: 'interfaces (shared/domain/<area>/operations.ts)', test: (f) => /^shared\/domain\/[^/]+\/([a-z]+-)*operations\.ts$/.test(f) },
  { rank: 5, name: 'domain (shared/domain/)', test: (f) => f.startsWith('shared/domain/') },
  { rank: 6, name: 'interfaces (shared/http/, shared/jobs/)', test: (f) => f.startsWith('shared/http/') || f.startsWith('shared/jobs/') },
  { rank: 7, name: 'runtimes (shared/local/, functions/, voice/, lib/, bin/)', test: (f) => /^(shared\/local|functions|voice|lib|bin)\//.test(f) },
];

function layerOf(file: string): Layer | undefined {
  return LAYERS.find((layer) => layer.test(file));
}

export interface Edge {
  from: string;
  to: string;
  kind: 'static' | 'type' | 'dynamic' | 'require';
}

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
    }
  };
  SCANNED.forEach(walk);
  return out.sort();
}

/** A relative specifier resolved to a repository path (`.ts`, `/index.ts`, or the file itself), or undefined for a package. */
function resolve(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier.replace(/\.js$/, '')));
  for (const candidate of [`${base}.ts`, `${base}/index.ts`, base]) {
    const full = path.join(ROOT, candidate);
    if (fs.existsSync(full) && fs.statSync(full).isFile()) return candidate;
  }
  return `${base} (unresolved)`;
}

/** Every import of one file, as the TypeScript parser sees it. */
function importsOf(file: string): Edge[] {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const add = (specifier: string, kind: Edge['kind']) => {
    const to = resolve(file, specifier);
    if (to) edges.push({ from: file, to, kind });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined;
      const typeOnly = !!clause && (clause.isTypeOnly || (!clause.name && !!named?.length && named.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, typeOnly ? 'type' : 'static');
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.isTypeOnly ? 'type' : 'static');
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      add(node.moduleReference.expression.text, node.isTypeOnly ? 'type' : 'require');
    } else if (ts.isCallExpression(node) && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0].text, 'dynamic');
      else if (ts.isIdentifier(node.expression) && node.expression.text === 'require') add(node.arguments[0].text, 'require');
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, 'type');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

/** Strongly connected components with more than one file (or a file importing itself): the circles. */
export function circles(files: string[], edges: Edge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) if (next.has(e.to)) next.get(e.from)!.push(e.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next.get(v)!.includes(v)) found.push(component.sort());
  };
  for (const f of files) if (!index.has(f)) connect(f);
  return found;
}

/** Imports from a layer above the importer's own, as `from -> to (kind): layer -> layer`. */
export function upwardImports(edges: Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const [from, to] = [layerOf(e.from), layerOf(e.to)];
    if (from && to && to.rank > from.rank) out.push(`${e.from} -> ${e.to} (${e.kind}): ${from.name} -> ${to.name}`);
  }
  return out;
}

const files = sourceFiles();
const edges = files.flatMap(importsOf);

describe('imports between source files', () => {
  it('reads the real files and their imports of every kind', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges).toContainEqual({ from: 'shared/db/client.ts', to: 'shared/access/enforce.ts', kind: 'static' });
    // A lazily loaded module is an import too (phone rules load on the first number checked).
    expect(edges).toContainEqual({ from: 'shared/domain/common/phone-field.ts', to: 'shared/domain/common/phone.ts', kind: 'dynamic' });
    expect(edges.some((e) => e.kind === 'type')).toBe(true);
  });

  it('resolves every relative import', () => {
    expect(edges.filter((e) => e.to.endsWith('(unresolved)'))).toEqual([]);
  });

  it('places every scanned file in a layer', () => {
    expect(files.filter((f) => !layerOf(f))).toEqual([]);
  });

  it('has no circle between files', () => {
    expect(circles(files, edges).map((c) => c.join(' <-> '))).toEqual([]);
  });

  it('has no import from a higher layer', () => {
    expect(upwardImports(edges)).toEqual([]);
  });

  // The engine reads nothing from the table itself: it takes tools, passages, agents through the
  // areas' services (issue 25.10), so its storage stays behind one interface per area.
  it('keeps the conversation engine (shared/domain/conversations/) off the table (shared/db/)', () => {
    const engineToDb = (list: Edge[]) => list.filter((e) => e.from.startsWith('shared/domain/conversations/') && e.to.startsWith('shared/db/')).map((e) => `${e.from} -> ${e.to} (${e.kind})`);
    expect(engineToDb(edges)).toEqual([]);
    expect(engineToDb([{ from: 'shared/domain/conversations/tools/catalog.ts', to: 'shared/db/keys.ts', kind: 'type' }])).toHaveLength(1);
  });

  it('would notice a circle or an upward import (the checks can fail)', () => {
    const fake: Edge[] = [
      { from: 'shared/domain/a/x.ts', to: 'shared/domain/b/y.ts', kind: 'static' },
      { from: 'shared/domain/b/y.ts', to: 'shared/domain/a/x.ts', kind: 'type' },
      { from: 'shared/db/store.ts', to: 'shared/http/envelope.ts', kind: 'dynamic' },
    ];
    expect(circles(['shared/domain/a/x.ts', 'shared/domain/b/y.ts', 'shared/db/store.ts', 'shared/http/envelope.ts'], fake)).toEqual([['shared/domain/a/x.ts', 'shared/domain/b/y.ts']]);
    expect(upwardImports(fake)).toEqual([expect.stringContaining('shared/db/store.ts -> shared/http/envelope.ts (dynamic)')]);
    expect(upwardImports([{ from: 'shared/domain/calls/service.ts', to: 'shared/domain/calls/operations.ts', kind: 'static' }])).toHaveLength(1);
  });
});
