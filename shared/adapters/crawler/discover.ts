import { checkUrlShape, EgressRefusedError, resolveAllowed, safeFetch } from '../egress';
import { normalizeUrl, sameHost } from './url';
import { loadRobots, type RobotsRules } from './robots';

type Parsers = typeof import('./parse');

export interface DiscoverOptions {
  /** Link depth followed from the root (root = 0). */
  maxDepth: number;
  /** URLs returned at most. */
  limit: number;
  /** Per request. Default 5 s. */
  requestTimeoutMs?: number;
  /** The whole crawl; what was found by then is returned. Default 20 s. */
  totalTimeMs?: number;
  /** Bytes read of one page; the rest is ignored. Default 1 MB. */
  maxPageBytes?: number;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** Sitemap documents read at most (an index and its children). Default 5. */
  maxSitemaps?: number;
}

export interface DiscoverResult {
  urls: string[];
  /** How many URLs are returned (at most `limit`). */
  total: number;
  /** True when the time limit cut the crawl short. */
  timedOut: boolean;
}

const HTML_TYPES = /^(text\/html|application\/xhtml\+xml)\b/i;

/**
 * Discovers the URLs of a site: the root, what its sitemap (robots.txt `Sitemap:` lines or
 * /sitemap.xml) lists, then links followed breadth-first from the root up to `maxDepth`.
 * Stays on the root's host, obeys robots.txt, follows only HTML pages, reads at most
 * `maxPageBytes` of each, keeps `concurrency` requests in flight and stops at `limit` URLs or
 * when the time budget runs out. Every request goes through the egress guard.
 * Throws EgressRefusedError when the root itself is refused.
 */
export async function discoverUrls(rootUrl: string, options: DiscoverOptions): Promise<DiscoverResult> {
  const { maxDepth, limit, requestTimeoutMs = 5_000, totalTimeMs = 20_000, maxPageBytes = 1024 * 1024, concurrency = 4, maxSitemaps = 5 } = options;
  const root = normalizeUrl(rootUrl);
  if (!root) throw new EgressRefusedError(rootUrl, 'not an http(s) URL');
  const rootParsed = checkUrlShape(root);
  await resolveAllowed(root, rootParsed.hostname);
  // The HTML and XML parsers (linkedom, about 300 KB) load while robots.txt is fetched: a file of
  // their own (lib/bundle.ts splits at a dynamic import), so the function's cold start does not
  // compile them, and the crawl hardly waits for them.
  const loading = import('./parse');
  loading.catch(() => undefined);

  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), totalTimeMs);
  const fetchOptions = { timeoutMs: requestTimeoutMs, signal: deadline.signal };
  try {
    const robots = await loadRobots(root, fetchOptions);
    const parsers = await loading;
    const seen = new Set<string>();
    const results: string[] = [];
    const refused = new Set<string>();
    const accept = (url: string): boolean => {
      if (seen.has(url)) return false;
      seen.add(url);
      if (!sameHost(url, root) || !robots.allowed(url) || results.length >= limit) return false;
      results.push(url);
      return true;
    };
    if (!accept(root)) return { urls: [], total: 0, timedOut: false };

    for (const loc of await readSitemaps(root, robots, maxSitemaps, fetchOptions, parsers)) {
      const url = normalizeUrl(loc);
      if (url) accept(url);
    }

    let frontier = [root];
    for (let depth = 0; depth < maxDepth && frontier.length && results.length < limit && !deadline.signal.aborted; depth++) {
      const next: string[] = [];
      await eachLimited(frontier, concurrency, async (pageUrl) => {
        if (deadline.signal.aborted || results.length >= limit) return;
        const page = await fetchPage(pageUrl, maxPageBytes, fetchOptions, parsers);
        if (page.refused) refused.add(pageUrl);
        for (const link of page.links) if (accept(link)) next.push(link);
      });
      frontier = next;
    }
    const urls = results.filter((u) => !refused.has(u));
    return { urls, total: urls.length, timedOut: deadline.signal.aborted };
  } finally {
    clearTimeout(timer);
  }
}

interface Page {
  links: string[];
  /** The page (or a redirect it led to) was refused by the egress guard. */
  refused: boolean;
}

async function fetchPage(url: string, maxBytes: number, fetchOptions: { timeoutMs: number; signal: AbortSignal }, parsers: Parsers): Promise<Page> {
  try {
    const res = await safeFetch(url, { ...fetchOptions, maxBytes, accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1' });
    if (res.status < 200 || res.status >= 300 || !HTML_TYPES.test(res.contentType)) return { links: [], refused: false };
    return { links: parsers.extractLinks(res.body.toString('utf8'), res.url), refused: false };
  } catch (err) {
    // A page that fails is skipped; the crawl goes on. A refused hop drops the page from the results.
    return { links: [], refused: err instanceof EgressRefusedError };
  }
}

async function readSitemaps(root: string, robots: RobotsRules, max: number, fetchOptions: { timeoutMs: number; signal: AbortSignal }, parsers: Parsers): Promise<string[]> {
  const queue = [...robots.sitemaps, new URL('/sitemap.xml', root).toString()]
    .map((u) => normalizeUrl(u))
    .filter((u): u is string => !!u && sameHost(u, root));
  const done = new Set<string>();
  const pages: string[] = [];
  while (queue.length && done.size < max) {
    const url = queue.shift()!;
    if (done.has(url)) continue;
    done.add(url);
    try {
      const res = await safeFetch(url, { ...fetchOptions, maxBytes: 5 * 1024 * 1024, accept: 'application/xml,text/xml' });
      if (res.status !== 200) continue;
      const parsed = parsers.parseSitemap(res.body.toString('utf8'));
      pages.push(...parsed.pages);
      for (const s of parsed.sitemaps) {
        const n = normalizeUrl(s);
        if (n && sameHost(n, root)) queue.push(n);
      }
    } catch {
      // No sitemap, or an unreadable one: the crawl still follows links.
    }
  }
  return pages;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}
