import { UnavailableError, UnprocessableError } from '../../errors';
import { readSecretJson } from '../secret-json';
import { parseCallStatusFields } from './status-event';
import type { AvailableNumber, CarrierCall, NumberCapabilities, PlaceCallInput, PlacedCall, PurchasedNumber, SearchQuery, TelephonyPort } from './port';
import { checkTelephony } from '../../access/enforce';
import { phoneRules } from '../../domain/common/phone-field';

/**
 * Twilio's REST API (2010-04-01 for numbers and calls, Pricing v1/v2 for prices), spoken with
 * fetch: Basic auth `AccountSid:AuthToken`, form-encoded bodies, `.json` resources.
 *
 * - search: GET Accounts/{sid}/AvailablePhoneNumbers/{Country}/Local.json (AreaCode, Contains,
 *   PageSize). Twilio lists no prices there, so each listing is priced from Pricing v1
 *   PhoneNumbers/Countries/{Country} (the `local` monthly price) and Pricing v2
 *   Voice/Countries/{Country} (the `local` inbound price; outbound: the longest matching prefix),
 *   cached per container for an hour.
 * - buy: POST Accounts/{sid}/IncomingPhoneNumbers.json (PhoneNumber, VoiceUrl/VoiceMethod POST:
 *   incoming calls to our inbound webhook, and StatusCallback/StatusCallbackMethod POST: their
 *   end, with CallDuration, to our status webhook); the PN… sid is kept.
 * - release: DELETE Accounts/{sid}/IncomingPhoneNumbers/{Sid}.json; a 404 means already released.
 * - placeCall: POST Accounts/{sid}/Calls.json with status callbacks, recording (Record,
 *   RecordingStatusCallback) and, when asked, answering-machine detection
 *   (MachineDetection=DetectMessageEnd, MachineDetectionTimeout; or asynchronous:
 *   MachineDetection=Enable, AsyncAmd=true, AsyncAmdStatusCallback).
 * - fetchCall: GET Accounts/{sid}/Calls/{Sid}.json (status, duration, answered_by); a 404 is
 *   undefined.
 * - outboundPrice: Pricing v2 Voice/Countries/{ISO of the destination}, the longest matching
 *   prefix, cached per container for an hour.
 * - updateCall: POST Accounts/{sid}/Calls/{Sid}.json (Twiml: new instructions, e.g. a transfer's
 *   <Dial>; Url: instructions to fetch, e.g. a queued caller's once a slot frees; or
 *   Status=completed: hang up), for the voice runtime and the calls service.
 * - fetchRecording: GET <RecordingUrl>.wav with the account's Basic auth.
 *
 * Credentials: TWILIO_SECRET_ARN (deployed: a Secrets Manager JSON `{"account_sid","auth_token"}`,
 * read once per container) or TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN (local). Base URLs:
 * TWILIO_API_BASE and TWILIO_PRICING_BASE (tests point them at a local stand-in).
 */
export interface TwilioCredentials {
  accountSid: string;
  authToken: string;
}

export interface TwilioOptions {
  apiBase?: string;
  pricingBase?: string;
  credentials?: () => Promise<TwilioCredentials>;
  timeoutMs?: number;
}

interface TwilioErrorBody {
  code?: number;
  message?: string;
  more_info?: string;
  status?: number;
}

interface TwilioAvailable {
  phone_number: string;
  friendly_name?: string;
  locality?: string | null;
  region?: string | null;
  iso_country?: string;
  capabilities?: Record<string, boolean>;
}

interface Price {
  number_type?: string;
  base_price?: string | number;
  current_price?: string | number;
}

interface CountryPrices {
  monthly: number;
  inbound: number;
  outbound: { prefixes: string[]; price: number }[];
}

/** Twilio error codes that mean "this number cannot be had", not "the request was wrong". */
const NOT_AVAILABLE_CODES = new Set([21422, 21452, 21421]);

let cachedCredentials: Promise<TwilioCredentials> | undefined;

/** No Twilio credentials are configured: the operator's problem (the message names what to set), never the caller's. */
export class TwilioCredentialsMissing extends Error {
  override readonly name = 'TwilioCredentialsMissing';
}

/** Credentials from Secrets Manager (once per container) or the environment. */
export function twilioCredentialsFromEnvironment(): Promise<TwilioCredentials> {
  // Deployed, only `telephony` functions may read the credentials secret (even a cached copy
  // would not exist in another function's container).
  checkTelephony('credentials');
  return (cachedCredentials ??= (async () => {
    const arn = process.env.TWILIO_SECRET_ARN;
    if (arn) {
      const value = (await readSecretJson(arn)) as { account_sid?: string; auth_token?: string };
      if (!value.account_sid || !value.auth_token) throw new Error(`Secret ${arn} must hold JSON {"account_sid": "...", "auth_token": "..."}`);
      return { accountSid: value.account_sid, authToken: value.auth_token };
    }
    const accountSid = process.env.TWILIO_ACCOUNT_SID;
    const authToken = process.env.TWILIO_AUTH_TOKEN;
    if (!accountSid || !authToken) {
      throw new TwilioCredentialsMissing('TELEPHONY_PROVIDER=twilio needs TWILIO_SECRET_ARN (deployed) or TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (local).');
    }
    return { accountSid, authToken };
  })().catch((err) => {
    cachedCredentials = undefined; // a failed read is retried by the next call
    throw err;
  }));
}

/** Forget cached credentials (tests). */
export function resetTwilioCredentials(): void {
  cachedCredentials = undefined;
}

const money = (value: string | number | undefined, decimals: number) => {
  const n = Number(value);
  return Number.isFinite(n) ? Number(Math.abs(n).toFixed(decimals)) : 0;
};

const localPrice = (prices: Price[] | undefined) => (prices ?? []).find((p) => p.number_type === 'local') ?? (prices ?? [])[0];

function capabilities(raw: Record<string, boolean> | undefined): NumberCapabilities {
  const c = Object.fromEntries(Object.entries(raw ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  return { voice: !!c.voice, sms: !!c.sms, mms: !!c.mms };
}

export function twilioCarrier(options: TwilioOptions = {}): TelephonyPort {
  const apiBase = (options.apiBase ?? process.env.TWILIO_API_BASE ?? 'https://api.twilio.com').replace(/\/$/, '');
  const pricingBase = (options.pricingBase ?? process.env.TWILIO_PRICING_BASE ?? 'https://pricing.twilio.com').replace(/\/$/, '');
  const credentials = options.credentials ?? twilioCredentialsFromEnvironment;
  const timeoutMs = options.timeoutMs ?? 8000;
  const priceCache = new Map<string, { prices: CountryPrices; until: number }>();
  const outboundCache = new Map<string, { entries: CountryPrices['outbound']; until: number }>();

  /** One call; a non-2xx answer becomes a TwilioFailure carrying Twilio's error body. */
  async function call<T>(method: string, url: string, form?: URLSearchParams): Promise<{ status: number; body: T }> {
    const { accountSid, authToken } = await credentials();
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`,
          accept: 'application/json',
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: form?.toString(),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw unavailable('The telephony provider could not be reached; retry later', { provider: 'twilio' }, err);
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      body = {};
    }
    if (!response.ok) throw new TwilioFailure(response.status, body as TwilioErrorBody);
    return { status: response.status, body: body as T };
  }

  const account = async () => `${apiBase}/2010-04-01/Accounts/${encodeURIComponent((await credentials()).accountSid)}`;

  async function pricesFor(country: string): Promise<CountryPrices> {
    const hit = priceCache.get(country);
    if (hit && hit.until > Date.now()) return hit.prices;
    const [numbers, voice] = await Promise.all([
      call<{ phone_number_prices?: Price[] }>('GET', `${pricingBase}/v1/PhoneNumbers/Countries/${country}`),
      call<{ inbound_call_prices?: Price[]; outbound_prefix_prices?: (Price & { prefixes?: string[] })[] }>('GET', `${pricingBase}/v2/Voice/Countries/${country}`),
    ]).catch((err) => {
      throw toAppError(err);
    });
    const prices: CountryPrices = {
      monthly: money(localPrice(numbers.body.phone_number_prices)?.current_price, 2),
      inbound: money(localPrice(voice.body.inbound_call_prices)?.current_price, 4),
      outbound: (voice.body.outbound_prefix_prices ?? []).map((p) => ({ prefixes: p.prefixes ?? [], price: money(p.current_price, 4) })),
    };
    priceCache.set(country, { prices, until: Date.now() + 3600_000 });
    return prices;
  }

  function outboundPrice(prices: CountryPrices, e164: string): number {
    const digits = e164.replace(/^\+/, '');
    let best: { length: number; price: number } | undefined;
    for (const entry of prices.outbound) {
      for (const prefix of entry.prefixes) {
        if (digits.startsWith(prefix) && (!best || prefix.length > best.length)) best = { length: prefix.length, price: entry.price };
      }
    }
    if (best) return best.price;
    const all = prices.outbound.map((o) => o.price).filter((p) => p > 0);
    return all.length ? Math.min(...all) : 0;
  }

  async function search(query: SearchQuery): Promise<AvailableNumber[]> {
    const nanp = query.country === 'US' || query.country === 'CA';
    const params = new URLSearchParams({ PageSize: String(query.limit) });
    // AreaCode applies to US and Canada only; elsewhere the area code is matched on the result.
    if (query.areaCode && nanp) params.set('AreaCode', query.areaCode);
    if (query.contains) params.set('Contains', query.contains);
    let listed: TwilioAvailable[];
    try {
      const { body } = await call<{ available_phone_numbers?: TwilioAvailable[] }>('GET', `${await account()}/AvailablePhoneNumbers/${query.country}/Local.json?${params}`);
      listed = body.available_phone_numbers ?? [];
    } catch (err) {
      // Twilio answers 404 for a country it sells no local numbers in: nothing to offer.
      if (err instanceof TwilioFailure && err.status === 404) return [];
      throw toAppError(err);
    }
    if (query.areaCode && !nanp) {
      const prefix = `+${(await phoneRules()).callingCodeOf(query.country)}${query.areaCode}`;
      listed = listed.filter((n) => n.phone_number.startsWith(prefix));
    }
    if (!listed.length) return [];
    const prices = await pricesFor(query.country);
    return listed.slice(0, query.limit).map((n) => ({
      phone_number: n.phone_number,
      country: n.iso_country ?? query.country,
      locality: n.locality ?? '',
      region: n.region ?? '',
      price: prices.monthly,
      per_minute_price_inbound: prices.inbound,
      per_minute_price_outbound: outboundPrice(prices, n.phone_number),
      capabilities: capabilities(n.capabilities),
    }));
  }

  return {
    name: 'twilio',

    searchAvailable: search,

    async quote(phoneNumber) {
      const parsed = (await phoneRules()).partsOfE164(phoneNumber);
      if (!parsed) return undefined;
      const found = await search({ country: parsed.country, contains: parsed.nationalNumber, limit: 20 });
      return found.find((n) => n.phone_number === phoneNumber);
    },

    async purchase(phoneNumber, options = {}): Promise<PurchasedNumber> {
      const form = new URLSearchParams({ PhoneNumber: phoneNumber });
      if (options.voiceUrl) {
        form.set('VoiceUrl', options.voiceUrl);
        form.set('VoiceMethod', 'POST');
      }
      // Twilio reports an incoming call's end only to the number's StatusCallback (the `completed`
      // event, with CallDuration): without it the platform would hear nothing from the carrier.
      if (options.statusCallbackUrl) {
        form.set('StatusCallback', options.statusCallbackUrl);
        form.set('StatusCallbackMethod', 'POST');
      }
      try {
        const { body } = await call<{ sid: string; phone_number: string }>('POST', `${await account()}/IncomingPhoneNumbers.json`, form);
        return { phoneNumber: body.phone_number ?? phoneNumber, providerRef: body.sid };
      } catch (err) {
        throw toAppError(err, phoneNumber);
      }
    },

    async release(number) {
      try {
        await call('DELETE', `${await account()}/IncomingPhoneNumbers/${encodeURIComponent(number.providerRef)}.json`);
      } catch (err) {
        if (err instanceof TwilioFailure && err.status === 404) return; // already released
        throw toAppError(err);
      }
    },

    async placeCall(input: PlaceCallInput): Promise<PlacedCall> {
      const form = new URLSearchParams({ To: input.to, From: input.from });
      if (input.answerUrl) form.set('Url', input.answerUrl);
      else form.set('Twiml', '<Response><Pause length="1"/></Response>');
      if (input.statusCallbackUrl) {
        form.set('StatusCallback', input.statusCallbackUrl);
        for (const event of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', event);
      }
      if (input.timeoutSeconds) form.set('Timeout', String(input.timeoutSeconds));
      if (input.recordingCallbackUrl) {
        form.set('Record', 'true');
        form.set('RecordingStatusCallback', input.recordingCallbackUrl);
        form.set('RecordingStatusCallbackEvent', 'completed');
      }
      // Synchronous detection: Twilio tells a person from a machine before it runs the call
      // instructions (whose request carries AnsweredBy, passed on to the voice runtime), waiting
      // for a machine's greeting to end so a message is left after the beep; the status
      // callbacks carry AnsweredBy too (a machine ends as voicemail).
      if (input.detectMachine && input.asyncMachineDetection) {
        // Asynchronous: the instructions are requested at once (the callee hears them, not seconds
        // of silence) and the result goes to its own callback; `Enable` answers as soon as it
        // knows (a machine is hung up on, no message is left).
        form.set('MachineDetection', 'Enable');
        form.set('AsyncAmd', 'true');
        form.set('AsyncAmdStatusCallback', input.asyncMachineDetection.callbackUrl);
        form.set('AsyncAmdStatusCallbackMethod', 'POST');
        if (input.machineDetectionTimeoutMs) form.set('MachineDetectionTimeout', String(Math.min(59, Math.max(3, Math.round(input.machineDetectionTimeoutMs / 1000)))));
      } else if (input.detectMachine) {
        form.set('MachineDetection', 'DetectMessageEnd');
        if (input.machineDetectionTimeoutMs) form.set('MachineDetectionTimeout', String(Math.min(59, Math.max(3, Math.round(input.machineDetectionTimeoutMs / 1000)))));
      }
      try {
        const { body } = await call<{ sid: string; status: string }>('POST', `${await account()}/Calls.json`, form);
        return { providerCallId: body.sid, status: parseCallStatusFields({ CallSid: body.sid, CallStatus: body.status ?? 'queued' }).status, events: [] };
      } catch (err) {
        throw toAppError(err);
      }
    },

    parseStatusEvent: parseCallStatusFields,

    /** A live call's new instructions (Twiml) or its end (Status=completed): POST Calls/{Sid}.json. */
    async updateCall(providerCallId, change) {
      const form = 'twiml' in change ? new URLSearchParams({ Twiml: change.twiml }) : 'url' in change ? new URLSearchParams({ Url: change.url, Method: 'POST' }) : new URLSearchParams({ Status: 'completed' });
      try {
        await call('POST', `${await account()}/Calls/${encodeURIComponent(providerCallId)}.json`, form);
      } catch (err) {
        throw toAppError(err);
      }
    },

    async fetchCall(providerCallId): Promise<CarrierCall | undefined> {
      try {
        const { body } = await call<{ sid: string; status: string; duration?: string | null; answered_by?: string | null }>('GET', `${await account()}/Calls/${encodeURIComponent(providerCallId)}.json`);
        const duration = body.duration === null || body.duration === undefined ? undefined : Number(body.duration);
        return {
          providerCallId: body.sid ?? providerCallId,
          status: parseCallStatusFields({ CallSid: body.sid ?? providerCallId, CallStatus: body.status }).status,
          ...(duration !== undefined && Number.isFinite(duration) ? { durationSec: duration } : {}),
          ...(body.answered_by ? { answeredBy: body.answered_by } : {}),
        };
      } catch (err) {
        if (err instanceof TwilioFailure && err.status === 404) return undefined;
        throw toAppError(err);
      }
    },

    async outboundPrice(to: string): Promise<number | undefined> {
      const parsed = (await phoneRules()).partsOfE164(to);
      if (!parsed) return undefined;
      const hit = outboundCache.get(parsed.country);
      let entries = hit && hit.until > Date.now() ? hit.entries : undefined;
      if (!entries) {
        try {
          const { body } = await call<{ outbound_prefix_prices?: (Price & { prefixes?: string[] })[] }>('GET', `${pricingBase}/v2/Voice/Countries/${parsed.country}`);
          entries = (body.outbound_prefix_prices ?? []).map((p) => ({ prefixes: p.prefixes ?? [], price: money(p.current_price, 4) }));
        } catch (err) {
          if (err instanceof TwilioFailure && err.status === 404) return undefined;
          throw toAppError(err);
        }
        outboundCache.set(parsed.country, { entries, until: Date.now() + 3600_000 });
      }
      if (!entries.length) return undefined;
      return outboundPrice({ monthly: 0, inbound: 0, outbound: entries }, to);
    },

    /** The recording as WAV: Twilio serves a recording's media at its RecordingUrl plus `.wav`, behind the account's Basic auth. */
    async fetchRecording(recordingUrl: string): Promise<Buffer> {
      const { accountSid, authToken } = await credentials();
      const url = /\.(wav|mp3)$/.test(recordingUrl) ? recordingUrl : `${recordingUrl}.wav`;
      let response: Response;
      try {
        response = await fetch(url, {
          headers: { authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}` },
          signal: AbortSignal.timeout(Math.max(timeoutMs, 30_000)),
        });
      } catch (err) {
        throw unavailable('The recording could not be downloaded from the telephony provider; retry later', { provider: 'twilio' }, err);
      }
      if (!response.ok) throw toAppError(new TwilioFailure(response.status, {}));
      return Buffer.from(await response.arrayBuffer());
    },
  };
}

/** A 503 that keeps what caused it, for the logs. */
function unavailable(message: string, details: Record<string, unknown>, cause: unknown): UnavailableError {
  return Object.assign(new UnavailableError(message, details), { cause });
}

/** A non-2xx answer from Twilio, before it is mapped to one of our errors. */
export class TwilioFailure extends Error {
  constructor(readonly status: number, readonly body: TwilioErrorBody) {
    super(`Twilio answered ${status}${body.code ? ` (code ${body.code})` : ''}: ${body.message ?? ''}`);
  }
}

/**
 * Twilio's error JSON (`code`, `message`, `more_info`, `status`) → our typed errors: a number
 * that cannot be had is 422; any other refusal of the request is 422 with Twilio's code; our
 * credentials refused (401/403), throttling (429) and Twilio's own failures (5xx) are 503,
 * because the caller can do nothing about them but retry.
 */
export function toAppError(err: unknown, phoneNumber?: string): Error {
  if (!(err instanceof TwilioFailure)) return err as Error;
  const details = { provider: 'twilio', provider_code: err.body.code ?? null, ...(phoneNumber ? { phone_number: phoneNumber } : {}) };
  if (err.status === 401 || err.status === 403) return unavailable('The telephony provider rejected the platform\'s credentials', details, err);
  if (err.status === 429 || err.status >= 500) return unavailable('The telephony provider is unavailable; retry later', details, err);
  if (err.body.code !== undefined && NOT_AVAILABLE_CODES.has(err.body.code)) return new UnprocessableError('The number is not available', details);
  return new UnprocessableError(`The telephony provider refused the request: ${err.body.message ?? `HTTP ${err.status}`}`, details);
}
