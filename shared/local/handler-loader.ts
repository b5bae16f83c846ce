import { resolve } from 'node:path';
import { allowRequireOfEsmOnlyPackages } from './esm-interop';

/** The repository root: entry files in the registries are relative to it. */
export const repoRoot = resolve(__dirname, '..', '..');

/** Loads the `handler` export of an entry file (relative to the repository root). */
export type HandlerLoader = <H = unknown>(entry: string) => Promise<H>;

/**
 * A loader that imports each entry file once, on first use, and caches the promise, as a
 * warm Lambda keeps its module. A failed import is not cached, so a fixed file loads on the
 * next request without a restart.
 */
export function createHandlerLoader(root: string = repoRoot): HandlerLoader {
  allowRequireOfEsmOnlyPackages();
  const cache = new Map<string, Promise<unknown>>();
  return <H>(entry: string): Promise<H> => {
    let loaded = cache.get(entry);
    if (!loaded) {
      loaded = importHandler(resolve(root, entry), entry);
      loaded.catch(() => cache.delete(entry));
      cache.set(entry, loaded);
    }
    return loaded as Promise<H>;
  };
}

async function importHandler(file: string, entry: string): Promise<unknown> {
  // An absolute path (not a file URL) so the same call works under tsx and under jest's require.
  const mod = (await import(file)) as { handler?: unknown; default?: { handler?: unknown } };
  const handler = mod.handler ?? mod.default?.handler;
  if (typeof handler !== 'function') throw new Error(`Entry file ${entry} does not export a function named "handler".`);
  return handler;
}
