import { existsSync, readFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join } from 'node:path';

type ResolveFilename = (this: unknown, request: string, parent: { filename?: string | null } | undefined, isMain: boolean, options?: unknown) => string;
const CjsModule = Module as unknown as { _resolveFilename: ResolveFilename; _nodeModulePaths(from: string): string[] };

let patched = false;

/**
 * Lets CommonJS code (tsx runs our .ts files as CommonJS) require packages that export only an
 * `import` condition, such as @middy/core 7: when Node refuses with ERR_PACKAGE_PATH_NOT_EXPORTED,
 * the `import` target is used instead (Node 20.19+ and tsx can require ES modules). This is the
 * runtime twin of the `@middy` moduleNameMapper in jest.config.js; esbuild needs neither.
 */
export function allowRequireOfEsmOnlyPackages(): void {
  if (patched) return;
  patched = true;
  const original = CjsModule._resolveFilename;
  CjsModule._resolveFilename = function resolveFilename(request, parent, isMain, options) {
    try {
      return original.call(this, request, parent, isMain, options);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw err;
      const target = importTarget(request, parent?.filename ? dirname(parent.filename) : process.cwd());
      if (!target) throw err;
      return target;
    }
  };
}

function importTarget(request: string, fromDir: string): string | undefined {
  const parts = /^((?:@[^/]+\/)?[^/.][^/]*)(\/.+)?$/.exec(request);
  if (!parts) return undefined;
  const [, name, subpath] = parts;
  for (const dir of CjsModule._nodeModulePaths(fromDir)) {
    const packageDir = join(dir, name!);
    const manifest = join(packageDir, 'package.json');
    if (!existsSync(manifest)) continue;
    const exportsField = (JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown }).exports;
    const key = subpath ? `.${subpath}` : '.';
    const bySubpath = typeof exportsField === 'object' && exportsField !== null && !Array.isArray(exportsField) && Object.keys(exportsField).some((k) => k.startsWith('.'));
    const entry = bySubpath ? (exportsField as Record<string, unknown>)[key] : key === '.' ? exportsField : undefined;
    const target = pick(entry);
    return target ? join(packageDir, target) : undefined;
  }
  return undefined;
}

function pick(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (Array.isArray(entry)) {
    for (const e of entry) {
      const found = pick(e);
      if (found) return found;
    }
    return undefined;
  }
  if (entry && typeof entry === 'object') {
    for (const condition of ['node', 'import', 'default']) {
      if (condition in entry) {
        const found = pick((entry as Record<string, unknown>)[condition]);
        if (found) return found;
      }
    }
  }
  return undefined;
}
