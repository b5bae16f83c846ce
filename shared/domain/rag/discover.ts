import { EgressRefusedError, FetchFailedError } from '../../adapters/egress';
import { discoverUrls as crawl } from '../../adapters/crawler/discover';
import { UnprocessableError, ValidationError } from '../../errors';

// Its own module so that only the discover function bundles the crawler and its HTML parser.

/** Crawls a site for its URLs; a refused or unreachable root is a 400 naming `url`. */
export async function discover(input: { url: string; max_depth: number; limit: number }): Promise<{ urls: string[]; total: number }> {
  try {
    const result = await crawl(input.url, { maxDepth: input.max_depth, limit: input.limit });
    return { urls: result.urls, total: result.total };
  } catch (err) {
    if (err instanceof EgressRefusedError) {
      throw new ValidationError(`url: ${err.reason}`, [{ path: 'url', message: `is refused: ${err.reason}` }], { url: input.url });
    }
    if (err instanceof FetchFailedError) throw new UnprocessableError(`url: ${err.message}`, { url: input.url });
    throw err;
  }
}

