import { join } from 'node:path';
import { createHandlerLoader, repoRoot } from '../../../shared/local/handler-loader';

describe('createHandlerLoader', () => {
  it('loads the handler of an entry file named relative to the root', async () => {
    // Prepare
    const load = createHandlerLoader(join(repoRoot, 'test/unit/local'));
    // Act
    const handler = await load<() => Promise<{ statusCode: number }>>('fixtures/echo-handler.ts');
    // Assess
    await expect(handler()).resolves.toEqual({ statusCode: 204 });
  });

  it('names the entry file that exports no handler', async () => {
    // Prepare
    const load = createHandlerLoader();
    // Act
    const loading = load('test/unit/local/fixtures/no-handler.ts');
    // Assess
    await expect(loading).rejects.toThrow('test/unit/local/fixtures/no-handler.ts does not export a function named "handler"');
  });
});
