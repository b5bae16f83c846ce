import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { rawBody, type RawBody } from '../common/raw-body';

/**
 * The embeddable widget's script (widget/, bundled by esbuild). Deployed, the stack's bundler
 * writes it as `embed.js` beside the serving function's code (lib/bundle.ts), and the function
 * reads it once per process. Locally (the local runtime, jest) it is built from widget/ on first
 * request and kept for the process, so an edit shows after a restart with no build step.
 */
export const EMBED_SCRIPT_FILE = 'embed.js';

export interface EmbedScript {
  code: string;
  gzip: Buffer;
  /** A strong ETag: the SHA-256 of the script. */
  etag: string;
}

let loaded: Promise<EmbedScript> | undefined;

async function source(): Promise<string> {
  const root = process.env.LAMBDA_TASK_ROOT;
  if (root && existsSync(join(root, EMBED_SCRIPT_FILE))) return readFileSync(join(root, EMBED_SCRIPT_FILE), 'utf8');
  // A computed specifier: the function's bundle must not take in the builder (and esbuild with it).
  const builder = ['..', '..', '..', 'widget', 'build'].join('/');
  const { buildWidgetScript } = (await import(builder)) as typeof import('../../../widget/build');
  return buildWidgetScript().code;
}

/** The script, built or read once per process. */
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
