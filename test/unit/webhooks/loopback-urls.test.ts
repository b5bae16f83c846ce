/**
 * Loopback targets (issue 42, section 7): a number's `inbound_webhook_url` and a webhook endpoint's
 * `url` follow the egress guard's rule (shared/adapters/egress.ts): a loopback host — `localhost`,
 * 127.0.0.0/8, ::1 — is taken only with ALLOW_LOOPBACK_FETCH=true and is otherwise refused at once
 * (a 400), never accepted and then refused on every call; every such refusal names the setting.
 */
import { checkUrlShape, EgressRefusedError, isLoopbackHost } from '../../../shared/adapters/egress';
import { resetConfig } from '../../../shared/config';
import { ValidationError } from '../../../shared/errors';
import { inboundWebhookChange, inboundWebhookUrlProblem } from '../../../shared/domain/phone-numbers/inbound-webhook';
import { assertWebhookUrl, webhookUrlProblem } from '../../../shared/domain/webhooks/url';

const saved = { ...process.env };
const runtime = (allowLoopback: boolean) => {
  Object.assign(process.env, { TABLE_NAME: 't', BUCKET_NAME: 'b', RUNTIME: 'local', ALLOW_LOOPBACK_FETCH: String(allowLoopback) });
  resetConfig();
};
afterAll(() => {
  process.env = saved;
  resetConfig();
});

const LOOPBACK = ['http://localhost:4000/route', 'http://LOCALHOST./route', 'http://app.localhost:4000/route', 'http://127.0.0.1:4000/route', 'http://127.8.9.10/route', 'http://[::1]:4000/route', 'https://localhost/route'];
const HINT = /ALLOW_LOOPBACK_FETCH=true/;

describe('loopback hosts', () => {
  it('are named without resolving them', () => {
    for (const host of ['localhost', 'LOCALHOST', 'localhost.', 'a.localhost', '127.0.0.1', '127.255.1.2', '[::1]', '::ffff:127.0.0.1']) expect([host, isLoopbackHost(host)]).toEqual([host, true]);
    for (const host of ['example.com', 'localhost.example.com', 'mylocalhost', '10.0.0.1', '[::2]']) expect([host, isLoopbackHost(host)]).toEqual([host, false]);
  });
});

describe('without ALLOW_LOOPBACK_FETCH', () => {
  beforeAll(() => runtime(false));

  it.each(LOOPBACK)('a number\'s inbound webhook %s is refused at once, naming ALLOW_LOOPBACK_FETCH=true', async (url) => {
    expect(inboundWebhookUrlProblem(url)).toMatch(HINT);
    // What buy, import, PATCH and PUT all run: a 400 naming the field.
    const err = await inboundWebhookChange({ inbound_webhook_url: url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).details).toEqual({ fields: [{ path: 'inbound_webhook_url', message: expect.stringMatching(HINT) }] });
  });

  it.each(LOOPBACK)('a webhook endpoint %s is refused at once, naming ALLOW_LOOPBACK_FETCH=true', async (url) => {
    expect(webhookUrlProblem(url)).toMatch(HINT);
    const err = await assertWebhookUrl(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toMatch(/^url: .*set ALLOW_LOOPBACK_FETCH=true to allow loopback locally/);
  });

  it('the egress guard refuses localhost before any lookup, as it refuses 127.0.0.1', () => {
    expect(() => checkUrlShape('http://localhost:3000/')).toThrow(new EgressRefusedError('http://localhost:3000/', 'localhost is a loopback host (set ALLOW_LOOPBACK_FETCH=true to allow loopback locally)'));
    expect(() => checkUrlShape('http://127.0.0.1:3000/')).toThrow(new EgressRefusedError('http://127.0.0.1:3000/', '127.0.0.1 is a loopback address (set ALLOW_LOOPBACK_FETCH=true to allow loopback locally)'));
    // Other refusals are not loopback's: no hint.
    expect(() => checkUrlShape('http://10.0.0.1/')).toThrow(new EgressRefusedError('http://10.0.0.1/', '10.0.0.1 is a private address'));
  });
});

describe('with ALLOW_LOOPBACK_FETCH=true (the local runtime)', () => {
  beforeAll(() => runtime(true));

  it.each(LOOPBACK)('a number\'s inbound webhook %s is taken, http or https', (url) => {
    expect(inboundWebhookUrlProblem(url)).toBeUndefined();
  });

  it('http to a host that is not loopback is still refused', () => {
    expect(inboundWebhookUrlProblem('http://example.com/route')).toBe('must use https (http only to a loopback host on the local runtime)');
    expect(inboundWebhookUrlProblem('http://10.0.0.7/route')).toBe('10.0.0.7 is a private address');
  });

  it('a webhook endpoint on localhost or 127.0.0.1 is taken', async () => {
    expect(webhookUrlProblem('http://localhost:4000/hook')).toBeUndefined();
    await expect(assertWebhookUrl('http://127.0.0.1:4000/hook')).resolves.toBe('http://127.0.0.1:4000/hook');
  });
});
