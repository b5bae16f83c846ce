import { chunkText } from '../../../shared/domain/rag/chunk';
import { contentKind, extractHtml } from '../../../shared/domain/rag/extract';
import { Bm25Ranker, loadRanker } from '../../../shared/domain/rag/ranker';

const sentence = (i: number) => `Sentence ${i} talks about topic ${i} in exactly ten words.`;

describe('chunkText', () => {
  it('keeps short texts whole', () => {
    expect(chunkText('One sentence. Two sentences.')).toEqual(['One sentence. Two sentences.']);
  });

  it('cuts at sentence boundaries within the size, with overlap between neighbours', () => {
    const text = Array.from({ length: 20 }, (_, i) => sentence(i)).join(' ');
    const chunks = chunkText(text, { maxWords: 40, overlapWords: 10 });
    expect(chunks.length).toBeGreaterThan(4);
    for (const c of chunks) expect(c.split(' ').length).toBeLessThanOrEqual(40);
    for (let i = 1; i < chunks.length; i++) {
      const lastOfPrevious = chunks[i - 1]!.split('. ').pop()!;
      expect(chunks[i]!.startsWith(lastOfPrevious.replace(/\.$/, ''))).toBe(true);
    }
    // Every sentence is in some chunk.
    for (let i = 0; i < 20; i++) expect(chunks.some((c) => c.includes(`Sentence ${i} `))).toBe(true);
  });

  it('splits a sentence longer than a chunk into overlapping windows', () => {
    const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    const chunks = chunkText(long, { maxWords: 30, overlapWords: 5 });
    expect(chunks[0]!.split(' ')).toHaveLength(30);
    expect(chunks[1]!.startsWith('w25 ')).toBe(true);
  });
});

describe('extraction', () => {
  it('keeps the main text of an HTML page and drops scripts and navigation', () => {
    const { title, text } = extractHtml(
      '<html><head><title>Returns</title><script>var secret = 1</script></head><body><nav><a href="/">Home</a> <a href="/x">Menu</a></nav>' +
        '<article><h1>Returns</h1><p>Items can be returned within 30 days of delivery for a full refund.</p><p>Use the prepaid label in the box.</p></article><footer>Copyright</footer></body></html>',
    );
    expect(title).toBe('Returns');
    expect(text).toContain('Items can be returned within 30 days');
    expect(text).toContain('prepaid label');
    expect(text).not.toContain('secret');
  });

  it('knows content kinds by media type and extension', () => {
    expect(contentKind('text/html; charset=utf-8')).toBe('html');
    expect(contentKind('application/pdf')).toBe('pdf');
    expect(contentKind('text/plain', 'https://e.com/readme.md')).toBe('markdown');
    expect(contentKind('application/octet-stream', 'https://e.com/a.pdf')).toBe('pdf');
    expect(contentKind('image/png')).toBeUndefined();
  });
});

describe('Bm25Ranker', () => {
  const chunk = (id: string, text: string) => ({ id: `${id}#0`, doc_id: id, n: 0, title: '', text });

  it('ranks by BM25, survives serialization and forgets removed passages', () => {
    const ranker = Bm25Ranker.empty();
    ranker.add([chunk('refunds', 'Refunds are paid within five days.'), chunk('shipping', 'Shipping takes three days.'), chunk('hours', 'We open at nine.')]);
    expect(ranker.search('when are my refunds paid', 3)[0]!.doc_id).toBe('refunds');
    const copy = loadRanker('bm25', ranker.serialize());
    expect(copy.search('shipping days', 1)[0]!.doc_id).toBe('shipping');
    copy.remove(['shipping#0']);
    expect(copy.search('shipping', 3).map((h) => h.doc_id)).not.toContain('shipping');
    expect(copy.size()).toBe(2);
  });
});
