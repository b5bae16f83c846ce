import { randomUUID } from 'node:crypto';
import { pause } from '../../db/retry';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, transact, updateExisting } from '../../db/store';
import { ConflictError } from '../../errors';
import { logger } from '../../logger';
import { deleteObjects, getObject, putObject } from '../../adapters/kb-objects';
import { objectKeys } from './object-keys';
import { loadRanker, newRanker, type Ranker } from './ranker';

/**
 * The search index of a knowledge base: one serialized object per version in S3, the current
 * version and its object's key on the knowledge-base item. Writers (the ingest worker, document
 * deletion) read the current version, change a private copy of it, write the next version under
 * a key of their own (`orgs/<org>/kb/<kb>/index/<version>-<writer>.json`) and move the pointer
 * with a conditional update, so two writers never lose each other's changes (the loser deletes
 * its own object, reloads and applies its change again). Two writers racing for the same version
 * once wrote the same key: the loser overwrote the winner's object and then deleted it, so every
 * container that loaded the index afresh (a cold start, or one whose cache had moved on to other
 * knowledge bases) grounded on a wrong index or none. Readers load a version once per container
 * and keep it in memory until the pointer moves: a query costs one GetItem plus, only when the
 * index changed, one object read. A cached index is never changed in place (a reader may be
 * ranking with it). A function's cold start holds no index.
 */

/** What the index knows of one document. */
export interface IndexedDoc {
  /** The ingestion whose chunks are in the index. */
  generation: string;
  chunk_count: number;
  title: string;
  metadata: Record<string, unknown>;
  /** The page a `url` document came from (conversations cite it as a source); absent in indexes built before it was kept. */
  url?: string | null;
}

export interface IndexState {
  version: number;
  /** The object this version was loaded from or written to (undefined: the empty version 0). */
  objectKey?: string;
  ranker: Ranker;
  docs: Record<string, IndexedDoc>;
}

interface StoredIndex {
  format: 1;
  ranker: string;
  version: number;
  docs: Record<string, IndexedDoc>;
  index: string;
}

/** Passage ids in the index: `<doc_id>#<n>`. */
export const chunkId = (docId: string, n: number) => `${docId}#${n}`;
export const chunkIdsOf = (docId: string, entry: IndexedDoc) => Array.from({ length: entry.chunk_count }, (_, n) => chunkId(docId, n));

/** The knowledge-base item fields the index uses. */
interface KbIndexPointer {
  index_version?: number;
  /** The current version's object (absent on items written before each writer had its own key). */
  index_key?: string;
}

/** The object of the pointer's version. */
const objectOf = (orgId: string, kbId: string, kb: KbIndexPointer) => kb.index_key ?? objectKeys.index(orgId, kbId, kb.index_version ?? 0);

const MAX_CACHED = 8;
const cache = new Map<string, IndexState>();
const cacheKey = (orgId: string, kbId: string) => `${orgId}/${kbId}`;

function remember(key: string, state: IndexState): void {
  cache.delete(key);
  cache.set(key, state);
  while (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value!);
}

/** Forgets a cached index (its knowledge base was deleted, or tests). */
export function forgetIndex(orgId?: string, kbId?: string): void {
  if (orgId && kbId) cache.delete(cacheKey(orgId, kbId));
  else cache.clear();
}

export class IndexObjectMissing extends Error {}

/** The index the pointer names (version 0: the empty index), from memory when this container has it. */
export async function loadIndex(orgId: string, kbId: string, pointer: KbIndexPointer): Promise<IndexState> {
  const version = pointer.index_version ?? 0;
  const key = cacheKey(orgId, kbId);
  const objectKey = objectOf(orgId, kbId, pointer);
  const cached = cache.get(key);
  if (cached && cached.version === version && cached.objectKey === objectKey) return cached;
  if (version === 0) return { version: 0, ranker: newRanker(), docs: {} };
  const object = await getObject(objectKey);
  if (!object) throw new IndexObjectMissing(`index version ${version} of knowledge base ${kbId} is missing`);
  const stored = JSON.parse(object.body.toString('utf8')) as StoredIndex;
  const state: IndexState = { version, objectKey, ranker: loadRanker(stored.ranker, stored.index), docs: stored.docs };
  remember(key, state);
  return state;
}

/** A private copy of an index, to change without touching the one readers may hold. */
function copyOf(state: IndexState): IndexState {
  return { version: state.version, ...(state.objectKey ? { objectKey: state.objectKey } : {}), ranker: loadRanker(state.ranker.kind, state.ranker.serialize()), docs: structuredClone(state.docs) };
}

/** The current index of a knowledge base; undefined when the knowledge base does not exist. */
export async function currentIndex(orgId: string, kbId: string): Promise<IndexState | undefined> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const kb = await getItem<KbIndexPointer>(keys.knowledgeBase(orgId, kbId));
    if (!kb) return undefined;
    try {
      return await loadIndex(orgId, kbId, kb);
    } catch (err) {
      // A writer replaced this version between our two reads: read the pointer again.
      if (!(err instanceof IndexObjectMissing)) throw err;
    }
  }
  throw new ConflictError('The knowledge base index is changing quickly; retry', { kb_id: kbId });
}


/**
 * Applies `change` to the current index and publishes it as the next version. `change` returns
 * false when there is nothing to do (no new version is written). Returns undefined when the
 * knowledge base no longer exists.
 */
export async function updateIndex(orgId: string, kbId: string, change: (state: IndexState) => boolean): Promise<IndexState | undefined> {
  const key = cacheKey(orgId, kbId);
  const kbKey = keys.knowledgeBase(orgId, kbId);
  for (let attempt = 0; attempt < 20; attempt++) {
    const kb = await getItem<KbIndexPointer>(kbKey);
    if (!kb) return undefined;
    const version = kb.index_version ?? 0;
    let current: IndexState;
    try {
      current = await loadIndex(orgId, kbId, kb);
    } catch (err) {
      if (err instanceof IndexObjectMissing) continue;
      throw err;
    }
    const state = version === 0 ? current : copyOf(current);
    if (!change(state)) return current;
    const next = version + 1;
    // A key of this writer's own: a writer that loses the race below never touches the winner's object.
    const nextKey = objectKeys.indexObject(orgId, kbId, next, randomUUID());
    const stored: StoredIndex = { format: 1, ranker: state.ranker.kind, version: next, docs: state.docs, index: state.ranker.serialize() };
    await putObject(nextKey, JSON.stringify(stored), 'application/json');
    try {
      await transact([
        updateExisting(
          kbKey,
          { index_version: next, index_key: nextKey, index_chunks: state.ranker.size() },
          version === 0
            ? { condition: 'attribute_not_exists(#iv) OR #iv = :zero', names: { '#iv': 'index_version' } }
            : { condition: '#iv = :iv', names: { '#iv': 'index_version' }, values: { ':iv': version } },
        ),
      ]);
    } catch (err) {
      await deleteObjects([nextKey]).catch(() => undefined);
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt, 500, 20);
      continue;
    }
    state.version = next;
    state.objectKey = nextKey;
    remember(key, state);
    // The previous version is no longer current; a reader still loading it reads the pointer again.
    if (version > 0) {
      await deleteObjects([objectOf(orgId, kbId, kb)]).catch((e: Error) =>
        logger.warn('could not delete an old index version', { kb_id: kbId, version, error: e.message }),
      );
    }
    return state;
  }
  throw new ConflictError('The knowledge base index is being changed by other writers; retry', { kb_id: kbId });
}
