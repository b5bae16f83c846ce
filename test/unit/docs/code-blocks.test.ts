/**
 * Issue 36.4: the Node example of the OpenAI-compatible endpoint used `import` and top-level
 * `await`, which Node refuses in a plain `.js` file (CommonJS). Every ```js block of README.md,
 * client/README.md and docs/*.md parses as the file it says it is: the name in its first-line
 * comment (`// chat.mjs: …`), else `example.js` — checked by Node itself (`node --check`) in a
 * project as `npm init -y` makes it (`"type": "commonjs"`), where a `.js` file is never an ES module.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '../../..');
const documents = ['README.md', 'client/README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const blocks = documents.flatMap((doc) =>
  [...readFileSync(join(root, doc), 'utf8').matchAll(/^```(?:js|javascript)\n([\s\S]*?)^```$/gm)].map((m, i) => {
    const named = /^\/\/ ([\w.-]+\.(?:c|m)?js)\b/.exec(m[1]!)?.[1];
    return { where: `${doc} (js block ${i + 1})`, file: named ?? 'example.js', code: m[1]! };
  }),
);

it('finds the JavaScript examples', () => {
  expect(blocks.length).toBeGreaterThan(0);
});

it.each(blocks.map((b) => [b.where, b]))('%s parses as the file it names', (_where, block) => {
  const dir = mkdtempSync(join(tmpdir(), 'doc-js-'));
  try {
    const file = join(dir, block.file);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'try-it', version: '1.0.0', type: 'commonjs' }));
    writeFileSync(file, block.code);
    let refused = '';
    try {
      execFileSync(process.execPath, ['--check', file], { stdio: 'pipe' });
    } catch (err) {
      refused = String((err as { stderr?: Buffer }).stderr ?? err).split('\n').find((l) => /Error/.test(l)) ?? 'refused';
    }
    expect({ file: block.file, refused }).toEqual({ file: block.file, refused: '' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
