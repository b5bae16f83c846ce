import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { checkTokens } from '../access/enforce';
import { clockMs } from '../clock';
import { readLocalKey } from './secrets';

/**
 * Short-lived signed tokens: the voice stream's admission ticket (the TwiML passes it to the
 * voice runtime as a `<Parameter>`) and the web widget's chat tokens. A token is
 * `base64url(JSON {…claims, p: purpose, exp: epoch seconds}) + '.' + base64url(HMAC-SHA256)`.
 * Each purpose signs with its own key (HKDF of one base key, `info` naming the purpose), so a
 * token of one purpose can never pass for another even before its `p` is read.
 *
 * The base key: deployed, a Secrets Manager secret the stack generates (TOKEN_SECRET_ARN, JSON
 * `{"key": "…"}`), read once per process; locally, TOKEN_SIGNING_KEY when set (several processes
 * that must agree, such as the HTTP server and the voice runtime started apart), else the local
 * secrets key file (SECRETS_LOCAL_KEY_FILE), which every local process already shares.
 */
/** `web-call`: a browser's one-use admission to a web call (POST /web-calls, 60 s). */
export type TokenPurpose = 'voice-stream' | 'widget-chat' | 'web-call';

/** Longer than any token we issue carries claims for; anything bigger is refused unread. */
const MAX_TOKEN_LENGTH = 4096;
const RESERVED = new Set(['p', 'exp']);

let baseKey: Promise<Buffer> | undefined;
const purposeKeys = new Map<TokenPurpose, Buffer>();

async function loadBaseKey(): Promise<Buffer> {
  if (process.env.TOKEN_SECRET_ARN) {
    const { readSecretJson } = await import('./secret-json');
    const value = (await readSecretJson(process.env.TOKEN_SECRET_ARN)).key;
    if (typeof value !== 'string' || value.length < 32) throw new Error('The token secret (TOKEN_SECRET_ARN) holds no "key" of at least 32 characters.');
    return Buffer.from(value, 'utf8');
  }
  if (process.env.TOKEN_SIGNING_KEY) return Buffer.from(process.env.TOKEN_SIGNING_KEY, 'utf8');
  if (process.env.SECRETS_LOCAL_KEY_FILE) return readLocalKey(process.env.SECRETS_LOCAL_KEY_FILE);
  throw new Error('Missing TOKEN_SECRET_ARN (deployed), TOKEN_SIGNING_KEY or SECRETS_LOCAL_KEY_FILE (local runtime): tokens cannot be signed.');
}

async function keyFor(purpose: TokenPurpose): Promise<Buffer> {
  checkTokens();
  const cached = purposeKeys.get(purpose);
  if (cached) return cached;
  // A failed read (a throttled Secrets Manager) is not cached: the next token tries again.
  baseKey ??= loadBaseKey().catch((error: unknown) => {
    baseKey = undefined;
    throw error;
  });
  const key = Buffer.from(hkdfSync('sha256', await baseKey, 'vap-signed-token', `signed-token:${purpose}`, 32));
  purposeKeys.set(purpose, key);
  return key;
}

const mac = (key: Buffer, payload: string): Buffer => createHmac('sha256', key).update(payload).digest();

/** Signs `claims` for `purpose`, valid for `ttlSeconds` from now (the shared clock). */
export async function signToken(purpose: TokenPurpose, claims: Record<string, string>, ttlSeconds: number): Promise<string> {
  for (const name of Object.keys(claims)) if (RESERVED.has(name)) throw new Error(`Token claim "${name}" is reserved.`);
  if (!(ttlSeconds > 0)) throw new Error('A token needs a positive lifetime.');
  const exp = Math.floor(clockMs() / 1000) + Math.ceil(ttlSeconds);
  const payload = Buffer.from(JSON.stringify({ ...claims, p: purpose, exp })).toString('base64url');
  return `${payload}.${mac(await keyFor(purpose), payload).toString('base64url')}`;
}

/**
 * The claims of a valid token of `purpose`; null when the token is missing, malformed, forged,
 * of another purpose or expired. The signature is compared in constant time before the payload
 * is parsed.
 */
export async function verifyToken(purpose: TokenPurpose, token: string | undefined): Promise<Record<string, string> | null> {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) return null;
  const parts = token.split('.');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return null;
  const [payload, signature] = parts;
  const given = Buffer.from(signature, 'base64url');
  const expected = mac(await keyFor(purpose), payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const { p, exp, ...claims } = body as Record<string, unknown>;
  if (p !== purpose || typeof exp !== 'number' || exp * 1000 <= clockMs()) return null;
  if (Object.values(claims).some((value) => typeof value !== 'string')) return null;
  return claims as Record<string, string>;
}

/** Forget the cached keys (tests that change the environment). */
export function resetTokenKeys(): void {
  baseKey = undefined;
  purposeKeys.clear();
}
