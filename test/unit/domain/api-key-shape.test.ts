import { apiKeyProblem, generateApiKey, hashApiKey, keyPrefix, looksLikeApiKey } from '../../../shared/domain/api-keys/secret';

describe('API key shapes', () => {
  it('accepts generated keys and shows their vap_ prefix', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^vap_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/);
    expect(looksLikeApiKey(key)).toBe(true);
    expect(keyPrefix(key)).toBe(key.slice(0, 12));
  });

  it.each(['0123456789abcdef', 'dev-key-alice-0001', 'Sup3r$ecret!#%&()*+-./:;<=>?@[]^_`{|}~', 'x'.repeat(256)])(
    'accepts chosen key #%# (16 to 256 printable ASCII characters, no space or comma)',
    (key) => {
      expect(apiKeyProblem(key)).toBeUndefined();
      expect(keyPrefix(key)).toBe(`${key.slice(0, 4)}…`);
      expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  it.each([
    ['too short', '0123456789abcde', /at least 16/],
    ['too long', 'x'.repeat(257), /at most 256/],
    ['a comma', 'dev-key,alice-0001', /no spaces or commas/],
    ['a space', 'dev key alice 0001', /no spaces or commas/],
    ['a tab', 'dev-key\talice-0001', /no spaces or commas/],
    ['non-ASCII', 'dev-key-alicé-0001', /printable ASCII/],
    ['a control character', 'dev-key-alice-0001\u0007', /printable ASCII/],
  ])('refuses a key with %s, without quoting it', (_, key, message) => {
    const problem = apiKeyProblem(key);
    expect(problem).toMatch(message);
    expect(problem).not.toContain(key.slice(0, 8));
    expect(looksLikeApiKey(key)).toBe(false);
    expect(keyPrefix(key)).toBeUndefined();
  });
});
