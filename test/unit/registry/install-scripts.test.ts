import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');
const read = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));

describe('install scripts', () => {
  // .npmrc keeps installs quiet (loglevel=error), which also hides npm's notice about unapproved
  // install scripts: this test is that notice, kept.
  it('records a decision in allowScripts for exactly the packages of the lock file that have one', () => {
    const lock = read('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = new Set(
      Object.entries(lock.packages)
        .filter(([, p]) => p.hasInstallScript)
        .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
    );
    const decided = Object.keys(read('package.json').allowScripts as Record<string, boolean>);
    expect([...decided].sort()).toEqual([...withScripts].sort());
  });

  it('denies the telemetry script', () => {
    expect(read('package.json').allowScripts['@scarf/scarf']).toBe(false);
  });
});
