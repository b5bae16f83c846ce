/** docs/operations.md, "Faults on demand", lists every kind of LOCAL_FAULTS with its default rate, and no other. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_RATES, FAULT_KINDS } from '../../../shared/local/faults';

it('documents each fault kind with its default rate', () => {
  const doc = readFileSync(join(__dirname, '../../../docs/operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Faults on demand'));
  const rows = [...section.matchAll(/^\| `([\w.]+)` \| ([\d.]+) \|/gm)].map((m) => [m[1], Number(m[2])]);
  expect(Object.fromEntries(rows)).toEqual(DEFAULT_RATES);
  expect(rows.map(([k]) => k).sort()).toEqual(Object.keys(FAULT_KINDS).sort());
});
