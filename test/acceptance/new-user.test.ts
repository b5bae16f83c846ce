/**
 * Black-box: what a new user hit with the default local setup (issue 36.4), each as they met it.
 */
import { logger } from '../../shared/logger';
import { usePlatform } from '../support/platform';

const local = usePlatform();
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' }, key: null });

describe('Twilio callbacks with simulated telephony and no Twilio credentials', () => {
  it('answer 401 (the request cannot be verified), never 500, and the log says what to set', async () => {
    const errors = jest.spyOn(logger, 'error');
    try {
      const ids = 'organization_id=01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90&call_id=01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f91';
      for (const path of [`/api/v1/telephony/twilio/status?${ids}`, `/api/v1/telephony/twilio/recording?${ids}`, `/api/v1/telephony/twilio/twiml?${ids}`, '/api/v1/telephony/twilio/inbound', `/api/v1/telephony/twilio/relay-action?${ids}`]) {
        const res = await api('POST', path, form({ CallSid: 'CA1', CallStatus: 'completed', To: '+14155550100', From: '+14155550101' }));
        expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' });
        expect(res.body.error.message).toMatch(/X-Twilio-Signature cannot be verified/);
      }
      const said = errors.mock.calls.map((c) => String(c[0]));
      expect(said.filter((line) => /Twilio callback was refused/.test(line))).toHaveLength(5);
      expect(said.join('\n')).toMatch(/Set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN \(local\) or TWILIO_SECRET_ARN \(deployed\)/);
    } finally {
      errors.mockRestore();
    }
  });
});
