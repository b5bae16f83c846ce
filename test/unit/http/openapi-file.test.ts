import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getOpenApi } from '../../../shared/domain/health/operations';
import { documentPath } from '../../../functions/system/openapi';

describe('the OpenAPI document of GET /openapi.json', () => {
  afterEach(() => {
    delete process.env.LAMBDA_TASK_ROOT;
  });

  it('ships beside the function and is read from there when deployed', () => {
    expect(getOpenApi.bundleFiles).toEqual([{ from: 'docs/openapi.json', to: 'openapi.json' }]);
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    writeFileSync(join(dir, 'openapi.json'), '{"openapi":"3.1.0"}');
    process.env.LAMBDA_TASK_ROOT = dir;
    expect(documentPath()).toBe(join(dir, 'openapi.json'));
  });

  it('is the repository\'s docs/openapi.json otherwise', () => {
    const path = documentPath();
    expect(existsSync(path)).toBe(true);
    expect(JSON.parse(readFileSync(path, 'utf8')).openapi).toMatch(/^3\.1/);
  });
});
