import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

export type ContentKind = 'html' | 'pdf' | 'markdown' | 'text';

export interface Extracted {
  title: string;
  text: string;
}

/** The kind of content behind a media type (and, failing that, a URL's extension). */
export function contentKind(contentType: string, url?: string): ContentKind | undefined {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/html' || type === 'application/xhtml+xml') return 'html';
  if (type === 'application/pdf') return 'pdf';
  if (type === 'text/markdown' || type === 'text/x-markdown') return 'markdown';
  if (type === 'text/plain') {
    if (url && /\.(md|markdown)$/i.test(new URL(url).pathname)) return 'markdown';
    return 'text';
  }
  if (!type || type === 'application/octet-stream') {
    const path = url ? new URL(url).pathname.toLowerCase() : '';
    if (path.endsWith('.pdf')) return 'pdf';
    if (/\.(md|markdown)$/.test(path)) return 'markdown';
    if (path.endsWith('.txt')) return 'text';
  }
  return undefined;
}

/** Collapses runs of spaces inside lines and of blank lines, keeping paragraph breaks. */
function tidy(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/[\t\f\v \u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * The readable text of an HTML page: Mozilla's Readability (the Firefox reader view) on a
 * linkedom DOM picks the main content and drops navigation and boilerplate; a page too small
 * for it falls back to the body's text without scripts and styles.
 */
export function extractHtml(html: string, url?: string): Extracted {
  const { document } = parseHTML(html);
  const fallbackTitle = document.querySelector('title')?.textContent?.trim() ?? '';
  // Block elements end a paragraph; without this their texts run together.
  for (const el of document.querySelectorAll('p, div, li, h1, h2, h3, h4, h5, h6, br, tr, section, article, blockquote, pre')) {
    el.after(document.createTextNode('\n'));
  }
  const article = (() => {
    try {
      return new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 100 }).parse();
    } catch {
      return null;
    }
  })();
  void url;
  if (article?.textContent && article.textContent.trim().length > 0) {
    return { title: article.title?.trim() || fallbackTitle, text: tidy(article.textContent) };
  }
  const { document: again } = parseHTML(html);
  for (const el of again.querySelectorAll('script, style, noscript, template, nav, header, footer')) el.remove();
  for (const el of again.querySelectorAll('p, div, li, h1, h2, h3, h4, h5, h6, br, tr')) el.after(again.createTextNode('\n'));
  return { title: fallbackTitle, text: tidy(again.body?.textContent ?? '') };
}

let pdfjsReady: Promise<void> | undefined;

/** The text of a PDF (unpdf: Mozilla's PDF.js packaged for servers). */
export async function extractPdf(bytes: Uint8Array): Promise<Extracted> {
  const { definePDFJSModule, extractText, getDocumentProxy } = await import('unpdf');
  // Named explicitly so bundlers (and jest) see the PDF.js module instead of unpdf's own lookup.
  pdfjsReady ??= definePDFJSModule(() => import('unpdf/pdfjs'));
  await pdfjsReady;
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  const { text } = await extractText(pdf, { mergePages: false });
  const pages = Array.isArray(text) ? text : [text];
  return { title: '', text: tidy(pages.join('\n\n')) };
}

/** The first Markdown heading, as a title. */
function markdownTitle(text: string): string {
  for (const line of text.split('\n')) {
    const m = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line.trim());
    if (m) return m[1]!;
  }
  return '';
}

/** Readable text of a document of any supported kind. */
export async function extractText(body: Buffer, kind: ContentKind, url?: string): Promise<Extracted> {
  switch (kind) {
    case 'html':
      return extractHtml(body.toString('utf8'), url);
    case 'pdf':
      return extractPdf(body);
    case 'markdown': {
      // Markdown is indexed as written: its markup is a few symbols the tokenizer drops.
      const text = tidy(body.toString('utf8'));
      return { title: markdownTitle(text), text };
    }
    case 'text':
      return { title: '', text: tidy(body.toString('utf8')) };
  }
}
