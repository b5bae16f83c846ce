/**
 * URL normalization for the crawler: two spellings of one page count once. Resolves against
 * a base, keeps only http(s), lower-cases scheme and host (WHATWG URL does), drops default
 * ports (URL does), the fragment and credentials, sorts the query parameters and drops an
 * empty query. The path is kept as written (servers may treat `/a` and `/a/` differently).
 */
export function normalizeUrl(raw: string, base?: string): string | undefined {
  let url: URL;
  try {
    url = base ? new URL(raw.trim(), base) : new URL(raw.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  url.hash = '';
  url.username = '';
  url.password = '';
  url.searchParams.sort();
  // `searchParams.sort()` re-serializes; an empty query leaves a bare `?` in some spellings.
  if (!url.searchParams.size) url.search = '';
  return url.toString();
}

/** Whether two normalized URLs are on the same host (and port and scheme family). */
export function sameHost(a: string, b: string): boolean {
  return new URL(a).host === new URL(b).host;
}
