/**
 * Issue 36.4: docs/api.md showed an `end_reason` body for `POST /chats/{id}/end`, which takes none
 * (the API refuses a body there). Each row of docs/api.md's operation tables (`| POST | path | … |`)
 * of an operation that takes no body says "no body", and no row of one that takes a body does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { operations } from '../../../shared/http/registry';

const api = readFileSync(join(__dirname, '../../../docs/api.md'), 'utf8');
const rows = api
  .split('\n')
  .filter((l) => /^\|\s*(POST|PUT|PATCH)\s*\|/.test(l))
  .map((l) => l.slice(1, -1).split('|').map((c) => c.trim()))
  .map(([method, path, text]) => ({ method: method!, path: path!.replace(/`/g, ''), text: text ?? '' }))
  .map((row) => ({ ...row, op: operations.find((o) => o.method === row.method && (o.path === row.path || o.path === `/api/v1${row.path}`)) }));

it('reads rows of known operations', () => {
  expect(rows.filter((r) => r.op).length).toBeGreaterThan(20);
});

it('says "no body" exactly for the operations that take none', () => {
  const wrong = rows
    .filter((r) => r.op && !r.op.body !== r.text.startsWith('no body'))
    .map((r) => `${r.method} ${r.path} ${r.op!.body ? 'takes a body but its row says "no body"' : `takes no body; its row should start "no body": ${r.text.slice(0, 60)}`}`);
  expect(wrong).toEqual([]);
});
