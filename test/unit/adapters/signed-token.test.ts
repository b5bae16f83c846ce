import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAs } from '../../../shared/access/enforce';
import { resetTokenKeys, signToken, verifyToken } from '../../../shared/adapters/signed-token';
import { installTimeSource } from '../../../shared/clock';

describe('signed tokens', () => {
  let now = Date.UTC(2030, 0, 1);
  const saved = { ...process.env };

  beforeEach(() => {
    now = Date.UTC(2030, 0, 1);
    installTimeSource({ now: () => now });
    delete process.env.TOKEN_SECRET_ARN;
    delete process.env.TOKEN_SIGNING_KEY;
    process.env.SECRETS_LOCAL_KEY_FILE = join(mkdtempSync(join(tmpdir(), 'tok-')), 'secrets.key');
    resetTokenKeys();
  });
  afterEach(() => {
    installTimeSource(undefined);
    process.env = { ...saved };
    resetTokenKeys();
  });

  it('verifies its own token and returns the claims', async () => {
    const token = await signToken('voice-stream', { organization_id: 'org_1', call_id: 'call_1' }, 300);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(await verifyToken('voice-stream', token)).toEqual({ organization_id: 'org_1', call_id: 'call_1' });
  });

  it('refuses a missing or malformed token', async () => {
    for (const bad of [undefined, '', 'abc', 'a.b.c', '.x', 'x.', 'x'.repeat(5000)]) expect(await verifyToken('voice-stream', bad)).toBeNull();
  });

  it('refuses a token whose payload or signature was changed', async () => {
    const token = await signToken('voice-stream', { organization_id: 'org_1', call_id: 'call_1' }, 300);
    const [payload, signature] = token.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ organization_id: 'org_2', call_id: 'call_1', p: 'voice-stream', exp: 9e9 })).toString('base64url');
    expect(await verifyToken('voice-stream', `${forgedPayload}.${signature}`)).toBeNull();
    const flipped = Buffer.from(signature, 'base64url');
    flipped[0] ^= 1;
    expect(await verifyToken('voice-stream', `${payload}.${flipped.toString('base64url')}`)).toBeNull();
    expect(await verifyToken('voice-stream', `${payload}.${signature.slice(0, -2)}`)).toBeNull();
  });

  it('refuses a token signed with another key', async () => {
    const token = await signToken('voice-stream', { call_id: 'c' }, 300);
    process.env.TOKEN_SIGNING_KEY = 'another key entirely, long enough to be a key';
    resetTokenKeys();
    expect(await verifyToken('voice-stream', token)).toBeNull();
    expect(await verifyToken('voice-stream', await signToken('voice-stream', { call_id: 'c' }, 300))).toEqual({ call_id: 'c' });
  });

  it('expires at its lifetime', async () => {
    const token = await signToken('voice-stream', { call_id: 'c' }, 300);
    now += 299_000;
    expect(await verifyToken('voice-stream', token)).toEqual({ call_id: 'c' });
    now += 1_000;
    expect(await verifyToken('voice-stream', token)).toBeNull();
  });

  it('refuses a token of another purpose', async () => {
    const token = await signToken('widget-chat', { session: 's' }, 300);
    expect(await verifyToken('voice-stream', token)).toBeNull();
    expect(await verifyToken('widget-chat', token)).toEqual({ session: 's' });
  });

  it('will not let a claim overwrite the purpose or the expiry', async () => {
    await expect(signToken('voice-stream', { p: 'widget-chat' }, 300)).rejects.toThrow(/reserved/);
    await expect(signToken('voice-stream', { exp: '9999999999' }, 300)).rejects.toThrow(/reserved/);
  });

  it('is refused to a function that does not declare tokens, as IAM would', async () => {
    await expect(runAs({ name: 'agents-get', access: { table: 'R' } }, () => signToken('voice-stream', { call_id: 'c' }, 300))).rejects.toThrow(
      /not authorized.*GetSecretValue/,
    );
    const token = await runAs({ name: 'twilio-twiml', access: { tokens: true } }, () => signToken('voice-stream', { call_id: 'c' }, 300));
    expect(await verifyToken('voice-stream', token)).toEqual({ call_id: 'c' });
  });
});
