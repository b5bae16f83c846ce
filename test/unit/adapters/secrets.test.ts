import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kmsSecretBox, localSecretBox } from '../../../shared/adapters/secrets';

describe('secret boxes', () => {
  it('seals with the local key and opens again; the sealed form hides the value', async () => {
    const box = localSecretBox(join(mkdtempSync(join(tmpdir(), 'box-')), 'k'));
    const sealed = await box.seal('sip-password-123');
    expect(sealed).not.toContain('sip-password-123');
    expect(await box.open(sealed)).toBe('sip-password-123');
    expect(await box.seal('sip-password-123')).not.toBe(sealed);
  });

  it('refuses a tampered value', async () => {
    const box = localSecretBox(join(mkdtempSync(join(tmpdir(), 'box-')), 'k'));
    const parts = (await box.seal('x')).split(':');
    parts[5] = Buffer.from('y').toString('base64');
    await expect(box.open(parts.join(':'))).rejects.toThrow();
  });

  it('wraps a data key per value through KMS and caches the unwrapped key', async () => {
    const dataKey = Buffer.alloc(32, 7);
    const calls: string[] = [];
    const fakeKms = {
      send: async (cmd: { constructor: { name: string } }) => {
        calls.push(cmd.constructor.name);
        return cmd.constructor.name === 'GenerateDataKeyCommand'
          ? { Plaintext: Uint8Array.from(dataKey), CiphertextBlob: Uint8Array.from([1, 2, 3]) }
          : { Plaintext: Uint8Array.from(dataKey) };
      },
    };
    const box = kmsSecretBox('key-id', fakeKms as never);
    const sealed = await box.seal('integration-key');
    expect(await box.open(sealed)).toBe('integration-key');
    expect(await box.open(sealed)).toBe('integration-key');
    expect(calls).toEqual(['GenerateDataKeyCommand', 'DecryptCommand']);
  });
});
