import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { KMSClient } from '@aws-sdk/client-kms';
import { checkSecretsKey } from '../access/enforce';

/**
 * Envelope encryption of secrets at rest (SIP passwords, integration keys, webhook secrets).
 * Each value is sealed with AES-256-GCM under a data key; deployed, the data key comes from
 * KMS (GenerateDataKey under SECRETS_KEY_ID) and is stored encrypted beside the value; in the
 * local runtime one local key (SECRETS_LOCAL_KEY_FILE, created on first use) is the data key.
 * Sealed values are strings `v1:<scheme>:<wrapped key b64>:<iv b64>:<tag b64>:<ciphertext b64>`.
 */
export interface SecretBox {
  seal(plaintext: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

const VERSION = 'v1';

function aesSeal(key: Buffer, plaintext: string, aad: string): { iv: Buffer; tag: Buffer; ct: Buffer } {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), ct };
}

function aesOpen(key: Buffer, iv: Buffer, tag: Buffer, ct: Buffer, aad: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
}

function parse(sealed: string) {
  const parts = sealed.split(':');
  if (parts.length !== 6 || parts[0] !== VERSION) throw new Error('not a sealed secret');
  const [, scheme, wrapped, iv, tag, ct] = parts;
  return { scheme, wrapped: Buffer.from(wrapped, 'base64'), iv: Buffer.from(iv, 'base64'), tag: Buffer.from(tag, 'base64'), ct: Buffer.from(ct, 'base64') };
}

const join = (scheme: string, wrapped: Buffer, s: { iv: Buffer; tag: Buffer; ct: Buffer }) =>
  [VERSION, scheme, wrapped.toString('base64'), s.iv.toString('base64'), s.tag.toString('base64'), s.ct.toString('base64')].join(':');

/** The local runtime's key: 256 bits kept in a file (mode 600), created on first use. */
export function readLocalKey(keyFile: string): Buffer {
  if (!existsSync(keyFile)) {
    mkdirSync(dirname(keyFile), { recursive: true });
    try {
      writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another process (the voice runtime beside the HTTP server) made it first: read theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const key = Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${keyFile} does not hold a 256-bit key`);
  return key;
}

/** The local runtime's box: one 256-bit key kept in a file (mode 600). */
export function localSecretBox(keyFile: string): SecretBox {
  let key: Buffer | undefined;
  const load = () => (key ??= readLocalKey(keyFile));
  return {
    async seal(plaintext) {
      return join('local', Buffer.alloc(0), aesSeal(load(), plaintext, 'local'));
    },
    async open(sealed) {
      const p = parse(sealed);
      if (p.scheme !== 'local') throw new Error(`secret sealed with ${p.scheme}, not the local key`);
      return aesOpen(load(), p.iv, p.tag, p.ct, 'local');
    },
  };
}

/** The deployed box: a KMS data key per value, decrypted data keys cached briefly in memory. */
export function kmsSecretBox(keyId: string, client?: KMSClient): SecretBox {
  const cache = new Map<string, { key: Buffer; until: number }>();
  let kms: KMSClient | undefined = client;
  const sdk = () => import('@aws-sdk/client-kms');
  const kmsClient = async () => (kms ??= new (await sdk()).KMSClient({}));
  return {
    async seal(plaintext) {
      const { GenerateDataKeyCommand } = await sdk();
      const out = await (await kmsClient()).send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256' }));
      const key = Buffer.from(out.Plaintext!);
      const sealed = join('kms', Buffer.from(out.CiphertextBlob!), aesSeal(key, plaintext, 'kms'));
      key.fill(0);
      return sealed;
    },
    async open(sealed) {
      const p = parse(sealed);
      if (p.scheme !== 'kms') throw new Error(`secret sealed with ${p.scheme}, not KMS`);
      const id = p.wrapped.toString('base64');
      let entry = cache.get(id);
      if (!entry || entry.until < Date.now()) {
        const { DecryptCommand } = await sdk();
        const out = await (await kmsClient()).send(new DecryptCommand({ CiphertextBlob: p.wrapped, KeyId: keyId }));
        entry = { key: Buffer.from(out.Plaintext!), until: Date.now() + 5 * 60_000 };
        if (cache.size > 1000) cache.clear();
        cache.set(id, entry);
      }
      return aesOpen(entry.key, p.iv, p.tag, p.ct, 'kms');
    },
  };
}

let box: SecretBox | undefined;

/**
 * This process's box: KMS when SECRETS_KEY_ID is set (deployed), else the local key file. Sealing
 * needs kms:GenerateDataKey and opening kms:Decrypt, which only `secrets` functions hold.
 */
export function secrets(): SecretBox {
  if (!box) {
    let inner: SecretBox;
    if (process.env.SECRETS_KEY_ID) inner = kmsSecretBox(process.env.SECRETS_KEY_ID);
    else if (process.env.SECRETS_LOCAL_KEY_FILE) inner = localSecretBox(process.env.SECRETS_LOCAL_KEY_FILE);
    else throw new Error('Missing SECRETS_KEY_ID (deployed) or SECRETS_LOCAL_KEY_FILE (local runtime): secrets cannot be sealed.');
    box = {
      seal: async (plaintext) => (checkSecretsKey('kms:GenerateDataKey'), inner.seal(plaintext)),
      open: async (sealed) => (checkSecretsKey('kms:Decrypt'), inner.open(sealed)),
    };
  }
  return box;
}

/** Forget the box (tests that change the environment). */
export function resetSecrets(): void {
  box = undefined;
}
