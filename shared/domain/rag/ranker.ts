import MiniSearch from 'minisearch';
import { normalizeTerm } from '../common/terms';

/** One indexed passage. */
export interface ChunkRecord {
  /** Unique in the index: `<doc_id>#<n>`. */
  id: string;
  doc_id: string;
  n: number;
  title: string;
  text: string;
}

export interface RankedHit {
  id: string;
  doc_id: string;
  n: number;
  score: number;
}

/**
 * What ranks passages for a query. BM25 is the one implementation today; an embedding or
 * hybrid ranker implements the same four operations (and its own serialization) and is picked
 * by `kind` when an index is loaded, so stored indexes say which ranker built them.
 */
export interface Ranker {
  readonly kind: string;
  add(chunks: ChunkRecord[]): void;
  /** Removes passages by id. */
  remove(ids: string[]): void;
  search(query: string, topK: number): RankedHit[];
  size(): number;
  /** JSON text that `loadRanker` turns back into an equal ranker. */
  serialize(): string;
}

// normalizeTerm lives in ../common/terms.ts: the local model stand-in (an adapter) reads words the same way.

const MINISEARCH_OPTIONS = {
  fields: ['title', 'text'],
  storeFields: ['doc_id', 'n'],
  processTerm: normalizeTerm,
  searchOptions: {
    boost: { title: 1.5 },
    // Prefix matches for longer terms ("refund" finds "refundable") at a lower weight.
    prefix: (term: string) => term.length > 4,
    weights: { fuzzy: 0.2, prefix: 0.3 },
    combineWith: 'OR' as const,
  },
  autoVacuum: true,
};

/** BM25 (MiniSearch's BM25+ scoring, k1 1.2, b 0.7) over passage title and text. */
export class Bm25Ranker implements Ranker {
  readonly kind = 'bm25';
  private constructor(private readonly index: MiniSearch<ChunkRecord>) {}

  static empty(): Bm25Ranker {
    return new Bm25Ranker(new MiniSearch<ChunkRecord>(MINISEARCH_OPTIONS));
  }

  static load(json: string): Bm25Ranker {
    return new Bm25Ranker(MiniSearch.loadJSON<ChunkRecord>(json, MINISEARCH_OPTIONS));
  }

  add(chunks: ChunkRecord[]): void {
    this.index.addAll(chunks);
  }

  remove(ids: string[]): void {
    for (const id of ids) if (this.index.has(id)) this.index.discard(id);
  }

  search(query: string, topK: number): RankedHit[] {
    return this.index
      .search(query)
      .slice(0, topK)
      .map((r) => ({ id: String(r.id), doc_id: r.doc_id as string, n: r.n as number, score: r.score }));
  }

  size(): number {
    return this.index.documentCount;
  }

  serialize(): string {
    return JSON.stringify(this.index);
  }
}

/** Rankers by kind, for loading a stored index. */
export function loadRanker(kind: string, json: string): Ranker {
  if (kind === 'bm25') return Bm25Ranker.load(json);
  throw new Error(`Unknown ranker kind "${kind}"`);
}

/** The ranker new indexes are built with. */
export function newRanker(): Ranker {
  return Bm25Ranker.empty();
}
