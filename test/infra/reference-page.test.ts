import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { VoiceAgentPlatformStack } from '../../lib/stack';
import { operationBundleName } from '../../lib/api-area';
import { getApiReference, getApiReferenceScript } from '../../shared/domain/health/operations';
import { REDOC_CDN_LOGO, REDOC_SCRIPT_FILE, REDOC_SCRIPT_SOURCE } from '../../shared/domain/health/reference-page';

const ROOT_DIR = path.join(__dirname, '..', '..');
const cdkContext = JSON.parse(readFileSync(path.join(ROOT_DIR, 'cdk.json'), 'utf8')).context;

/**
 * The deployed reference page: the stack's own bundling (not a placeholder) must ship Redoc's
 * script beside the function that serves it, and that bundle, run as Lambda runs it
 * (LAMBDA_TASK_ROOT = its directory, no node_modules), must answer with the script.
 */
describe('the API reference page, as the stack bundles it', () => {
  const outDir = mkdtempSync(path.join(tmpdir(), 'vap-reference-'));
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  beforeAll(() => {
    // A real synthesis with bundling, of the two reference operations only (and the fallback); no jobs, the voice runtime elsewhere.
    const app = new App({ context: { ...cdkContext }, builtinCloudFormationValidation: false });
    new VoiceAgentPlatformStack(app, 'ReferencePage', { operations: [getApiReference, getApiReferenceScript], jobs: [], voiceRuntimeUrl: 'wss://voice.example.com', bundleDir: outDir });
  }, 120_000);

  it('copies redoc.standalone.js beside the script function\'s code, and only there', () => {
    const dir = path.join(outDir, operationBundleName(getApiReferenceScript));
    expect(readFileSync(path.join(dir, REDOC_SCRIPT_FILE))).toEqual(readFileSync(path.join(ROOT_DIR, REDOC_SCRIPT_SOURCE)));
    expect(existsSync(path.join(outDir, operationBundleName(getApiReference), REDOC_SCRIPT_FILE))).toBe(false);
  });

  it.each([
    [getApiReferenceScript, 'text/javascript; charset=utf-8', (body: string) => {
      const original = readFileSync(path.join(ROOT_DIR, REDOC_SCRIPT_SOURCE), 'utf8');
      expect(original).toContain(REDOC_CDN_LOGO);
      expect(body).not.toContain(REDOC_CDN_LOGO);
      expect(body.length).toBeGreaterThan(original.length * 0.99);
      expect(body.slice(0, 1000)).toBe(original.slice(0, 1000));
    }],
    [getApiReference, 'text/html; charset=utf-8', (body: string) => expect(body).toMatch(/<redoc spec-url="\/api\/v1\/openapi.json"[^>]*><\/redoc>\s*<script src="\/api\/v1\/docs\/redoc.js"><\/script>/)],
  ])('the bundled function answers from its own directory (as in Lambda): %#', (op, contentType, check) => {
    const dir = path.join(outDir, operationBundleName(op));
    const event = { version: '2.0', routeKey: `GET ${op.path}`, rawPath: op.path, rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path: op.path }, requestId: 'r' }, isBase64Encoded: false };
    const program = `const { handler } = await import('./index.mjs'); const r = await handler(${JSON.stringify(event)}, { awsRequestId: 'r', getRemainingTimeInMillis: () => 3000 }); process.stdout.write(JSON.stringify(r));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', program], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
      env: { PATH: process.env.PATH, LAMBDA_TASK_ROOT: dir, TABLE_NAME: 't', BUCKET_NAME: 'b', AWS_REGION: 'us-east-1', POWERTOOLS_LOG_LEVEL: 'SILENT', LOG_LEVEL: 'SILENT' },
    });
    const response = JSON.parse(String(out)) as { statusCode: number; headers: Record<string, string>; body: string };
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe(contentType);
    check(response.body);
  }, 30_000);
});
