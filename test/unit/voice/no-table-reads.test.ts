import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The voice runtime reads and writes the table only through the areas' services (issue 25, point 10). */
describe('voice/', () => {
  it('imports nothing from shared/db (no keys, no getItem)', () => {
    const dir = join(__dirname, '../../../voice');
    const offenders = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /from ['"][./]*shared\/db\//.test(readFileSync(join(dir, f), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
