import { NotFoundError } from '../../errors';
import { currentIndex, type IndexState } from './index-store';
import { loadChunks } from './passages';
import type { Passage } from './schemas';

// Its own module so the query function's bundle holds the index and ranker, not the crawler or extractors.

/** The `topK` passages that best answer `query`, best first. */
export async function queryKnowledgeBase(orgId: string, input: { kb_id: string; query: string; top_k: number }) {
  const state = await currentIndex(orgId, input.kb_id);
  if (!state) throw new NotFoundError('Knowledge base', input.kb_id);
  return { kb_id: input.kb_id, query: input.query, passages: await rankPassages(orgId, input.kb_id, state, input.query, input.top_k) };
}

/** The `topK` passages of a loaded index that best answer `query`, best first (conversations ground their turns with it). */
export async function rankPassages(orgId: string, kbId: string, state: IndexState, query: string, topK: number): Promise<Passage[]> {
  const input = { kb_id: kbId, query, top_k: topK };
  const hits = state.ranker.search(input.query, input.top_k);
  const passages: Passage[] = [];
  const byDoc = await loadChunks(
    orgId,
    input.kb_id,
    [...new Set(hits.map((h) => h.doc_id))].flatMap((docId) => (state.docs[docId] ? [{ docId, generation: state.docs[docId]!.generation }] : [])),
  );
  for (const hit of hits) {
    const entry = state.docs[hit.doc_id];
    const text = byDoc.get(hit.doc_id)?.[hit.n];
    if (!entry || text === undefined) continue;
    passages.push({ doc_id: hit.doc_id, text, score: Math.round(hit.score * 1e4) / 1e4, metadata: entry.metadata, chunk_index: hit.n });
  }
  return passages;
}

