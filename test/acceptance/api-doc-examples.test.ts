/**
 * The worked examples of docs/api.md that talk to the API run as written against the local
 * platform, after README's setup block (BASE_URL, the key, `H` and `json`), in one bash shell:
 * every curl fails on an error answer (`--fail-with-body`), so an example that answers 4xx or 5xx
 * fails the test. (README's own examples: readme-examples.test.ts.)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBash } from '../support/bash';
import { usePlatform } from '../support/platform';

const root = join(__dirname, '../..');
const local = usePlatform({ voice: false });

/** The first ```bash block after `heading` in a Markdown file. */
function bashBlockAfter(markdown: string, heading: string): string {
  const at = markdown.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`no heading ${heading}`);
  const block = /^```bash\n([\s\S]*?)^```$/m.exec(markdown.slice(at));
  if (!block) throw new Error(`no bash block after ${heading}`);
  return block[1]!;
}

/** README's setup: everything of its first API example before its first request. */
function readmeSetup(url: string, key: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const first = [...readme.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).find((b) => b.includes('$BASE_URL'))!;
  const setup = first.slice(0, first.indexOf('\ncurl '));
  expect(setup).toMatch(/^json\(\) \{/m);
  return setup
    .replace(/^export BASE_URL=http:\/\/localhost:3000 .*$/m, `export BASE_URL=${url}`)
    .replace(/^KEY=\$\(cat \.data\/local-api-key\).*$/m, `KEY='${key}'`);
}

/** Runs the bash block after `heading` of docs/api.md as written after README's setup; fails on a non-zero exit; answers its stdout. */
async function runExample(heading: string): Promise<string> {
  const { url, key } = local();
  const example = bashBlockAfter(readFileSync(join(root, 'docs/api.md'), 'utf8'), heading);
  const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body "$@"; }', readmeSetup(url, key), example, 'echo "--- ran" >&2'].join('\n');
  const cwd = mkdtempSync(join(tmpdir(), 'api-doc-examples-'));
  try {
    const result = await runBash(script, cwd, 60_000);
    const report = `exit ${result.code}\n--- stderr\n${result.stderr.slice(-4000)}\n--- stdout\n${result.stdout.slice(-4000)}`;
    expect([result.code, report]).toEqual([0, expect.stringContaining('--- ran')]);
    return result.stdout;
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe('docs/api.md', () => {
  it('runs the worked example of "Versions and tests" as written: the suite passes and its run is published', async () => {
    const out = await runExample('### Worked example');
    // What the example's comments say it shows.
    expect(out).toMatch(/"total": 3,\s*"passed": 3,\s*"failed": 0,\s*"errored": 0,\s*"not_evaluated": 3/);
    const lines = out.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^[0-9a-f-]{36}$/); // the published version's test_run_id
  }, 90_000);

  it('runs "Try a traffic split locally" as written: one contact meets one version three times; promoting ends the split', async () => {
    const out = await runExample('#### Try a traffic split locally');
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/^[0-9a-f-]{36}$/); // the split's id
    const versions = lines.slice(1, 4);
    expect(new Set(versions).size).toBe(1);
    expect(['1', '2']).toContain(versions[0]);
    expect(out).toMatch(/"1: 0",\s*"2: 0"/);
    expect(out).toMatch(/\[\s*2,\s*null\s*\]\s*$/);
  }, 90_000);

  it('runs "Try concurrency limits locally" as written: one slot, a 429, a waiting call at position 1, a number set to queue its overflow', async () => {
    const out = await runExample('#### Try concurrency limits locally');
    const lines = out.trim().split('\n');
    expect(lines[0]).toBe('1');
    expect(lines[1]).toBe('queued');
    // The 429's line goes to stderr (json exits 1 on an error answer): the next line is the waiting call's position.
    expect(lines[2]).toBe('1');
    expect(out).toMatch(/\[\s*1,\s*1\s*\]/);
    expect(out).toMatch(/\[\s*"queue",\s*90\s*\]/);
    expect(Number(lines.at(-1))).toBeGreaterThan(1);
  }, 90_000);

  it('runs "Try a hand-off locally" as written: the local model hands the chat to billing, whose id is on the replies from then on', async () => {
    const { url, key } = local();
    const example = bashBlockAfter(readFileSync(join(root, 'docs/api.md'), 'utf8'), '#### Try a hand-off locally');
    const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body "$@"; }', readmeSetup(url, key), example, 'echo "BILLING=$BILLING DESK=$DESK CHAT=$CHAT"', 'echo "--- ran" >&2'].join('\n');
    const cwd = mkdtempSync(join(tmpdir(), 'api-doc-examples-'));
    try {
      const result = await runBash(script, cwd, 60_000);
      const report = `exit ${result.code}\n--- stderr\n${result.stderr.slice(-4000)}\n--- stdout\n${result.stdout.slice(-4000)}`;
      expect([result.code, report]).toEqual([0, expect.stringContaining('--- ran')]);
      const ids = Object.fromEntries([...result.stdout.matchAll(/(BILLING|DESK|CHAT)=([0-9a-f-]{36})/g)].map((m) => [m[1], m[2]]));
      expect(Object.keys(ids).sort()).toEqual(['BILLING', 'CHAT', 'DESK']);
      // What the example's comments say each request shows.
      const out = result.stdout;
      expect(out.split('\n')[0]).toBe(ids.DESK);
      expect(out).toContain(JSON.stringify(['user -', 'tool_call -', 'tool_result -', `agent ${ids.BILLING}`], null, 2));
      expect(out).toContain(JSON.stringify([`${ids.DESK} -`, `${ids.BILLING} an invoice question`], null, 2));
      expect(out).toContain(`\n${ids.CHAT}\n`);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 90_000);
});
