/**
 * Every ```bash example of README.md that talks to the API runs as written, in order, in one
 * bash shell (as a reader pastes them), against the local platform on a port that is not the
 * default 3000: the only changes are the platform's address in the one line that sets `BASE_URL`
 * (every example takes the address from it) and its key for the line that reads the key `npm start`
 * printed. Every command must succeed (`set -euo pipefail`), and every curl fails on an error
 * answer (`--fail-with-body`), so an example that answers 4xx or 5xx fails the test. The blocks
 * that do not talk to the API (`npm install && npm start`, `npm test`, the admin command, `cdk
 * deploy`) are tooling and are not run here; they are checked to be nothing else.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBash } from '../support/bash';
import { usePlatform } from '../support/platform';

const root = join(__dirname, '../..');
const local = usePlatform({ demo: true, voice: false });

/** The ```bash blocks of a Markdown file, in order. */
function bashBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

const KEY_LINE = /^KEY=\$\(cat \.data\/local-api-key\).*$/m;
const BASE_URL_LINE = /^export BASE_URL=http:\/\/localhost:3000 .*$/m;

describe('README.md', () => {
  const blocks = bashBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
  const api = blocks.filter((b) => b.includes('$BASE_URL'));

  it('has API examples, and its other bash blocks are only npm/npx tooling', () => {
    expect(api.length).toBeGreaterThanOrEqual(5);
    const tooling = blocks.filter((b) => !api.includes(b));
    for (const block of tooling) {
      const commands = block.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
      expect(commands.filter((c) => !/^(npm|npx) /.test(c))).toEqual([]);
    }
    expect(api.join('\n').match(new RegExp(KEY_LINE.source, 'gm'))).toHaveLength(1);
  });

  it('takes the address from BASE_URL, set once in the first example', () => {
    const all = api.join('\n');
    expect(all.match(new RegExp(BASE_URL_LINE.source, 'gm'))).toHaveLength(1);
    expect(api[0]).toMatch(BASE_URL_LINE);
    // No other address of the API: the examples run on any port.
    expect(all.replace(BASE_URL_LINE, '').match(/localhost:\d+|127\.0\.0\.1:3000/g)).toBeNull();
  });

  it('runs every API example as written, in order, in one shell', async () => {
    const { url, key, platform } = local();
    expect(platform.port).not.toBe(3000);
    const script = [
      'set -euo pipefail',
      // Every curl of the examples fails on a 4xx or 5xx answer (and still prints it).
      'curl() { command curl --fail-with-body "$@"; }',
      ...api.map((block, i) => `echo "--- README example ${i + 1}" >&2\n${block.replace(KEY_LINE, `KEY='${key}'`).replace(BASE_URL_LINE, `export BASE_URL=${url}`)}`),
      'echo "--- all examples ran" >&2',
    ].join('\n');
    const cwd = mkdtempSync(join(tmpdir(), 'readme-examples-'));
    try {
      const result = await runBash(script, cwd, 90_000);
      if (process.env.VAP_TEST_LOG) console.error(result.stdout, result.stderr);
      const report = `exit ${result.code}\n--- stderr\n${result.stderr.slice(-4000)}\n--- stdout\n${result.stdout.slice(-4000)}`;
      expect([result.code, report]).toEqual([0, expect.stringContaining('--- all examples ran')]);
      // What the README says the examples show.
      expect(result.stdout).toContain('"status":"ok"'); // the health answer, as curl prints it
      expect(result.stdout).toMatch(/this is a reminder of your visit tomorrow/); // the call's transcript
      expect(result.stdout).toMatch(/received \S+ \{"id":"[^"]+","type":"ping"/); // the receiver got the signed ping
      expect(result.stdout).toMatch(/10 am/); // the chat's answer quotes the knowledge base
      expect(result.stdout).toContain('"end_reason": "agent_ended"'); // the agent ended the chat
      expect(result.stdout).toMatch(/"passed": 2,\s*"failed": 0/); // the agent's test passed twice
      expect(result.stdout).toContain('"reply_contains: passed"'); // and its verdicts
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});
