/**
 * The client package as a user gets it: built once with its own tsconfig (ESM + declarations),
 * imported by plain Node through its package name and `exports`, and every ```ts example of
 * client/README.md run as written (as an .mts file, with tsx) against the local runtime and
 * type-checked under strict settings against the built declarations.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { usePlatform } from '../support/platform';

const run = promisify(execFile);
const root = join(__dirname, '../..');
const client = join(root, 'client');
const local = usePlatform({ env: { SIMULATED_CALL_SECONDS: '1' } });

/** The ```ts blocks of a Markdown file, in order. */
function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

beforeAll(async () => {
  rmSync(join(client, 'dist'), { recursive: true, force: true });
  await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(client, 'tsconfig.build.json')], { cwd: root });
}, 120_000);

describe('the client package', () => {
  it('is publishable as is: ESM with declarations, exports, files, license, engines, no side effects', () => {
    const pkg = JSON.parse(readFileSync(join(client, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({
      name: '@voice-agent-platform/client',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      type: 'module',
      license: expect.any(String),
      sideEffects: false,
      engines: { node: expect.any(String) },
      types: './dist/index.d.ts',
      exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      files: expect.arrayContaining(['dist']),
    });
    expect(pkg.private).toBeUndefined();
    for (const file of ['index.js', 'index.d.ts', 'schema.d.ts', 'errors.js', 'retry.js', 'webhooks.js']) expect(existsSync(join(client, 'dist', file))).toBe(true);
  });

  it('builds to a dist/index.js that plain Node imports by the package name', async () => {
    const script = "const m = await import('@voice-agent-platform/client'); console.log(JSON.stringify(Object.keys(m).sort()))";
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual(expect.arrayContaining(['ApiError', 'WebhookVerificationError', 'createClient', 'verifyWebhook']));
  });

  it('runs every example of its README as written against the local runtime, and they compile under strict TypeScript', async () => {
    const blocks = tsBlocks(readFileSync(join(client, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    // Inside the repository, so `@voice-agent-platform/client` resolves as it would for a user.
    const dir = join(root, '.tmp', `client-readme-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      blocks.forEach((code, i) => writeFileSync(join(dir, `example-${i + 1}.mts`), code));
      // tsx only strips types: a type check (against the built declarations) runs beside the examples.
      const compilerOptions = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023'], types: ['node'], strict: true, noEmit: true };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.mts'] }));
      const typecheck = run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: root })
        .then(() => 'ok', (error: { stdout?: string; message: string }) => error.stdout || error.message);
      for (const i of blocks.keys()) {
        const file = join(dir, `example-${i + 1}.mts`);
        const result = await run(join(root, 'node_modules/.bin/tsx'), [file], {
          cwd: root,
          env: { ...process.env, API_URL: local().url, API_KEY: local().key },
          timeout: 60_000,
        }).catch((error: { stderr?: string; message: string }) => ({ failed: `${error.message}\n${error.stderr ?? ''}` }));
        expect([`example ${i + 1}`, 'failed' in result ? result.failed : 'ok']).toEqual([`example ${i + 1}`, 'ok']);
      }
      expect(await typecheck).toBe('ok');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
