import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bundleEntries, DEFAULT_EXTERNAL_AWS_SDK } from '../../lib/bundle';
import { ROOT_DIR } from '../../lib/stack';
import { fallbackEntry, operations } from '../../shared/http/registry';

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
    expect(JSON.parse(runIsolated(path.dirname(file)))).toEqual({ sdk: 'function', year: 2024 });
  });

  it("splits per function: a dynamic import's target is a chunk in the function's own directory, read only when its path runs", () => {
    const result = bundleEntries([{ name: 'lazy', entry: 'test/infra/fixtures/lazy-handler.ts' }], { rootDir: ROOT_DIR, outDir });
    const dir = result.dirs.get('lazy')!;
    const chunks = readdirSync(path.join(dir, 'chunks'));
    const lazyChunk = chunks.find((file) => /^lazy-greeting-[A-Z0-9]+\.mjs$/.test(file));
    expect(lazyChunk).toBeDefined();
    expect(readFileSync(path.join(dir, 'chunks', lazyChunk!), 'utf8')).toContain('hello from the');
    expect(readFileSync(path.join(dir, 'index.mjs'), 'utf8')).not.toContain('hello from the');
    expect(readdirSync(dir).sort()).toEqual(['chunks', 'index.mjs', 'index.mjs.map']);
    // Loaded at start: index.mjs and the chunks it imports statically (esbuild's helpers shared with the tracing SDK's
    // chunk, which the entry's trace export extension may load: lib/bundle.ts lambdaEntry), not the chunk behind the
    // dynamic import; in all: every file.
    const index = readFileSync(path.join(dir, 'index.mjs'), 'utf8');
    const staticChunks = [...index.matchAll(/import"\.\/(chunks\/[^"]+)"/g)].map((m) => m[1]);
    expect(staticChunks).not.toContain(`chunks/${lazyChunk}`);
    const bytes = (file: string) => readFileSync(path.join(dir, file)).length;
    expect(result.sizes.get('lazy')).toBe(bytes('index.mjs') + staticChunks.reduce((sum, f) => sum + bytes(f), 0));
    const allFiles = ['index.mjs', ...readdirSync(path.join(dir, 'chunks')).filter((f) => f.endsWith('.mjs')).map((f) => `chunks/${f}`)];
    expect(result.totalSizes.get('lazy')).toBe(allFiles.reduce((sum, f) => sum + bytes(f), 0));

    // The directory alone, copied where nothing else is, runs and awaits its chunk.
    expect(JSON.parse(runIsolated(dir))).toEqual({ greeting: 'hello from the chunk' });
    // Without the chunk it still loads (Node has not read it) and fails only when the handler runs.
    expect(runIsolated(dir, (copy) => rmSync(path.join(copy, 'chunks', lazyChunk!)))).toMatch(/^loaded; handler failed: .*lazy-greeting/s);
  });

  it('bundles real functions that answer as they do unbundled (package.json sideEffects drops unused modules, nothing needed)', () => {
    const entry = (id: string) => operations.find((o) => o.operationId === id)!.entry;
    const built = bundleEntries(
      [{ name: 'getHealth', entry: entry('getHealth') }, { name: 'getWidgetConfig', entry: entry('getWidgetConfig') }, { name: 'fallback', entry: fallbackEntry }],
      { rootDir: ROOT_DIR, outDir },
    );
    const event = (method: string, path: string, pathParameters: Record<string, string> = {}) => ({
      version: '2.0', rawPath: path, rawQueryString: '', headers: { origin: 'https://shop.example' }, pathParameters,
      requestContext: { requestId: 'req-1', http: { method, path, sourceIp: '203.0.113.9', userAgent: 'jest' } }, isBase64Encoded: false,
    });
    const invoke = (name: string, e: object) => {
      const file = path.join(built.dirs.get(name)!, 'index.mjs');
      const script = `const m = await import(${JSON.stringify(file)}); const r = await m.handler(${JSON.stringify(e)}, { awsRequestId: 'a', getRemainingTimeInMillis: () => 10000 }); console.log(JSON.stringify({ status: r.statusCode, body: JSON.parse(r.body) }));`;
      return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8', env: { ...process.env, TABLE_NAME: 'bench', BUCKET_NAME: 'bench', AWS_REGION: 'us-east-1', LOG_LEVEL: 'SILENT', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      }));
    };
    expect(invoke('getHealth', event('GET', '/api/v1/health'))).toMatchObject({ status: 200, body: { success: true } });
    // Validation before any table read: the middleware stack, zod and the error envelope are all there.
    expect(invoke('getWidgetConfig', event('GET', '/api/v1/widget/nope/config', { id: 'nope' }))).toMatchObject({
      status: 400, body: { success: false, error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('must be a UUID') } },
    });
    expect(invoke('getWidgetConfig', event('GET', '/api/v1/widget/x/config', { id: '0190a6f4-0000-7000-8000-000000000000', extra: '1' }))).toMatchObject({
      status: 400, body: { error: { code: 'VALIDATION_ERROR', details: { fields: [{ path: 'extra', message: 'is not a known field', in: 'path' }] } } },
    });
    expect(invoke('fallback', event('GET', '/api/v1/nothing-here'))).toMatchObject({ status: 404, body: { success: false } });
    // The logger loads beside the start (a chunk, shared/logger.ts), and a line logged before it
    // arrives is written before the answer: here the access line of a request that does no I/O.
    const logged = execFileSync(process.execPath, ['--input-type=module', '-e',
      `const m = await import(${JSON.stringify(path.join(built.dirs.get('getHealth')!, 'index.mjs'))}); const r = await m.handler(${JSON.stringify(event('GET', '/api/v1/health'))}, { awsRequestId: 'a', getRemainingTimeInMillis: () => 10000 }); console.log('answered ' + r.statusCode);`,
    ], { encoding: 'utf8', env: { ...process.env, TABLE_NAME: 'bench', BUCKET_NAME: 'bench', AWS_REGION: 'us-east-1', LOG_LEVEL: 'INFO', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } }).trim().split('\n');
    expect(logged.at(-1)).toBe('answered 200');
    expect(logged.slice(0, -1).map((l) => JSON.parse(l))).toContainEqual(expect.objectContaining({ level: 'INFO', message: 'request', operation: 'getHealth', status: 200 }));
    // The response schema stays out (its area's `RESPONSES:` block is dropped): only the OpenAPI document reads it.
    expect(operations.find((o) => o.operationId === 'getHealth')!.response).toBeDefined();
    const code = (name: string) => readdirSync(built.dirs.get(name)!, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.mjs')).map((f) => readFileSync(path.join(built.dirs.get(name)!, f), 'utf8')).join('\n');
    expect(code('getHealth')).toContain('/api/v1/health');
    expect(code('getHealth')).not.toContain('The API answers');
  });
});

/**
 * Copies a function's directory (index.mjs and chunks/) to an empty temporary directory, loads it
 * in a fresh Node process and prints what its handler returns (or, failing, "loaded; handler failed").
 */
function runIsolated(dir: string, change?: (copy: string) => void): string {
  const isolated = mkdtempSync(path.join(tmpdir(), 'vap-bundle-'));
  cpSync(dir, isolated, { recursive: true });
  change?.(isolated);
  const script =
    `const m = await import(${JSON.stringify(path.join(isolated, 'index.mjs'))});` +
    "try { console.log(JSON.stringify(await m.handler())); } catch (e) { console.log('loaded; handler failed: ' + e.message); }";
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
}
