import { v7 as uuidv7 } from 'uuid';
import { twilioSignature } from '../shared/adapters/telephony/twilio-signature';

/** What several benches share: the platform's JSON API as a bench calls it, and the settings that point the platform at the Twilio stand-in. */

/**
 * `api(method, path, body?)` on the platform at `baseUrl` with the API key: the parsed JSON
 * answer. `strict`: any status but 200 throws, naming the request and the answer.
 */
export function benchApi(baseUrl: string, key: string, options: { strict?: boolean } = {}) {
  return async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(`${baseUrl}${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as any;
    if (options.strict && res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}

/** The platform's settings for a Twilio stand-in (test/support/twilio-carrier.ts) as its carrier. */
export const twilioEnv = (twilio: { url: string; accountSid: string; authToken: string }): Record<string, string> => ({
  TELEPHONY_PROVIDER: 'twilio',
  TWILIO_API_BASE: twilio.url,
  TWILIO_PRICING_BASE: twilio.url,
  TWILIO_ACCOUNT_SID: twilio.accountSid,
  TWILIO_AUTH_TOKEN: twilio.authToken,
});

/** When `mod` is the file node was asked to run (`npx tsx bench/x.ts`): runs its bench, prints the Markdown and exits (1 with the error). */
export function runAsScript(mod: NodeModule, bench: () => Promise<string>): void {
  if (require.main !== mod) return;
  bench().then((md) => {
    console.log(md);
    process.exit(0);
  }, (err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

/**
 * Twilio's VoiceUrl request for a new incoming call to `to` on the platform at `baseUrl`, signed
 * with `authToken`: its CallSid and the time to the whole answer; throws unless the answer streams the call.
 */
export async function ringInbound(baseUrl: string, auth: { accountSid: string; authToken: string }, to: string): Promise<{ sid: string; ms: number }> {
  const path = '/api/v1/telephony/twilio/inbound';
  const params = { AccountSid: auth.accountSid, CallSid: `CA${uuidv7().replace(/-/g, '')}`, From: '+14155550142', To: to, CallStatus: 'ringing', Direction: 'inbound', ApiVersion: '2010-04-01' };
  const t0 = performance.now();
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(auth.authToken, `${baseUrl}${path}`, params) },
    body: new URLSearchParams(params).toString(),
  });
  const twiml = await res.text();
  const ms = performance.now() - t0;
  if (!twiml.includes('<Stream')) throw new Error(`the incoming call was not answered: ${res.status} ${twiml}`);
  return { sid: params.CallSid, ms };
}
