import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queue } from '../../../shared/adapters/queue';
import { LOCAL_KEY_FILE, RUNTIME_FILE, startPlatform } from '../../../shared/local/platform';
import { startTestPlatform, type TestPlatform } from '../../support/platform';

/**
 * A key of the documented shape (vap_<8 lowercase>_<secret>), made here rather than imported
 * from the domain so the logger is first loaded by the platform, after it set LOG_LEVEL.
 */
const newKey = () => `vap_${randomBytes(4).toString('hex')}_${randomBytes(24).toString('base64url')}`;

describe('startPlatform, in memory, with the real registry', () => {
  let local: TestPlatform;
  // A generated-shape key and one chosen by hand (any 16+ printable ASCII characters, no comma or space).
  const chosen = `my-own:dev.key!${randomBytes(4).toString('hex')}`;
  const given = [newKey(), chosen];
  const envBefore = process.env.TABLE_NAME;

  beforeAll(async () => {
    local = await startTestPlatform({ apiKeys: given });
  });
  afterAll(() => local?.stop());

  it('serves the health operation without a key', async () => {
    // Act
    const res = await local.api('GET', '/api/v1/health', { key: null });
    // Assess
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, data: { status: 'ok' } });
    expect(res.headers.get('x-request-id')).toEqual(expect.any(String));
  });

  it('finds the table and the bucket ready', async () => {
    // Act
    const res = await local.api('GET', '/api/v1/health/ready/', { key: null });
    // Assess
    expect(res.status).toBe(200);
    expect(res.body.data.checks).toEqual({ table: 'ok', bucket: 'ok' });
  });

  it('provisions each given key in an organization of its own', async () => {
    // Act
    const first = await local.api('GET', '/api/v1/agents', { key: given[0] });
    const second = await local.api('GET', '/api/v1/agents', { key: given[1] });
    const none = await local.api('GET', '/api/v1/agents', { key: null });
    // Assess
    expect(local.platform.apiKeys).toEqual(given);
    expect(new Set(local.platform.keys.map((k) => k.organizationId)).size).toBe(2);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(none.status).toBe(401);
  });

  it('lists a chosen key by its first four characters only', async () => {
    const listed = await local.api('GET', '/api/v1/api-keys', { key: chosen });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([expect.objectContaining({ prefix: 'my-o…' })]);
    expect(JSON.stringify(listed.body)).not.toContain(chosen.slice(4));
  });

  it('answers unknown routes with the fallback envelope', async () => {
    // Act
    const res = await local.api('GET', '/api/v1/no-such-thing');
    // Assess
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  });

  it('installs its queue runner as the queue port and sets the local environment', () => {
    // Assess
    const sent = jest.spyOn(local.platform.queue, 'send').mockResolvedValue();
    void queue().send('api-key-usage', {});
    expect(sent).toHaveBeenCalledWith('api-key-usage', {}, undefined);
    sent.mockRestore();
    expect(process.env).toMatchObject({ RUNTIME: 'local', TABLE_NAME: 'vap-local', PUBLIC_BASE_URL: local.url, DYNAMODB_ENDPOINT: local.platform.dynamoEndpoint });
  });

  it('restores the environment and the queue port on stop', async () => {
    // Act
    await local.stop();
    const after = await fetch(`${local.url}/api/v1/health`).then(
      () => 'answered',
      () => 'refused',
    );
    // Assess
    expect(process.env.TABLE_NAME).toBe(envBefore);
    expect(queue()).not.toBe(local.platform.queue);
    expect(after).toBe('refused');
  });
});

describe('startPlatform with an unusable key in LOCAL_API_KEYS', () => {
  it('refuses to start, naming the key\'s place in the list and never the key', async () => {
    const short = 'tooShort1';
    const spaced = 'has a space inside it';
    const start = startPlatform({ port: 0, inMemory: true, apiKeys: [newKey(), short, spaced], log: () => undefined, env: { LOG_LEVEL: 'SILENT' } });
    await expect(start).rejects.toThrow(/LOCAL_API_KEYS: key 2 of 3 is 9 characters long; a key needs at least 16\.\nLOCAL_API_KEYS: key 3 of 3 may hold only printable ASCII/);
    const message = await start.catch((err: Error) => err.message);
    expect(message).not.toContain(short);
    expect(message).not.toContain(spaced);
  });
});

describe('startPlatform with data on disk', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vap-platform-test-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('generates one key, keeps it (owner-only) and finds it provisioned after a restart', async () => {
    // Prepare
    const options = { port: 0, dataDir, log: () => undefined, env: { LOG_LEVEL: 'SILENT' } };
    // Act
    const first = await startPlatform(options);
    const runtimeWhileRunning = JSON.parse(readFileSync(join(dataDir, RUNTIME_FILE), 'utf8'));
    await first.stop();
    const runtimeAfterStop = existsSync(join(dataDir, RUNTIME_FILE));
    const second = await startPlatform(options);
    const authorized = await fetch(`${second.url}/api/v1/agents`, { headers: { 'x-api-key': second.apiKeys[0]! } });
    await second.stop();
    // Assess
    expect(first.keys).toEqual([expect.objectContaining({ generated: true, created: true })]);
    expect(first.apiKeys[0]).toMatch(/^vap_/);
    expect(readFileSync(join(dataDir, LOCAL_KEY_FILE), 'utf8').trim()).toBe(first.apiKeys[0]);
    expect(statSync(join(dataDir, LOCAL_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(runtimeWhileRunning).toMatchObject({ dynamoEndpoint: first.dynamoEndpoint, tableName: 'vap-local', pid: process.pid });
    expect(runtimeAfterStop).toBe(false);
    expect(second.apiKeys).toEqual(first.apiKeys);
    expect(second.keys[0]).toMatchObject({ created: false, organizationId: first.keys[0]!.organizationId });
    expect(authorized.status).toBe(200);
  });
});
