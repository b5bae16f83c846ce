import { Webhook } from 'standardwebhooks';
import { idBoundOf } from '../../../shared/domain/events/service';
import { newWebhookSecret, webhookHeaders } from '../../../shared/domain/webhooks/signature';

describe('webhook signatures', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(a).not.toBe(b);
  });

  it('signs so that the standardwebhooks library verifies with either secret while two sign', () => {
    // Prepare
    const [fresh, old] = [newWebhookSecret(), newWebhookSecret()];
    const body = JSON.stringify({ id: 'evt', type: 'ping', data: { ü: 1 } });
    // Act
    const headers = webhookHeaders([fresh, old], 'evt', Math.floor(Date.now() / 1000), body);
    // Assess
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(fresh).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(old).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(fresh).verify(`${body} `, headers)).toThrow();
  });
});

describe('event id bounds', () => {
  it('brackets every UUID v7 id created in the instant', () => {
    const at = '2031-05-06T07:08:09.010Z';
    const hex = Date.parse(at).toString(16).padStart(12, '0');
    const id = `${hex.slice(0, 8)}-${hex.slice(8)}-7abc-8def-0123456789ab`;
    expect(idBoundOf(at, false) < id).toBe(true);
    expect(idBoundOf(at, true) > id).toBe(true);
    expect(idBoundOf('2031-05-06T07:08:09.011Z', false) > id).toBe(true);
  });
});
