import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { rawBody, type RawBody } from '../common/raw-body';

/**
 * The embeddable widget's script: the committed build, `widget/dist/embed.js` (`npm run
 * widget:build` writes it from widget/src; a unit test keeps it current). The API never builds
 * the script: deployed, the stack copies that file as `embed.js` beside the serving function's
 * code (the operation's `bundleFiles`, lib/bundle.ts) and the function reads it from
 * LAMBDA_TASK_ROOT; locally (the local runtime, jest) it is read from the repository. Once per
 * process either way.
 */
export const EMBED_SCRIPT_FILE = 'embed.js';
/** The committed build, relative to the repository root. */
export const EMBED_SCRIPT_DIST = 'widget/dist/embed.js';

export interface EmbedScript {
  code: string;
  gzip: Buffer;
  /** A strong ETag: the SHA-256 of the script. */
  etag: string;
}

let loaded: Promise<EmbedScript> | undefined;

/** Where the script is: beside the function when deployed, else the repository's committed build. */
export function embedScriptPath(): string {
  const root = process.env.LAMBDA_TASK_ROOT;
  if (root && existsSync(join(root, EMBED_SCRIPT_FILE))) return join(root, EMBED_SCRIPT_FILE);
  // The repository's copy (shared/domain/widgets → the root); an ES module bundle has no __dirname.
  return typeof __dirname === 'string' ? join(__dirname, '..', '..', '..', EMBED_SCRIPT_DIST) : join(process.cwd(), EMBED_SCRIPT_DIST);
}

async function source(): Promise<string> {
  return readFile(embedScriptPath(), 'utf8');
}

/** The script, read once per process. */
export function embedScript(): Promise<EmbedScript> {
  loaded ??= source().then((code) => ({
    code,
    gzip: gzipSync(code, { level: 9 }),
    etag: `"${createHash('sha256').update(code).digest('base64url').slice(0, 32)}"`,
  }));
  loaded.catch(() => {
    loaded = undefined;
  });
  return loaded;
}

/**
 * The script's HTTP answer: 304 when `If-None-Match` names the current ETag, gzip-encoded when
 * the client accepts it. Cached by browsers and CDNs for five minutes, then revalidated by ETag,
 * so a new version reaches every site within minutes without a versioned URL in their pages.
 * `HEAD` gets the same answer: the HTTP layer (API Gateway; Node's server locally) sends its
 * headers, `Content-Length` included, and never a body to a HEAD request.
 */
export async function serveEmbedScript(ifNoneMatch: string | undefined, acceptEncoding: string | undefined): Promise<{ body: RawBody; headers: Record<string, string> }> {
  const script = await embedScript();
  const headers: Record<string, string> = {
    etag: script.etag,
    'cache-control': 'public, max-age=300',
    vary: 'Accept-Encoding',
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
  };
  const type = 'text/javascript; charset=utf-8';
  const tags = (ifNoneMatch ?? '').split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (tags.includes(script.etag) || tags.includes('*')) return { body: rawBody(type, '', { statusCode: 304 }), headers };
  if (/\bgzip\b/i.test(acceptEncoding ?? '')) {
    return { body: rawBody(type, script.gzip.toString('base64'), { base64: true }), headers: { ...headers, 'content-encoding': 'gzip' } };
  }
  return { body: rawBody(type, script.code), headers };
}
