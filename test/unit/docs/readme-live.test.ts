/**
 * Issue 36.4: README's "What is live today" table lacked versions, tests, analytics, the
 * OpenAI-compatible endpoint, web calls and the relay. Every operation of the route registry is
 * named there (its last fixed path segment, as `/<segment>`), and so is the relay's WebSocket.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { operations } from '../../../shared/http/registry';

const readme = readFileSync(join(__dirname, '../../../README.md'), 'utf8');
const start = readme.indexOf('What is live today');
const table = readme.slice(start, readme.indexOf('\n\n', readme.indexOf('\n|', start)));

it('names every operation of the registry', () => {
  const missing = operations
    .filter((op) => op.path.startsWith('/api/v1/'))
    .filter((op) => {
      const last = op.path.slice('/api/v1'.length).split('/').filter((s) => s && !s.startsWith('{')).at(-1);
      return last !== undefined && !table.includes(`/${last}`);
    })
    .map((op) => `${op.method} ${op.path}`);
  expect(missing).toEqual([]);
});

it('names the relay and web calls', () => {
  expect(table).toMatch(/\| Relay[^|]*\|[^\n]*`\/relay`/);
  expect(table).toMatch(/\| Web calls[^|]*\|[^\n]*`\/web-calls`/);
});
