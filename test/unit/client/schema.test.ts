import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const client = join(__dirname, '../../../client');

describe('the client\'s generated schema', () => {
  it('is what openapi-typescript makes of docs/openapi.json now (run `npm run generate -w client` when this fails)', () => {
    // The package's own `generate:check` script: the generator with the options `generate` uses, and --check.
    const { scripts } = JSON.parse(readFileSync(join(client, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const script = scripts['generate:check'] as string;
    expect(script).toBe(`${scripts.generate} --check`);
    const [bin, ...args] = script.split(' ');
    expect(bin).toBe('openapi-typescript');
    const run = spawnSync(process.execPath, [join(client, '../node_modules/openapi-typescript/bin/cli.js'), ...args], { cwd: client, encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/not up-to-date/);
    expect(run.status).toBe(0);
  });
});
