import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from '../../shared/http/openapi';
import { getHealth } from '../../shared/domain/health/operations';

const root = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/**
 * One license for the whole repository (Apache-2.0): the text, both packages, the OpenAPI
 * document (built and committed) and the README say the same thing.
 */
describe('the license', () => {
  it('is the Apache License 2.0 text, in the repository and in the client package', () => {
    for (const file of ['LICENSE', 'client/LICENSE']) {
      const text = read(file);
      expect(text).toMatch(/Apache License\s+Version 2\.0, January 2004/);
      expect(text).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
      expect(text).toContain('Grant of Patent License');
      expect(text).not.toMatch(/MIT License|Permission is hereby granted, free of charge/);
    }
    expect(read('client/LICENSE')).toBe(read('LICENSE'));
    expect(existsSync(join(root, 'NOTICE'))).toBe(true);
  });

  it('is declared as Apache-2.0 by both packages, and the client ships its text', () => {
    expect(JSON.parse(read('package.json')).license).toBe('Apache-2.0');
    const client = JSON.parse(read('client/package.json'));
    expect(client.license).toBe('Apache-2.0');
    expect(client.files).toEqual(expect.arrayContaining(['LICENSE', 'NOTICE']));
    expect(existsSync(join(root, 'client', 'NOTICE'))).toBe(true);
  });

  it('is the OpenAPI document\'s license, as built and as committed', () => {
    const expected = { name: 'Apache 2.0', identifier: 'Apache-2.0' };
    expect((buildOpenApi([getHealth], '0.0.0') as { info: { license: unknown } }).info.license).toEqual(expected);
    expect(JSON.parse(read('docs/openapi.json')).info.license).toEqual(expected);
  });

  it('is named in the README, and nothing still says otherwise', () => {
    expect(read('README.md')).toMatch(/## License\n\n[^#]*Apache License 2\.0[^#]*LICENSE/);
    for (const file of ['README.md', 'client/README.md', 'docs/api.md']) {
      expect(read(file)).not.toMatch(/UNLICENSED|Proprietary|MIT licen[cs]e/i);
    }
  });
});
