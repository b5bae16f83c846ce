import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import type { Browser, LaunchOptions, PuppeteerNode } from 'puppeteer-core';

const ROOT = join(__dirname, '..', '..');

/**
 * puppeteer-core 25 is ES modules only, and jest's module loader cannot require ES modules on
 * Node 20 (nor reach Node's own require(esm): jest stands in for `node:module` too). Rather than
 * have the jest transform compile puppeteer and its ESM dependencies on every cache miss, esbuild
 * bundles it once into one CommonJS file (about 1 s), kept under .build/ per puppeteer version.
 */
function loadPuppeteer(): PuppeteerNode {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'puppeteer-core', 'package.json'), 'utf8')) as { version: string };
  const dir = join(ROOT, '.build', 'test');
  const file = join(dir, `puppeteer-core-${version}.cjs`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    // Written aside, then renamed: parallel test files may build at the same time.
    const partial = `${file}.${process.pid}.tmp`;
    buildSync({
      stdin: { contents: "module.exports = require('puppeteer-core');", resolveDir: ROOT, loader: 'js' },
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      outfile: partial,
      external: ['bufferutil', 'utf-8-validate'],
      logLevel: 'error',
    });
    renameSync(partial, file);
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(file) as { default: PuppeteerNode }).default;
}

let puppeteer: PuppeteerNode | undefined;

/**
 * Debian's chromium (`apt-get install chromium`; .ci/run installs it when missing): puppeteer's
 * own browser download does not work here. CHROMIUM_PATH overrides.
 */
export function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium';
  try {
    return String(execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'])).trim().split('\n')[0]!;
  } catch {
    throw new Error('No chromium found: install it (apt-get install -y --no-install-recommends chromium) or set CHROMIUM_PATH.');
  }
}

/**
 * A headless chromium for browser tests (the API reference page, the widget): a puppeteer
 * Browser. `--no-sandbox` because CI runs as root. Close it in `afterAll`: `await browser.close()`.
 */
export function launchBrowser(options: LaunchOptions = {}): Promise<Browser> {
  puppeteer ??= loadPuppeteer();
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    ...options,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage', ...(options.args ?? [])],
  });
}
