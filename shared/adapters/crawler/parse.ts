import { DOMParser, parseHTML } from 'linkedom';
import { normalizeUrl } from './url';

/** Normalized absolute links of an HTML page (`<base href>` honoured, `rel=nofollow` skipped). */
export function extractLinks(html: string, pageUrl: string): string[] {
  const { document } = parseHTML(html);
  const baseHref = document.querySelector('base[href]')?.getAttribute('href');
  const base = (baseHref && normalizeUrl(baseHref, pageUrl)) || pageUrl;
  const out: string[] = [];
  for (const a of document.querySelectorAll('a[href], area[href]')) {
    if (/\bnofollow\b/i.test(a.getAttribute('rel') ?? '')) continue;
    const url = normalizeUrl(a.getAttribute('href') ?? '', base);
    if (url) out.push(url);
  }
  return out;
}

/** `<loc>` entries of a sitemap or sitemap index document. */
export function parseSitemap(xml: string): { pages: string[]; sitemaps: string[] } {
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  const locs = (parent: string) =>
    [...doc.getElementsByTagName(parent)].map((el) => el.getElementsByTagName('loc')[0]?.textContent?.trim() ?? '').filter(Boolean);
  return { pages: locs('url'), sitemaps: locs('sitemap') };
}
