import { createHash, randomBytes } from 'node:crypto';

const KEY_PATTERN = /^vap_([a-z0-9]{8})_([A-Za-z0-9_-]{20,128})$/;
/** A key someone chose (LOCAL_API_KEYS): printable ASCII, no space and no comma (the list separator). */
const CHOSEN_KEY_PATTERN = /^[\x21-\x2B\x2D-\x7E]+$/;
export const CHOSEN_KEY_MIN_LENGTH = 16;
export const CHOSEN_KEY_MAX_LENGTH = 256;
/** How many leading characters of a chosen key listings show (the rest stays secret). */
const CHOSEN_KEY_SHOWN = 4;

/** A new API key: `vap_<8-char prefix>_<43-char secret>`. The prefix is shown in listings. */
export function generateApiKey(): string {
  const prefix = randomBytes(6).toString('base64url').toLowerCase().replace(/[^a-z0-9]/g, '0').slice(0, 8);
  return `vap_${prefix}_${randomBytes(32).toString('base64url')}`;
}

/**
 * The part of a key that may be shown again: `vap_abcd1234` for a generated key, the first four
 * characters and an ellipsis (`dev-…`) for one chosen by hand.
 */
export function keyPrefix(key: string): string | undefined {
  const m = KEY_PATTERN.exec(key);
  if (m) return `vap_${m[1]}`;
  return apiKeyProblem(key) ? undefined : `${key.slice(0, CHOSEN_KEY_SHOWN)}…`;
}

/** Keys are stored only as this SHA-256 digest. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * Why a string cannot be an API key, or undefined when it can: a generated `vap_…` key, or any
 * 16 to 256 printable ASCII characters without spaces or commas. Never quotes the key.
 */
export function apiKeyProblem(key: string): string | undefined {
  if (KEY_PATTERN.test(key)) return undefined;
  if (key.length < CHOSEN_KEY_MIN_LENGTH) return `is ${key.length} characters long; a key needs at least ${CHOSEN_KEY_MIN_LENGTH}`;
  if (key.length > CHOSEN_KEY_MAX_LENGTH) return `is ${key.length} characters long; a key has at most ${CHOSEN_KEY_MAX_LENGTH}`;
  if (!CHOSEN_KEY_PATTERN.test(key)) return 'may hold only printable ASCII characters, with no spaces or commas';
  return undefined;
}

/** Whether a string has the shape of a key (checked before any lookup). */
export function looksLikeApiKey(key: string): boolean {
  return apiKeyProblem(key) === undefined;
}
