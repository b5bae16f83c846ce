import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accessPatternTable, accessPatterns } from '../../../shared/db/access-patterns';
import { keys, Prefix } from '../../../shared/db/keys';

describe('data model', () => {
  it('documents every access pattern in docs/data-model.md (run `npm run docs:data-model`)', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'data-model.md'), 'utf8');
    expect(doc).toContain(accessPatternTable());
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
