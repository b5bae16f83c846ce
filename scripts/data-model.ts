// Rewrites the generated access-pattern table in docs/data-model.md (`npm run docs:data-model`).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accessPatternTable } from '../shared/db/access-patterns';

const file = join(__dirname, '..', 'docs', 'data-model.md');
const start = '<!-- access-patterns:start -->';
const end = '<!-- access-patterns:end -->';
const doc = readFileSync(file, 'utf8');
const next = `${doc.slice(0, doc.indexOf(start) + start.length)}\n${accessPatternTable()}\n${doc.slice(doc.indexOf(end))}`;
writeFileSync(file, next);
console.log(`wrote ${file}`);
