import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { twilioCarrier } from '../../shared/adapters/telephony/twilio';
import type { TelephonyPort } from '../../shared/adapters/telephony/port';
import { UnavailableError, UnprocessableError } from '../../shared/errors';
import { rejection } from '../support/rejection';
import { readBody } from '../support/stand-in';

/**
 * The Twilio adapter against a local stand-in that speaks Twilio's documented shapes:
 * 2010-04-01 AvailablePhoneNumbers/Local.json, IncomingPhoneNumbers.json, Calls.json, and the
 * Pricing v1 PhoneNumbers / v2 Voice country resources, with Twilio's error JSON.
 */
const SID = 'AC00000000000000000000000000000001';
const TOKEN = 'test-auth-token';

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
  authorization?: string;
  contentType?: string;
}

const twilioError = (code: number, message: string, status: number) => ({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });

const available = [
  {
    friendly_name: '(415) 216-8467', phone_number: '+14152168467', lata: '722', rate_center: 'SNFC CNTL', latitude: '37.77', longitude: '-122.41',
    locality: 'San Francisco', region: 'CA', postal_code: '94105', iso_country: 'US', address_requirements: 'none', beta: false,
    capabilities: { voice: true, SMS: true, MMS: true, fax: false },
  },
  {
    friendly_name: '(415) 283-4846', phone_number: '+14152834846', locality: 'San Francisco', region: 'CA', iso_country: 'US',
    capabilities: { voice: true, SMS: false, MMS: false, fax: false },
  },
];

let server: Server;
let base: string;
const seen: Seen[] = [];
/** What the stand-in answers next for a path, when a test wants an error. */
const overrides = new Map<string, { status: number; body: unknown }>();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://stand-in');
    const form = new URLSearchParams(await readBody(req));
    seen.push({ method: req.method!, path: url.pathname, query: url.searchParams, form, authorization: req.headers.authorization, contentType: req.headers['content-type'] });
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const override = overrides.get(`${req.method} ${url.pathname}`);
    if (override) return send(override.status, override.body);
    if (req.headers.authorization !== `Basic ${Buffer.from(`${SID}:${TOKEN}`).toString('base64')}`) {
      return send(401, twilioError(20003, 'Authenticate', 401));
    }
    const account = `/2010-04-01/Accounts/${SID}`;
    if (req.method === 'GET' && url.pathname === `${account}/AvailablePhoneNumbers/US/Local.json`) {
      const contains = url.searchParams.get('Contains');
      const list = available.filter((n) => !contains || n.phone_number.includes(contains)).slice(0, Number(url.searchParams.get('PageSize') ?? 50));
      return send(200, { available_phone_numbers: list, end: list.length - 1, first_page_uri: url.pathname, next_page_uri: null, page: 0, page_size: list.length, uri: url.pathname });
    }
    if (req.method === 'GET' && url.pathname === `${account}/AvailablePhoneNumbers/ZZ/Local.json`) {
      return send(404, twilioError(20404, 'The requested resource was not found', 404));
    }
    if (req.method === 'GET' && url.pathname === '/v1/PhoneNumbers/Countries/US') {
      return send(200, {
        country: 'United States', iso_country: 'US', price_unit: 'USD', url: 'https://pricing.twilio.com/v1/PhoneNumbers/Countries/US',
        phone_number_prices: [{ number_type: 'local', base_price: '1.15', current_price: '1.15' }, { number_type: 'toll free', base_price: '2.15', current_price: '2.15' }],
      });
    }
    if (req.method === 'GET' && url.pathname === '/v2/Voice/Countries/US') {
      return send(200, {
        country: 'United States', iso_country: 'US', price_unit: 'USD', url: 'https://pricing.twilio.com/v2/Voice/Countries/US',
        inbound_call_prices: [{ number_type: 'local', base_price: '0.0085', current_price: '0.0085' }, { number_type: 'toll free', base_price: '0.022', current_price: '0.022' }],
        outbound_prefix_prices: [
          { prefixes: ['1'], friendly_name: 'United States', base_price: '0.0140', current_price: '0.0140' },
          { prefixes: ['1907'], friendly_name: 'United States - Alaska', base_price: '0.0950', current_price: '0.0950' },
        ],
      });
    }
    if (req.method === 'POST' && url.pathname === `${account}/IncomingPhoneNumbers.json`) {
      const number = form.get('PhoneNumber');
      if (number !== '+14152168467') return send(400, twilioError(21422, 'PhoneNumber is not available', 400));
      return send(201, { sid: 'PN0123456789abcdef0123456789abcdef', account_sid: SID, phone_number: number, friendly_name: '(415) 216-8467', status: 'in-use', date_created: 'Tue, 01 Jul 2025 10:00:00 +0000' });
    }
    if (req.method === 'DELETE' && url.pathname === `${account}/IncomingPhoneNumbers/PN0123456789abcdef0123456789abcdef.json`) return send(204);
    if (req.method === 'DELETE' && url.pathname.startsWith(`${account}/IncomingPhoneNumbers/`)) return send(404, twilioError(20404, 'The requested resource was not found', 404));
    if (req.method === 'POST' && url.pathname === `${account}/Calls.json`) {
      return send(201, { sid: 'CA0123456789abcdef0123456789abcdef', status: 'queued', to: form.get('To'), from: form.get('From') });
    }
    send(404, twilioError(20404, 'The requested resource was not found', 404));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  seen.length = 0;
  overrides.clear();
});

const carrier = (token = TOKEN): TelephonyPort =>
  twilioCarrier({ apiBase: base, pricingBase: base, credentials: async () => ({ accountSid: SID, authToken: token }) });


describe('the Twilio adapter', () => {
  it('searches local numbers with AreaCode, Contains and PageSize, Basic auth, and prices them from the Pricing API', async () => {
    const found = await carrier().searchAvailable({ country: 'US', areaCode: '415', contains: '2168', limit: 5 });
    expect(found).toEqual([
      {
        phone_number: '+14152168467', country: 'US', locality: 'San Francisco', region: 'CA',
        price: 1.15, per_minute_price_inbound: 0.0085, per_minute_price_outbound: 0.014,
        capabilities: { voice: true, sms: true, mms: true },
      },
    ]);
    const search = seen.find((s) => s.path.endsWith('/AvailablePhoneNumbers/US/Local.json'))!;
    expect(Object.fromEntries(search.query)).toEqual({ AreaCode: '415', Contains: '2168', PageSize: '5' });
    expect(search.authorization).toBe(`Basic ${Buffer.from(`${SID}:${TOKEN}`).toString('base64')}`);
    expect(seen.map((s) => s.path)).toEqual(expect.arrayContaining(['/v1/PhoneNumbers/Countries/US', '/v2/Voice/Countries/US']));
  });

  it('answers an empty list for a country Twilio does not sell in (404)', async () => {
    expect(await carrier().searchAvailable({ country: 'ZZ', limit: 5 })).toEqual([]);
  });

  it('quotes one number from a search', async () => {
    expect((await carrier().quote('+14152834846'))?.capabilities).toEqual({ voice: true, sms: false, mms: false });
    expect(await carrier().quote('+14155550123')).toBeUndefined();
  });

  it('buys with a form-encoded POST to IncomingPhoneNumbers.json and keeps the PN sid', async () => {
    const bought = await carrier().purchase('+14152168467');
    expect(bought).toEqual({ phoneNumber: '+14152168467', providerRef: 'PN0123456789abcdef0123456789abcdef' });
    const post = seen.find((s) => s.method === 'POST')!;
    expect(post.path).toBe(`/2010-04-01/Accounts/${SID}/IncomingPhoneNumbers.json`);
    expect(post.contentType).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(post.form)).toEqual({ PhoneNumber: '+14152168467' });
  });

  it('maps "not available" (21422) to 422 and bad credentials to 503', async () => {
    const taken = await rejection(carrier().purchase('+14152834846'));
    expect(taken).toBeInstanceOf(UnprocessableError);
    expect((taken as UnprocessableError).details).toMatchObject({ provider: 'twilio', provider_code: 21422, phone_number: '+14152834846' });
    const denied = await rejection(carrier('wrong-token').searchAvailable({ country: 'US', limit: 1 }));
    expect(denied).toBeInstanceOf(UnavailableError);
    expect((denied as UnavailableError).details).toMatchObject({ provider_code: 20003 });
  });

  it('maps Twilio outages (5xx, 429) and unreachable hosts to 503', async () => {
    overrides.set(`POST /2010-04-01/Accounts/${SID}/IncomingPhoneNumbers.json`, { status: 503, body: twilioError(20503, 'Service unavailable', 503) });
    expect(await rejection(carrier().purchase('+14152168467'))).toBeInstanceOf(UnavailableError);
    const unreachable = twilioCarrier({ apiBase: 'http://127.0.0.1:9', pricingBase: base, credentials: async () => ({ accountSid: SID, authToken: TOKEN }) });
    expect(await rejection(unreachable.purchase('+14152168467'))).toBeInstanceOf(UnavailableError);
  });

  it('releases with DELETE IncomingPhoneNumbers/{Sid}.json; an unknown sid counts as released', async () => {
    await carrier().release({ phoneNumber: '+14152168467', providerRef: 'PN0123456789abcdef0123456789abcdef' });
    await carrier().release({ phoneNumber: '+14152168467', providerRef: 'PNffffffffffffffffffffffffffffffff' });
    expect(seen.filter((s) => s.method === 'DELETE').map((s) => s.path)).toEqual([
      `/2010-04-01/Accounts/${SID}/IncomingPhoneNumbers/PN0123456789abcdef0123456789abcdef.json`,
      `/2010-04-01/Accounts/${SID}/IncomingPhoneNumbers/PNffffffffffffffffffffffffffffffff.json`,
    ]);
  });

  it('places a call through Calls.json with status callbacks', async () => {
    const placed = await carrier().placeCall({ from: '+14152168467', to: '+14155550199', answerUrl: 'https://example.com/twiml', statusCallbackUrl: 'https://example.com/status' });
    expect(placed).toEqual({ providerCallId: 'CA0123456789abcdef0123456789abcdef', status: 'queued', events: [] });
    const post = seen.find((s) => s.path.endsWith('/Calls.json'))!;
    expect(post.form.get('To')).toBe('+14155550199');
    expect(post.form.get('Url')).toBe('https://example.com/twiml');
    expect(post.form.getAll('StatusCallbackEvent')).toEqual(['initiated', 'ringing', 'answered', 'completed']);
  });
});
