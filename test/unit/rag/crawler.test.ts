import { extractLinks, parseSitemap } from '../../../shared/adapters/crawler/parse';
import { parseRobots } from '../../../shared/adapters/crawler/robots';
import { normalizeUrl, sameHost } from '../../../shared/adapters/crawler/url';

describe('normalizeUrl', () => {
  it.each([
    ['HTTP://Example.COM:80/a#frag', 'http://example.com/a'],
    ['https://example.com:443/', 'https://example.com/'],
    ['https://example.com', 'https://example.com/'],
    ['https://example.com/p?b=2&a=1', 'https://example.com/p?a=1&b=2'],
    ['https://example.com/p?', 'https://example.com/p'],
    ['https://user:pw@example.com/x', 'https://example.com/x'],
    ['http://example.com:8080/x', 'http://example.com:8080/x'],
  ])('%s → %s', (raw, expected) => {
    expect(normalizeUrl(raw)).toBe(expected);
  });

  it('resolves relative links and drops other schemes', () => {
    expect(normalizeUrl('../b?x=1#y', 'https://example.com/a/c')).toBe('https://example.com/b?x=1');
    expect(normalizeUrl('mailto:a@b.c')).toBeUndefined();
    expect(normalizeUrl('javascript:alert(1)', 'https://example.com/')).toBeUndefined();
  });

  it('compares hosts with their ports', () => {
    expect(sameHost('http://a.com/x', 'http://a.com:80/y')).toBe(true);
    expect(sameHost('http://a.com/x', 'http://a.com:8080/y')).toBe(false);
    expect(sameHost('http://a.com/x', 'http://b.a.com/x')).toBe(false);
  });
});

describe('robots.txt', () => {
  const robots = parseRobots(
    'https://example.com/robots.txt',
    'User-agent: *\nDisallow: /private/\nAllow: /private/open\n\nUser-agent: VoiceAgentPlatformBot\nDisallow: /no-bots\nAllow: /\n\nSitemap: https://example.com/s.xml\n',
  );

  it('applies the group for our agent, longest match first', () => {
    expect(robots.allowed('https://example.com/no-bots')).toBe(false);
    expect(robots.allowed('https://example.com/private/x')).toBe(true); // our group has no /private rule
    expect(robots.sitemaps).toEqual(['https://example.com/s.xml']);
  });

  it('applies the * group when there is none for us', () => {
    const generic = parseRobots('https://example.com/robots.txt', 'User-agent: *\nDisallow: /private/\nAllow: /private/open\n');
    expect(generic.allowed('https://example.com/private/x')).toBe(false);
    expect(generic.allowed('https://example.com/private/open')).toBe(true);
    expect(generic.allowed('https://example.com/public')).toBe(true);
  });
});

describe('page parsing', () => {
  it('extracts absolute, normalized links, honouring <base> and skipping nofollow', () => {
    const links = extractLinks(
      '<html><head><base href="/docs/"></head><body><a href="a#x">a</a><a href="/b?z=1&y=2">b</a><a rel="nofollow" href="/n">n</a><a href="mailto:x@y.z">m</a></body></html>',
      'https://example.com/index.html',
    );
    expect(links).toEqual(['https://example.com/docs/a', 'https://example.com/b?y=2&z=1']);
  });

  it('reads sitemaps and sitemap indexes', () => {
    expect(parseSitemap('<urlset><url><loc> https://e.com/a </loc></url><url><loc>https://e.com/b</loc></url></urlset>').pages).toEqual(['https://e.com/a', 'https://e.com/b']);
    expect(parseSitemap('<sitemapindex><sitemap><loc>https://e.com/s1.xml</loc></sitemap></sitemapindex>').sitemaps).toEqual(['https://e.com/s1.xml']);
  });
});
