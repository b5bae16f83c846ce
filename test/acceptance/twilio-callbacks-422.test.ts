/**
 * Black-box: Twilio's inbound and recording callbacks, signed as Twilio signs them, answer a form
 * that lacks what they need with the 422 docs/openapi.json declares (issue 42, section 7): the
 * error envelope's `details.fields` as objects `{ path, message, in }`, as every other validation
 * error has them — not a list of names. Every answer goes through the acceptance tier's contract
 * check (test/support/contract.ts), which is held here explicitly too.
 */
import { twilioSignature } from '../../shared/adapters/telephony/twilio-signature';
import { contract } from '../support/contract';
import { usePlatform } from '../support/platform';

const SID = 'AC0000000000000000000000000000fe42';
const TOKEN = 'callbacks-422-auth-token';
const local = usePlatform({ env: { TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN } });

const ids = 'organization_id=01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90&call_id=01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f91';

/** POSTs Twilio's form to `path`, signed over the platform's URL and the form, as Twilio does. */
async function signed(path: string, params: Record<string, string>) {
  const res = await local().api('POST', path, {
    key: null,
    body: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${local().url}${path}`, params) },
  });
  const violations = contract().check({ method: 'POST', path, status: res.status, contentType: res.headers.get('content-type'), text: JSON.stringify(res.body) });
  return { ...res, violations };
}

it('an incoming call without To and From is a 422 whose fields are {path, message, in}, as the document says', async () => {
  const res = await signed('/api/v1/telephony/twilio/inbound', { AccountSid: SID, CallSid: 'CA00000000000000000000000000000042', CallStatus: 'ringing', Direction: 'inbound' });
  expect(res.status).toBe(422);
  expect(res.violations).toEqual([]);
  expect(res.body.error).toEqual({
    code: 'UNPROCESSABLE',
    message: 'To, From are required',
    details: { fields: [{ path: 'To', message: 'is required', in: 'body' }, { path: 'From', message: 'is required', in: 'body' }] },
  });
});

it('a completed recording without RecordingUrl is a 422 naming that field only, as the document says', async () => {
  const res = await signed(`/api/v1/telephony/twilio/recording?${ids}`, { AccountSid: SID, CallSid: 'CA00000000000000000000000000000042', RecordingStatus: 'completed' });
  expect(res.status).toBe(422);
  expect(res.violations).toEqual([]);
  expect(res.body.error).toEqual({ code: 'UNPROCESSABLE', message: 'RecordingUrl is required', details: { fields: [{ path: 'RecordingUrl', message: 'is required', in: 'body' }] } });
});
