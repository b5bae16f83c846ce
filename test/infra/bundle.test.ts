import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bundleEntries, DEFAULT_EXTERNAL_AWS_SDK } from '../../lib/bundle';
import { ROOT_DIR } from '../../lib/stack';

// Inside the repository (and git-ignored), so the bundle resolves the external AWS SDK from
// node_modules the way the Lambda runtime resolves it from its own.
const outDir = path.join(ROOT_DIR, '.build', 'test-bundles');

describe('bundleEntries', () => {
  it('names every missing entry file and touches nothing', () => {
    mkdirSync(outDir, { recursive: true });
    const marker = path.join(outDir, 'marker');
    writeFileSync(marker, 'left from an earlier build');
    const missing = [
      { name: 'one', entry: 'functions/nope/one.ts' },
      { name: 'two', entry: 'test/infra/fixtures/handler.ts' },
      { name: 'three', entry: 'functions/nope/three.ts' },
    ];
    expect(() => bundleEntries(missing, { rootDir: ROOT_DIR, outDir })).toThrow(
      /2 entry file\(s\) do not exist:\n {2}- functions\/nope\/one\.ts \(function one\)\n {2}- functions\/nope\/three\.ts \(function three\)/,
    );
    expect(existsSync(marker)).toBe(true);
  });

  it('refuses two functions with one bundle name', () => {
    const entry = 'test/infra/fixtures/handler.ts';
    expect(() => bundleEntries([{ name: 'a', entry }, { name: 'a', entry }], { rootDir: ROOT_DIR, outDir })).toThrow(
      /share the bundle name "a"/,
    );
  });

  it('writes a runnable ESM bundle per entry, with a source map and the AWS SDK left out when asked', () => {
    const result = bundleEntries([{ name: 'fixture', entry: 'test/infra/fixtures/handler.ts' }], { rootDir: ROOT_DIR, outDir, externalAwsSdk: true });

    const file = path.join(outDir, 'fixture', 'index.mjs');
    expect(result.dirs.get('fixture')).toBe(path.dirname(file));
    expect(result.sizes.get('fixture')).toBeGreaterThan(0);
    const code = readFileSync(file, 'utf8');
    expect(code.startsWith("import { createRequire as __vapCreateRequire } from 'node:module';")).toBe(true);
    expect(code).toMatch(/from"@aws-sdk\/client-sqs"/);
    expect(code).toMatch(/\/\/# sourceMappingURL=index\.mjs\.map\s*$/);
    expect(existsSync(`${file}.map`)).toBe(true);

    const output = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', `const m = await import(${JSON.stringify(file)}); console.log(JSON.stringify(await m.handler()));`],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(output)).toEqual({ sdk: 'function', year: 2024 });
  });

  it('bundles the AWS SDK by default (DEFAULT_EXTERNAL_AWS_SDK: it loads faster, npm run bench (b))', () => {
    expect(DEFAULT_EXTERNAL_AWS_SDK).toBe(false);
    bundleEntries([{ name: 'fixture', entry: 'test/infra/fixtures/handler.ts' }], { rootDir: ROOT_DIR, outDir });
    const file = path.join(outDir, 'fixture', 'index.mjs');
    expect(readFileSync(file, 'utf8')).not.toMatch(/from"@aws-sdk\//);
    // It runs from a directory with no node_modules above it, as on Lambda with no SDK of the runtime's.
    const isolated = mkdtempSync(path.join(tmpdir(), 'vap-bundle-'));
    copyFileSync(file, path.join(isolated, 'index.mjs'));
    const output = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', `const m = await import(${JSON.stringify(path.join(isolated, 'index.mjs'))}); console.log(JSON.stringify(await m.handler()));`],
      { encoding: 'utf8', env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
    );
    expect(JSON.parse(output)).toEqual({ sdk: 'function', year: 2024 });
  });
});
