import robotsParser from 'robots-parser';
import { EgressRefusedError, safeFetch, USER_AGENT, type SafeFetchOptions } from '../egress';

/** The crawler's product token, matched against robots.txt `User-agent` lines. */
export const ROBOTS_AGENT = 'VoiceAgentPlatformBot';

export interface RobotsRules {
  allowed(url: string): boolean;
  /** Sitemaps robots.txt lists. */
  sitemaps: string[];
}

/**
 * Reads robots.txt as RFC 9309 says: 2xx is parsed, 4xx means no rules (everything allowed),
 * 5xx or an unreachable server means everything is disallowed. robots-parser does the parsing
 * and matching (wildcards, `$`, longest-match precedence, agent groups).
 */
export async function loadRobots(origin: string, fetchOptions: SafeFetchOptions = {}): Promise<RobotsRules> {
  const robotsUrl = new URL('/robots.txt', origin).toString();
  try {
    const res = await safeFetch(robotsUrl, { ...fetchOptions, maxBytes: 500 * 1024, accept: 'text/plain' });
    if (res.status >= 200 && res.status < 300) return parseRobots(robotsUrl, res.body.toString('utf8'));
    if (res.status >= 400 && res.status < 500) return { allowed: () => true, sitemaps: [] };
  } catch (err) {
    if (err instanceof EgressRefusedError) throw err;
  }
  return { allowed: () => false, sitemaps: [] };
}

/** Rules from the text of a robots.txt served at `robotsUrl`. */
export function parseRobots(robotsUrl: string, text: string): RobotsRules {
  const robots = robotsParser(robotsUrl, text);
  return {
    // `undefined` means the URL is not covered by this robots.txt (another host): not ours to judge.
    allowed: (url) => robots.isAllowed(url, ROBOTS_AGENT) ?? robots.isAllowed(url, USER_AGENT) ?? true,
    sitemaps: robots.getSitemaps(),
  };
}
