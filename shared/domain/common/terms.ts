/**
 * Index terms from words, shared by the knowledge-base ranker (../rag/ranker.ts) and the local
 * model stand-in (shared/adapters/llm/local.ts), which must read words as the ranker does. It sits
 * in domain/common, below the adapters, so the stand-in need not reach up into the RAG domain.
 */

// Words too common to help ranking; BM25's IDF would weigh them low anyway, but dropping them
// keeps the index smaller and plain-language questions ("how do I …") focused.
const STOP_WORDS = new Set(
  'a an and are as at be but by can could do does did for from had has have how i if in into is it its me my of on or our so than that the their them then there these they this to was we were what when where which who why will with would you your'.split(' '),
);

/** Lower-cases, drops stop words and folds a few English inflections (plural, -ing, -ed). */
export function normalizeTerm(term: string): string | null {
  const t = term.toLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  if (!t || STOP_WORDS.has(t)) return null;
  if (t.length > 4 && t.endsWith('ies')) return `${t.slice(0, -3)}y`;
  if (t.length > 5 && t.endsWith('ing')) return t.slice(0, -3);
  if (t.length > 4 && t.endsWith('ed')) return t.slice(0, -2);
  if (t.length > 3 && t.endsWith('s') && !t.endsWith('ss')) return t.slice(0, -1);
  return t;
}
