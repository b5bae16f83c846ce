import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { WIDGET_DIST } from '../../../widget/build';

const root = join(__dirname, '..', '..', '..');
const fresh = () => {
  let mod!: typeof import('../../../shared/domain/widgets/embed-script');
  jest.isolateModules(() => {
    mod = require('../../../shared/domain/widgets/embed-script');
  });
  return mod;
};

describe('the API serves the committed widget script and never builds it', () => {
  afterEach(() => {
    delete process.env.LAMBDA_TASK_ROOT;
    jest.dontMock('../../../widget/build');
  });

  it('answers the bytes of widget/dist/embed.js, without loading the builder (esbuild)', async () => {
    jest.doMock('../../../widget/build', () => {
      throw new Error('the API loaded the widget builder');
    });
    const { serveEmbedScript } = fresh();
    const { body, headers } = await serveEmbedScript(undefined, undefined);
    expect(body.body).toBe(readFileSync(join(root, WIDGET_DIST), 'utf8'));
    expect(headers.etag).toMatch(/^"[^"]+"$/);
    const zipped = await serveEmbedScript(undefined, 'gzip, br');
    expect(gunzipSync(Buffer.from(zipped.body.body, 'base64')).toString('utf8')).toBe(body.body);
    expect((await serveEmbedScript(headers.etag, undefined)).body.statusCode).toBe(304);
    // Nothing in the serving module names the builder, not even through a computed import.
    const source = readFileSync(join(root, 'shared/domain/widgets/embed-script.ts'), 'utf8');
    expect(source).not.toMatch(/esbuild|widget\/build|'build'|import\(/);
  });

  it('reads embed.js beside the deployed function (LAMBDA_TASK_ROOT) when it is there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'embed-'));
    writeFileSync(join(dir, 'embed.js'), '/* deployed copy */');
    process.env.LAMBDA_TASK_ROOT = dir;
    const { serveEmbedScript } = fresh();
    expect((await serveEmbedScript(undefined, undefined)).body.body).toBe('/* deployed copy */');
  });
});
