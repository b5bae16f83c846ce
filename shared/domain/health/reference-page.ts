import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rawBody, type RawBody } from '../common/raw-body';
import { FAVICON_LINK } from './favicon';

/**
 * The API reference page: Redoc rendering this API's own OpenAPI document, with Redoc's script
 * served by the API itself, so the page loads nothing from the internet (no CDN, no web fonts).
 *
 * Deployed, the stack's bundler copies the script beside the serving function's code as
 * `REDOC_SCRIPT_FILE` (the operation's `bundleFiles`, lib/bundle.ts); locally (the runtime,
 * jest) it is read from node_modules. Either way it is read once per process.
 */
export const REDOC_SCRIPT_FILE = 'redoc.standalone.js';
/** Where the script comes from, relative to the repository root (the `redoc` package, pinned in package.json). */
export const REDOC_SCRIPT_SOURCE = 'node_modules/redoc/bundles/redoc.standalone.js';

export const REFERENCE_PATH = '/api/v1/docs';
export const REFERENCE_SCRIPT_PATH = '/api/v1/docs/redoc.js';
const DOCUMENT_PATH = '/api/v1/openapi.json';

// The Content-Security-Policy lets the page load only from this API (Redoc styles inline and
// runs its search in a worker made from a blob), so nothing reaches the internet even if a later
// Redoc fetched something new. Absolute paths: the stage is `$default` (lib/api.ts), so the API answers at the host's root,
// and a relative URL would break under `/api/v1/docs/` (every path also answers with a slash).
const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Voice AI Agent Platform API reference</title>
${FAVICON_LINK}
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; worker-src blob:">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="${DOCUMENT_PATH}" hide-download-button="false" path-in-middle-panel="true"></redoc>
<script src="${REFERENCE_SCRIPT_PATH}"></script>
</body>
</html>
`;

/** The page itself: a few hundred bytes that load the script and the document from this API. */
export function referencePage(): RawBody {
  return rawBody('text/html; charset=utf-8', PAGE);
}

let script: string | undefined;

function scriptFile(): string {
  const root = process.env.LAMBDA_TASK_ROOT;
  if (root) return join(root, REDOC_SCRIPT_FILE);
  return join(__dirname, '..', '..', '..', REDOC_SCRIPT_SOURCE);
}

/**
 * The one thing Redoc's standalone bundle fetches from the internet by itself: the attribution's
 * logo, drawn from Redocly's CDN in every page's menu (no option turns it off). It is served as
 * an inline image instead; the attribution's text and link stay.
 */
export const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const INLINE_LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

/** Redoc's standalone bundle (about 1 MB), read on first use and kept for the process. */
export function referenceScript(): RawBody {
  script ??= readFileSync(scriptFile(), 'utf8').replaceAll(REDOC_CDN_LOGO, INLINE_LOGO);
  return rawBody('text/javascript; charset=utf-8', script);
}
