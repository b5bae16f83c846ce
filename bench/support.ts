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
