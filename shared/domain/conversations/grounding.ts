import type { LlmPassage } from '../../adapters/llm/port';

/**
 * The knowledge-base search (its index store, ranker and MiniSearch), imported by the first turn
 * that grounds: every conversation function reaches this module, and a turn of an agent without
 * a knowledge base never needs the ~25 KB of code behind it at start.
 */
const search = () => Promise.all([import('../rag/index-store'), import('../rag/query')]);

/** How many passages ground one user turn. */
export const GROUNDING_PASSAGES = 3;
/** Passages the ranker scores below this share of the best one are left out (noise, not grounding). */
const RELATIVE_FLOOR = 0.2;

/**
 * The knowledge-base passages that ground a user's words: the same ranking as `POST /rag/query`,
 * best first, each with the page it came from when it was a `url` document. A knowledge base that
 * is missing (deleted since the agent named it) or empty grounds nothing.
 */
export async function groundingPassages(orgId: string, kbId: string, query: string, topK = GROUNDING_PASSAGES): Promise<LlmPassage[]> {
  if (!kbId || !query.trim()) return [];
  return (await groundingSource(orgId, kbId))(query, topK);
}

/**
 * The grounding of one conversation that asks many questions (a simulated call's lines): the
 * knowledge base's index is read once (one GetItem, and its object only when this container does
 * not hold that version), then each question is ranked against it.
 */
export async function groundingSource(orgId: string, kbId: string): Promise<(query: string, topK?: number) => Promise<LlmPassage[]>> {
  if (!kbId) return async () => [];
  const [{ currentIndex }, { rankPassages }] = await search();
  const state = await currentIndex(orgId, kbId);
  if (!state || state.ranker.size() === 0) return async () => [];
  return async (query, topK = GROUNDING_PASSAGES) => {
    if (!query.trim()) return [];
    const passages = await rankPassages(orgId, kbId, state, query, topK);
    const best = passages[0]?.score ?? 0;
    return passages
      .filter((p) => p.score > 0 && p.score >= best * RELATIVE_FLOOR)
      .map((p) => ({ doc_id: p.doc_id, url: state.docs[p.doc_id]?.url ?? null, text: p.text, score: p.score }));
  };
}
