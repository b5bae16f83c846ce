// Rewrites the generated item and access-pattern tables in docs/data-model.md (`npm run docs:data-model`).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accessPatternTable, itemTable } from '../shared/db/access-patterns';

const file = join(__dirname, '..', 'docs', 'data-model.md');
const between = (doc: string, name: string, table: string) => {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  return `${doc.slice(0, doc.indexOf(start) + start.length)}\n${table}\n${doc.slice(doc.indexOf(end))}`;
};
const next = between(between(readFileSync(file, 'utf8'), 'items', itemTable()), 'access-patterns', accessPatternTable());
writeFileSync(file, next);
console.log(`wrote ${file}`);
