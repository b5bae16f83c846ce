/**
 * Issue 36.4: README's settings table sent readers to sections that did not exist ("Voice with any
 * language model", "The voice runtime"). Every cross-reference of the form `<file>.md, "<Section>"`
 * in README.md, client/README.md and docs/*.md names a section of that file: a heading (its text,
 * or its text after a "(b) "-style label) or a bold paragraph label (`**Section.**`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const documents = ['README.md', 'client/README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The names a file's sections go by. */
function sectionsOf(file: string): Set<string> {
  const text = read(file);
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const heading = /^#{1,6} (.+)$/.exec(line);
    if (heading) {
      names.add(squash(heading[1]));
      names.add(squash(heading[1].replace(/^\([^)]*\) /, '')));
    }
  }
  for (const m of text.matchAll(/\*\*([^*]+?)\.?\*\*/g)) names.add(squash(m[1]));
  return names;
}

/** Every `<file>.md, "<Section>"` of the documents: where it is, the file it names, the section. */
function references(): { from: string; file: string; section: string }[] {
  return documents.flatMap((from) =>
    [...read(from).matchAll(/((?:docs\/|client\/)?[\w.-]+\.md),?\s+"([^"]+)"/g)].map((m) => {
      const named = m[1]!;
      const file = named.includes('/') || named === 'README.md' ? named : `docs/${named}`;
      return { from, file, section: squash(m[2]!) };
    }),
  );
}

it('finds the cross-references it checks', () => {
  expect(references().length).toBeGreaterThan(20);
});

it('names only sections that exist', () => {
  const sections = new Map<string, Set<string>>();
  const missing = references()
    .filter(({ file, section }) => {
      if (!sections.has(file)) sections.set(file, sectionsOf(file));
      return !sections.get(file)!.has(section);
    })
    .map(({ from, file, section }) => `${from} names ${file}, "${section}"`);
  expect(missing).toEqual([]);
});
