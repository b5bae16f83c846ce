import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Every module-level `named(…)` or `lazy(…)` declaration is marked `/* @__PURE__ *\/`, so esbuild
 * drops the declarations a function never reads from its bundle (an area's schema module declares
 * every operation's schemas; without the mark each function carried them all: 7 KB of the agents'
 * schemas in getCall, docs/operations.md "Bundles and cold starts"). `named()` registers the schema's
 * name for the OpenAPI generator, which only converts schemas it reaches, so a dropped one is never missed.
 */

const ROOT = path.resolve(__dirname, '../../..');
const filesUnder = (dir: string): string[] =>
  fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));

it('module-level named() and lazy() declarations carry the pure mark', () => {
  const unmarked: string[] = [];
  let marked = 0;
  for (const file of filesUnder('shared/domain')) {
    fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
      const m = line.match(/^(export )?const \w+(: [^=]+)? = (\/\* @__PURE__ \*\/ )?(named|lazy)\(/);
      if (!m) return;
      if (m[3]) marked++;
      else unmarked.push(`${file}:${i + 1}`);
    });
  }
  expect(unmarked).toEqual([]);
  expect(marked).toBeGreaterThan(200); // the scan finds the declarations (or it would prove nothing)
});
