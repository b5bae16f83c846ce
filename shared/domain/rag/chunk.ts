export interface ChunkOptions {
  /** Words per chunk at most. Default 180. */
  maxWords?: number;
  /** Words repeated from the end of one chunk at the start of the next. Default 40. */
  overlapWords?: number;
}

const words = (s: string) => s.split(/\s+/).filter(Boolean);

/** Sentences of a text (Intl.Segmenter, so abbreviations and decimals are not split). */
function sentences(text: string): string[] {
  const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
  const out: string[] = [];
  for (const paragraph of text.split(/\n\s*\n/)) {
    for (const { segment } of segmenter.segment(paragraph)) {
      const s = segment.replace(/\s+/g, ' ').trim();
      if (s) out.push(s);
    }
  }
  return out;
}

/**
 * Splits a text into overlapping chunks of whole sentences: a chunk grows sentence by sentence
 * up to `maxWords`; the next one starts with the last sentences of the previous one worth at
 * least `overlapWords` (so an answer that straddles a boundary is whole in one chunk). A
 * sentence longer than `maxWords` is cut into word windows with the same overlap.
 */
export function chunkText(text: string, options: ChunkOptions = {}): string[] {
  const maxWords = options.maxWords ?? 180;
  const overlapWords = Math.min(options.overlapWords ?? 40, Math.floor(maxWords / 2));
  const units: string[][] = [];
  for (const s of sentences(text)) {
    const w = words(s);
    if (w.length <= maxWords) units.push(w);
    else for (let i = 0; i < w.length; i += maxWords - overlapWords) units.push(w.slice(i, i + maxWords));
  }
  const chunks: string[] = [];
  let current: string[][] = [];
  let size = 0;
  for (const unit of units) {
    if (size + unit.length > maxWords && size > 0) {
      chunks.push(current.map((u) => u.join(' ')).join(' '));
      // Carry the last sentences into the next chunk as overlap, if the new one still fits.
      const carry: string[][] = [];
      let carried = 0;
      for (let i = current.length - 1; i > 0 && carried < overlapWords; i--) {
        carry.unshift(current[i]!);
        carried += current[i]!.length;
      }
      current = carried + unit.length <= maxWords ? carry : [];
      size = current === carry ? carried : 0;
    }
    current.push(unit);
    size += unit.length;
  }
  if (current.length) chunks.push(current.map((u) => u.join(' ')).join(' '));
  return chunks;
}
