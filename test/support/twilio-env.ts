import type { IncomingMessage } from 'node:http';
import { resetTelephony } from '../../shared/adapters/telephony';
import { resetTwilioCredentials } from '../../shared/adapters/telephony/twilio';
import { resetConfig } from '../../shared/config';

/**
 * A test file's Twilio settings (TELEPHONY_PROVIDER, TWILIO_API_BASE, the account's SID and token,
 * the public URL…): `set` puts them in the environment, remembering what was there, and makes the
 * config, the telephony adapter and the Twilio credentials read them again; `restore` puts the
 * environment back the same way.
 */
export function twilioEnvironment() {
  const saved: Record<string, string | undefined> = {};
  const reread = () => {
    resetConfig();
    resetTelephony();
    resetTwilioCredentials();
  };
  return {
    set(env: Record<string, string>) {
      for (const [k, v] of Object.entries(env)) {
        if (!(k in saved)) saved[k] = process.env[k];
        process.env[k] = v;
      }
      reread();
    },
    restore() {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      reread();
    },
  };
}

/** Whether a request to a Twilio REST stand-in carries the account's Basic credentials (`AccountSid:AuthToken`). */
export const twilioAuthorized = (req: IncomingMessage, sid: string, token: string) =>
  req.headers.authorization === `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}`;
