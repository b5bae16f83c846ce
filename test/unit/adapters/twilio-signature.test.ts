import { twilioSignature, verifyTwilioSignature } from '../../../shared/adapters/telephony/twilio-signature';

// Twilio's documented example ("Validating requests"): auth token 12345, a POST to this URL with these parameters.
const TOKEN = '12345';
const URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const PARAMS = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
const SIGNATURE = '0/KCTR6DLpKmkAf8muzZqo1nDgQ=';

describe('Twilio request signatures', () => {
  it('computes the signature of Twilio\'s documented example', () => {
    expect(twilioSignature(TOKEN, URL, PARAMS)).toBe(SIGNATURE);
  });

  it('matches the helper libraries\' older example too (other caller number)', () => {
    const params = { ...PARAMS, Caller: '+14158675309', From: '+14158675309' };
    expect(twilioSignature(TOKEN, URL, params)).toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
  });

  it('sorts the parameters by name, whatever order they arrive in', () => {
    const reversed = Object.fromEntries(Object.entries(PARAMS).reverse());
    expect(twilioSignature(TOKEN, URL, reversed)).toBe(SIGNATURE);
  });

  it('accepts the genuine signature', () => {
    expect(verifyTwilioSignature(TOKEN, URL, PARAMS, SIGNATURE)).toBe(true);
  });

  it.each([
    ['another auth token', '54321', URL, PARAMS, SIGNATURE],
    ['another URL', TOKEN, 'https://mycompany.com/myapp.php?foo=1&bar=3', PARAMS, SIGNATURE],
    ['http instead of https', TOKEN, URL.replace('https', 'http'), PARAMS, SIGNATURE],
    ['a changed parameter', TOKEN, URL, { ...PARAMS, Digits: '1235' }, SIGNATURE],
    ['an added parameter', TOKEN, URL, { ...PARAMS, CallStatus: 'completed' }, SIGNATURE],
    ['a removed parameter', TOKEN, URL, { ...PARAMS, Digits: undefined as unknown as string }, SIGNATURE],
    ['a tampered signature', TOKEN, URL, PARAMS, '1/KCTR6DLpKmkAf8muzZqo1nDgQ='],
    ['a truncated signature', TOKEN, URL, PARAMS, SIGNATURE.slice(0, -1)],
    ['an empty signature', TOKEN, URL, PARAMS, ''],
    ['an empty auth token', '', URL, PARAMS, SIGNATURE],
  ])('refuses %s', (_what, token, url, params, signature) => {
    const clean = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)) as Record<string, string>;
    expect(verifyTwilioSignature(token, url, clean, signature)).toBe(false);
  });

  it('accepts a signature made over the URL with or without the default port, like Twilio\'s libraries', () => {
    const withPort = 'https://mycompany.com:443/myapp.php?foo=1&bar=2';
    expect(verifyTwilioSignature(TOKEN, withPort, PARAMS, SIGNATURE)).toBe(true);
    expect(verifyTwilioSignature(TOKEN, URL, PARAMS, twilioSignature(TOKEN, withPort, PARAMS))).toBe(true);
    // A non-default port is part of the URL signed: never dropped.
    expect(verifyTwilioSignature(TOKEN, 'https://mycompany.com:8443/myapp.php?foo=1&bar=2', PARAMS, SIGNATURE)).toBe(false);
  });

  it('signs a request with no parameters over the URL alone', () => {
    expect(verifyTwilioSignature(TOKEN, URL, {}, twilioSignature(TOKEN, URL, {}))).toBe(true);
    expect(twilioSignature(TOKEN, URL, {})).not.toBe(SIGNATURE);
  });
});
