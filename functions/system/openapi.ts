import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { http } from '../../shared/http/handler';
import { getOpenApi } from '../../shared/domain/health/operations';

/**
 * The document is generated from the registry at build time (`npm run openapi`, kept current by a
 * test) and shipped as a file beside the bundle (the operation's `bundleFiles`), read and parsed on
 * the first request: loading it as a module made this the slowest function to start.
 */
const FILE = 'openapi.json';

export function documentPath(): string {
  const root = process.env.LAMBDA_TASK_ROOT;
  if (root && existsSync(join(root, FILE))) return join(root, FILE);
  // The repository's copy (functions/system → the root); an ES module bundle has no __dirname.
  return typeof __dirname === 'string' ? join(__dirname, '..', '..', 'docs', FILE) : join(process.cwd(), 'docs', FILE);
}

let document: Promise<unknown> | undefined;

export const handler = http(getOpenApi, () => {
  document ??= readFile(documentPath(), 'utf8').then((text) => JSON.parse(text) as unknown);
  document.catch(() => {
    document = undefined;
  });
  return document;
});
