/**
 * KMS (JSON 1.1, `X-Amz-Target: TrentService.<Op>`) for the local AWS endpoint: GenerateDataKey,
 * Encrypt and Decrypt on symmetric keys.
 *
 * It mirrors KMS's contract: KeyId may be a key id, key ARN, alias name or alias ARN; the
 * CiphertextBlob names the key that made it, so Decrypt works without a KeyId; the encryption
 * context is bound to the ciphertext; a tampered blob, one from another key or another run (each
 * endpoint draws fresh random master keys) or a changed context is InvalidCiphertextException; a
 * KeyId that is not the blob's key is IncorrectKeyException; an unknown key NotFoundException.
 * Authorization is `kms:<Op>` on the key's ARN (for Decrypt, the blob's key).
 *
 * What it refuses: the blob is AES-256-GCM under a local master key, not KMS's format, and
 * asymmetric keys, grants and key policies are not modelled.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AwsServiceError, jsonRpcService, type AwsCall } from './protocol';

export interface LocalKmsKey {
  keyId: string;
  arn: string;
  /** Alias names, with or without the `alias/` prefix. */
  aliases?: string[];
}

interface KmsOptions {
  region: string;
  accountId: string;
  kmsKeys: LocalKmsKey[];
}

const BLOB_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_PLAINTEXT_BYTES = 4096;
const invalidCiphertext = () => new AwsServiceError('InvalidCiphertextException', '');

/** Serves KMS's JSON 1.1 protocol. */
export function kmsService(options: KmsOptions) {
  const masterKeys = new Map(options.kmsKeys.map((key) => [key.arn, randomBytes(32)]));
  const aliasName = (alias: string) => (alias.startsWith('alias/') ? alias : `alias/${alias}`);

  const resolveKey = (keyId: unknown): LocalKmsKey => {
    const id = String(keyId ?? '');
    const aliasArn = /^arn:aws[\w-]*:kms:[^:]*:[^:]*:(alias\/.+)$/.exec(id)?.[1];
    const alias = aliasArn ?? (id.startsWith('alias/') ? id : undefined);
    const key = alias
      ? options.kmsKeys.find((k) => (k.aliases ?? []).map(aliasName).includes(alias))
      : options.kmsKeys.find((k) => k.keyId === id || k.arn === id);
    if (key) return key;
    if (alias) throw new AwsServiceError('NotFoundException', `Alias arn:aws:kms:${options.region}:${options.accountId}:${alias} is not found.`);
    throw new AwsServiceError('NotFoundException', `Key '${id.startsWith('arn:') ? id : `arn:aws:kms:${options.region}:${options.accountId}:key/${id}`}' does not exist`);
  };

  const authorize = (call: AwsCall, operation: string, key: LocalKmsKey) => {
    const denial = call.authorize(`kms:${operation}`, key.arn);
    if (denial) throw new AwsServiceError('AccessDeniedException', denial.message!);
  };

  const encrypt = (key: LocalKmsKey, plaintext: Buffer, context: unknown) => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', masterKeys.get(key.arn)!, iv);
    cipher.setAAD(contextBytes(context));
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const arn = Buffer.from(key.arn, 'utf8');
    const header = Buffer.alloc(3);
    header.writeUInt8(BLOB_VERSION, 0);
    header.writeUInt16BE(arn.length, 1);
    return Buffer.concat([header, arn, iv, cipher.getAuthTag(), sealed]).toString('base64');
  };

  const plaintextOf = (input: Record<string, unknown>): Buffer => {
    const plaintext = Buffer.from(String(input.Plaintext ?? ''), 'base64');
    if (plaintext.length < 1 || plaintext.length > MAX_PLAINTEXT_BYTES) {
      throw new AwsServiceError('ValidationException', `1 validation error detected: Value at 'plaintext' failed to satisfy constraint: Member must have length between 1 and ${MAX_PLAINTEXT_BYTES}`);
    }
    return plaintext;
  };

  const operations: Record<string, (call: AwsCall, input: Record<string, unknown>) => unknown> = {
    GenerateDataKey(call, input) {
      const key = resolveKey(input.KeyId);
      authorize(call, 'GenerateDataKey', key);
      const bytes = dataKeyBytes(input);
      const plaintext = randomBytes(bytes);
      return { KeyId: key.arn, Plaintext: plaintext.toString('base64'), CiphertextBlob: encrypt(key, plaintext, input.EncryptionContext) };
    },
    Encrypt(call, input) {
      const key = resolveKey(input.KeyId);
      authorize(call, 'Encrypt', key);
      return { KeyId: key.arn, CiphertextBlob: encrypt(key, plaintextOf(input), input.EncryptionContext), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
    Decrypt(call, input) {
      const blob = Buffer.from(String(input.CiphertextBlob ?? ''), 'base64');
      if (blob.length < 3) throw invalidCiphertext();
      const arnLength = blob.readUInt16BE(1);
      const arn = blob.subarray(3, 3 + arnLength).toString('utf8');
      const key = options.kmsKeys.find((k) => k.arn === arn);
      if (blob[0] !== BLOB_VERSION || !key || blob.length < 3 + arnLength + IV_BYTES + TAG_BYTES) throw invalidCiphertext();
      if (input.KeyId !== undefined && resolveKey(input.KeyId).arn !== key.arn) {
        throw new AwsServiceError('IncorrectKeyException', 'The key ID in the request does not identify a CMK that can perform this operation.');
      }
      authorize(call, 'Decrypt', key);
      const at = 3 + arnLength;
      try {
        const decipher = createDecipheriv('aes-256-gcm', masterKeys.get(key.arn)!, blob.subarray(at, at + IV_BYTES));
        decipher.setAAD(contextBytes(input.EncryptionContext));
        decipher.setAuthTag(blob.subarray(at + IV_BYTES, at + IV_BYTES + TAG_BYTES));
        const plaintext = Buffer.concat([decipher.update(blob.subarray(at + IV_BYTES + TAG_BYTES)), decipher.final()]);
        return { KeyId: key.arn, Plaintext: plaintext.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
      } catch {
        throw invalidCiphertext();
      }
    },
  };

  return jsonRpcService({ targetPrefix: 'TrentService', label: 'KMS', contentType: 'application/x-amz-json-1.1', operations });
}

function dataKeyBytes(input: Record<string, unknown>): number {
  if (input.KeySpec !== undefined && input.NumberOfBytes !== undefined) throw new AwsServiceError('ValidationException', 'Please specify either number of bytes or key spec.');
  if (input.KeySpec === 'AES_256') return 32;
  if (input.KeySpec === 'AES_128') return 16;
  if (input.KeySpec !== undefined) throw new AwsServiceError('ValidationException', `1 validation error detected: Value '${input.KeySpec}' at 'keySpec' failed to satisfy constraint: Member must satisfy enum value set: [AES_256, AES_128]`);
  const bytes = Number(input.NumberOfBytes);
  if (input.NumberOfBytes === undefined) throw new AwsServiceError('ValidationException', 'Please specify either number of bytes or key spec.');
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1024) throw new AwsServiceError('ValidationException', `1 validation error detected: Value '${input.NumberOfBytes}' at 'numberOfBytes' failed to satisfy constraint: Member must have value less than or equal to 1024`);
  return bytes;
}

/** The encryption context, canonical (sorted keys), as the GCM additional data. */
function contextBytes(context: unknown): Buffer {
  const entries = Object.entries((context ?? {}) as Record<string, string>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.from(JSON.stringify(entries), 'utf8');
}
