import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accessPatternTable, accessPatterns, itemShapes, itemTable } from '../../../shared/db/access-patterns';
import { gsi1, gsi2, keys, Prefix } from '../../../shared/db/keys';

describe('data model', () => {
  it('documents every access pattern in docs/data-model.md (run `npm run docs:data-model`)', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'data-model.md'), 'utf8');
    expect(doc).toContain(accessPatternTable());
  });

  it('lists every item kind in docs/data-model.md, from the key builders (run `npm run docs:data-model`)', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'data-model.md'), 'utf8');
    expect(doc).toContain(itemTable());
    // Placeholders stand for any value: a builder called with placeholders must match a documented row.
    const shape = (v: string) => v.replace(/<[^>]*>/g, '*');
    const pattern = (v: string) => new RegExp(`^${shape(v).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.+')}$`, 'm');
    const documentedKeys = itemShapes.map((i) => `${shape(i.key.pk)} | ${shape(i.key.sk)}`).join('\n');
    const documentedIndexes = itemShapes.flatMap((i) => [i.gsi1, i.gsi2]).filter(Boolean).flatMap((v) => shape(v!).split(' / ')).join('\n');
    const args = ['<a>', '<b>', '<c>', '<d>'];
    for (const [name, builder] of Object.entries(keys)) {
      if (typeof builder !== 'function') continue;
      const key = (builder as (...a: string[]) => unknown)(...args) as Partial<{ pk: string; sk: string }>;
      if (typeof key !== 'object' || !key.pk || !key.sk) continue;
      const found = pattern(`${key.pk} | ${key.sk}`).test(documentedKeys);
      expect(`keys.${name}: ${found ? 'documented' : 'missing from itemShapes'}`).toBe(`keys.${name}: documented`);
    }
    for (const [name, builder] of [...Object.entries(gsi1), ...Object.entries(gsi2)]) {
      if (typeof builder !== 'function') continue;
      const found = pattern((builder as (...a: string[]) => string)(...args)).test(documentedIndexes);
      expect(`${name}: ${found ? 'documented' : 'missing from itemShapes'}`).toBe(`${name}: documented`);
    }
    for (const prefix of Object.values(Prefix)) expect(documentedKeys).toContain(prefix);
  });

  it('has an access pattern for every entity prefix', () => {
    const documented = accessPatterns.map((p) => p.key).join('\n');
    for (const prefix of Object.values(Prefix)) expect(documented).toContain(prefix);
  });

  it('starts every tenant key with the organization', () => {
    const org = '0190aaaa-0000-7000-8000-000000000000';
    const tenantKeys = [keys.agent(org, 'a'), keys.tool(org, 't'), keys.widget(org, 'w'), keys.apiKey(org, 'k'), keys.counter(org, 'c'), keys.idempotency(org, 'op', 'k'), keys.knowledgeBase(org, 'kb')];
    for (const k of tenantKeys) expect(k.pk).toBe(`ORG#${org}`);
  });
});
