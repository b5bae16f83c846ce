import { getObject } from '../../adapters/kb-objects';
import { objectKeys } from './object-keys';

/**
 * Chunk texts live beside each document (`…/docs/<doc>/<generation>/chunks.json`), not in the
 * index, so the index a query loads holds only terms and postings. A query reads the chunk
 * files of the documents it hits (at most `top_k`, in parallel); a generation never changes,
 * so they are cached without invalidation.
 */
const MAX_CACHED = 500;
const cache = new Map<string, string[]>();

export async function loadChunks(orgId: string, kbId: string, docs: { docId: string; generation: string }[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  await Promise.all(
    docs.map(async ({ docId, generation }) => {
      const key = objectKeys.chunks(orgId, kbId, docId, generation);
      let chunks = cache.get(key);
      if (!chunks) {
        const object = await getObject(key);
        if (!object) return;
        chunks = JSON.parse(object.body.toString('utf8')) as string[];
        cache.set(key, chunks);
        if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value!);
      }
      out.set(docId, chunks);
    }),
  );
  return out;
}
