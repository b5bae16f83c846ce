import { createHash, randomBytes } from 'node:crypto';

const KEY_PATTERN = /^vap_([a-z0-9]{8})_([A-Za-z0-9_-]{20,128})$/;

/** A new API key: `vap_<8-char prefix>_<43-char secret>`. The prefix is shown in listings. */
export function generateApiKey(): string {
  const prefix = randomBytes(6).toString('base64url').toLowerCase().replace(/[^a-z0-9]/g, '0').slice(0, 8);
  return `vap_${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** The part of a key that may be shown again (`vap_abcd1234`). */
export function keyPrefix(key: string): string | undefined {
  const m = KEY_PATTERN.exec(key);
  return m ? `vap_${m[1]}` : undefined;
}

/** Keys are stored only as this SHA-256 digest. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a string has the shape of one of our keys (checked before any lookup). */
export function looksLikeApiKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}
