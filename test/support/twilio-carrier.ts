import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { twilioSignature } from '../../shared/adapters/telephony/twilio-signature';
import { readBody } from './stand-in';
import { RelayClient } from './relay-client';
import { TwilioMediaClient } from './twilio-media-client';

/**
 * A Twilio stand-in for numbers and incoming calls that behaves as Twilio's references say, not
 * kinder:
 *
 * - REST (Basic auth `AccountSid:AuthToken`, Twilio's error JSON otherwise): AvailablePhoneNumbers
 *   `US/Local.json`, Pricing v1 `PhoneNumbers/Countries/US` and v2 `Voice/Countries/US`,
 *   IncomingPhoneNumbers (create with VoiceUrl/VoiceMethod/StatusCallback/StatusCallbackMethod,
 *   fetch, update, delete), and `Calls/{Sid}.json` on a live call (`Status=completed` hangs up;
 *   `Twiml` replaces the instructions: `<Dial>` leaves the stream for the dialled party,
 *   `<Hangup/>` ends the call).
 * - An incoming call (`incomingCall`) requests the number's VoiceUrl, signed with
 *   X-Twilio-Signature, and runs what it answers: `<Reject/>` ends it unanswered;
 *   `<Connect><Stream>` opens a Media Stream (TwilioMediaClient) with the `<Parameter>`s; other
 *   TwiML is played verb by verb (below).
 * - When a call ends, its `stop` reaches the stream at once, and the `completed` status
 *   callback, with `CallDuration` (whole seconds from the answer), goes to the number's
 *   StatusCallback **only when the number has one**: Twilio sends no status callback for an
 *   incoming call to a number without it.
 *
 * - Calls placed through `Calls.json` (Url, StatusCallback, StatusCallbackEvent, Timeout,
 *   MachineDetection `Enable`/`DetectMessageEnd`, MachineDetectionTimeout 3–59, AsyncAmd,
 *   AsyncAmdStatusCallback; another value is refused with 21234): `initiated` and `ringing`
 *   status callbacks when asked (after the 201), then the test decides their course: `answer` (with `answeredBy` for machine detection and the `digits` a
 *   person presses at a `<Gather>`; none: the Gather times out), `noAnswer`, `busy`. Their status
 *   callbacks carry AnsweredBy when detection ran, as Twilio's do. Synchronous detection requests
 *   the Url with AnsweredBy; asynchronous detection (AsyncAmd=true) requests it at once without
 *   AnsweredBy and posts the result (AnsweredBy, MachineDetectionDuration) to
 *   AsyncAmdStatusCallback while the instructions start (nowhere without one: Twilio only warns).
 * - `GET Calls/{Sid}.json`: the call's `status`, `duration` (whole seconds, once ended) and
 *   `answered_by`, as Twilio's Call resource.
 * - A callback the platform answered with a 5xx (or never answered: `dropCallbacks`) is not sent
 *   again: Twilio retries no status or conference callback.
 * - Pricing v2 `Voice/Countries/{US,GB}` (GB: landlines 44, mobiles 447).
 * - The TwiML a call plays (instructions, a `<Connect action>`'s or `<Gather action>`'s answer, a
 *   live update's `Twiml`) runs verb by verb: `<Say>` (kept in `said`), `<Pause>`, `<Gather>`
 *   (`numDigits`; with no key within its timeout it falls through to the next verb, or asks its
 *   action with empty Digits when `actionOnEmptyResult="true"`), `<Dial>` a number or a
 *   `<Conference>`, `<Connect>` `<ConversationRelay>` or `<Stream>`, `<Hangup/>`; the document's end
 *   hangs up.
 * - Conferences (Twilio's Conference and Participant references): a conference starts once two
 *   participants are in and one of them has `startConferenceOnEnter` (default true); until then
 *   they wait hearing the `waitUrl` (`onHold`); it ends when its last participant leaves, or when one with
 *   `endConferenceOnExit` leaves: the others' `<Dial>` is then over and their TwiML goes on after
 *   it. The conference's `statusCallback` (the first participant's) hears the
 *   `statusCallbackEvent`s asked for: `conference-start`, `conference-end`, `participant-join`,
 *   `participant-leave`.
 * - A live update (`Calls/{Sid}.json` with `Twiml`, or `Url`: requested, signed, for the TwiML)
 *   takes the call out of what it does (a conference, a ConversationRelay session without its
 *   action, a stream, a queue) and plays the new TwiML.
 * - `<Enqueue waitUrl>` (Twilio's Enqueue and Queue references): the caller waits in the named
 *   queue; Twilio asks the waitUrl (signed, with QueueSid, QueuePosition, QueueTime,
 *   CurrentQueueSize, MaxQueueSize) when the caller enters and again each time what it answered has
 *   played (`<Play>`: kept in `heard`, lasting `holdRoundMs`; `<Say>`, `<Pause>`); `<Leave/>` takes
 *   the caller out of the queue to the verbs after `<Enqueue>`, `<Redirect>` to the TwiML its URL
 *   answers, `<Hangup/>` ends the call. A live update takes the caller out of the queue.
 *
 * Durations read `now()` (default Date.now), so a test on a shifted clock sees its own time.
 */
export interface TwilioNumber {
  sid: string;
  phone_number: string;
  voice_url: string | null;
  voice_method: string;
  status_callback: string | null;
  status_callback_method: string;
}

export interface StandInCall {
  sid: string;
  from: string;
  to: string;
  /** The TwiML the VoiceUrl answered. */
  twiml: string;
  /** The media stream, when the instructions connected one. */
  stream?: TwilioMediaClient;
  /** The ConversationRelay session, when the instructions were `<Connect><ConversationRelay>`. */
  relay?: RelayClient;
  /** `in-progress` while connected (also while dialling a transfer), then `completed` or `busy`. */
  status: string;
  answeredAtMs?: number;
  /** The number dialled by a `<Dial>` the call was given (a transfer). */
  dialled?: string;
  /** Every ConversationRelay session of the call, in order (a `<Connect action>` may connect another). */
  relays?: RelayClient[];
  /** Relay connections the platform refused (the upgrade's status and body). */
  refusals?: { status: number; body: string }[];
  /** Each `<Connect action>` request: its parameters, the answer's status and TwiML, when it was sent and answered (performance.now()). */
  actions?: { url: string; params: Record<string, string>; status: number; twiml: string; sentAt: number; answeredAt: number }[];
  /** What `<Say>` verbs told the caller. */
  said?: string[];
  /** What follows the relay session (the action's request and its TwiML), while it runs. */
  after?: Promise<void>;
  /** Errors of the stand-in's own requests after a session (an action URL that could not be reached). */
  failures?: string[];
  /** A call placed through the REST API (`Calls.json`): where its instructions and status callbacks go, its ring timeout and machine detection, when the request came (performance.now(): the phone starts ringing). */
  placed?: { url: string; statusCallback: string | null; timeout?: number; machineDetection?: string | null; asyncAmd?: boolean; amdCallback?: string | null; events?: string[]; at: number };
  /** When the call ended (now()). */
  endedAtMs?: number;
  /** The `initiated`/`ringing` callbacks sent after the call was created, while they run (nothing waits for them, as on Twilio). */
  progress?: Promise<void>;
  /** The conference the call is in (its friendly name), and whether it waits there hearing the waitUrl (the conference not started). */
  conference?: string;
  onHold?: string;
  /** Every TwiML document the call was given, in order (instructions, action answers, live updates). */
  documents?: string[];
  /** What the call's `<Gather>`s sent their action (Digits), in order. */
  gathered?: string[];
  /** AnsweredBy of a placed call with machine detection. */
  answeredBy?: string;
  /** The keys the person will press at the next `<Gather>` (answer's `digits`). */
  pendingDigits?: string;
  /** When the placed call was answered and when its instructions were asked (performance.now()): synchronous detection lies between them (answer's `detectionMs`). */
  pickedUpAt?: number;
  instructionsAskedAt?: number;
  /** The person hangs up right after pressing their key, before what the Gather's action answered plays (answer's `hangUpAfterKey`). */
  hangUpAfterKey?: boolean;
  /** Every media stream of the call, in order (a live update may connect another). */
  streams?: TwilioMediaClient[];
  /** The queue the call waits in (`<Enqueue>`), while it does. */
  queue?: string;
  /** What the queue's waitUrl had the caller hear (`<Play>` URLs), in order. */
  heard?: string[];
  /** How many times the waitUrl was asked. */
  holdRequests?: number;
  /** The hold loop, while it runs (asks the waitUrl after each round of music). */
  holding?: Promise<void>;
}

export interface ConferenceParticipant {
  callSid: string;
  startConferenceOnEnter: boolean;
  endConferenceOnExit: boolean;
  waitUrl: string | undefined;
  /** What the participant's TwiML does once its <Dial> is over (the verbs after it). */
  after: string;
}

export interface StandInConference {
  sid: string;
  name: string;
  status: 'init' | 'in-progress' | 'completed';
  participants: Map<string, ConferenceParticipant>;
  /** Everyone who was ever in it. */
  joined: string[];
  statusCallback?: string;
  statusCallbackEvents: string[];
  /** The events it reported (whether asked for or not), in order. */
  events: string[];
}

export interface StatusCallbackSent {
  url: string;
  params: Record<string, string>;
  status: number;
}

export interface TwilioCarrierStandIn {
  url: string;
  accountSid: string;
  authToken: string;
  numbers: Map<string, TwilioNumber>;
  calls: Map<string, StandInCall>;
  /** Every status callback the stand-in sent. */
  callbacks: StatusCallbackSent[];
  /** Numbers the stand-in lists as available (US, area 415). */
  available: string[];
  /** A number the account holds already (ported in; the platform imports it), its voice URL and status callback set as given. */
  adopt(phone: string, urls: { voiceUrl: string; statusCallback?: string }): TwilioNumber;
  /** A call from `from` to one of the account's numbers. */
  incomingCall(from: string, to: string): Promise<StandInCall>;
  /** Conferences by friendly name (the latest of a name). */
  conferences: Map<string, StandInConference>;
  /**
   * A call placed through `Calls.json` is answered: its `Url` is asked for instructions (signed; with
   * AnsweredBy when machine detection was asked, `human` unless `answeredBy` says otherwise) and they
   * are played; `digits`: the keys pressed at the first `<Gather>` (none: it times out).
   */
  answer(sid: string, options?: { answeredBy?: string; digits?: string; hangUpAfterKey?: boolean; detectionMs?: number }): Promise<StandInCall>;
  /** A placed call rings out unanswered (`no-answer`) or finds the line busy. */
  noAnswer(sid: string): Promise<void>;
  busy(sid: string): Promise<void>;
  /** The calls placed through `Calls.json` to `to`, in order. */
  placedTo(to: string): StandInCall[];
  /** The caller (or the party a transfer dialled) hangs up. */
  hangUp(sid: string): Promise<void>;
  /**
   * Callbacks the platform fails to take (a 5xx, a timeout): the stand-in records them with status
   * 503 and does not post them; Twilio sends none of them again.
   */
  dropCallbacks?: (url: string, params: Record<string, string>) => boolean;
  /** Live updates (`POST Calls/{Sid}.json`) Twilio fails with a 500 (error 20500): nothing changes on the call. */
  refuseUpdates?: (sid: string, form: URLSearchParams) => boolean;
  /** How long a `<Play>` of a waitUrl lasts before Twilio asks the waitUrl again (ms; default 100: real tracks last minutes). */
  holdRoundMs?: number;
  /** Live updates held back until the promise given settles (a slow network: later requests may overtake them). */
  holdUpdates?: (sid: string, form: URLSearchParams) => Promise<void> | undefined;
  close(): Promise<void>;
}

const MACHINE_DETECTION = ['Enable', 'DetectMessageEnd'];

const twilioError = (code: number, message: string, status: number) => ({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });

export async function startTwilioCarrier(options: { accountSid?: string; authToken?: string; now?: () => number } = {}): Promise<TwilioCarrierStandIn> {
  const accountSid = options.accountSid ?? 'AC0000000000000000000000000000cafe';
  const authToken = options.authToken ?? 'stand-in-auth-token';
  const now = options.now ?? Date.now;
  const numbers = new Map<string, TwilioNumber>();
  const calls = new Map<string, StandInCall>();
  const callbacks: StatusCallbackSent[] = [];
  const conferences = new Map<string, StandInConference>();
  const available = Array.from({ length: 20 }, (_, i) => `+1415555${String(1000 + i * 37).padStart(4, '0')}`);
  let seq = 0;
  const sid = (prefix: string) => `${prefix}${(++seq).toString(16).padStart(32, '0')}`;
  const account = `/2010-04-01/Accounts/${accountSid}`;

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://stand-in');
    const form = new URLSearchParams(await readBody(req));
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    if (req.headers.authorization !== `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`) return send(401, twilioError(20003, 'Authenticate', 401));
    const path = url.pathname;
    if (req.method === 'GET' && path === `${account}/AvailablePhoneNumbers/US/Local.json`) {
      const contains = url.searchParams.get('Contains');
      const areaCode = url.searchParams.get('AreaCode');
      const held = new Set([...numbers.values()].map((n) => n.phone_number));
      const list = available
        .filter((n) => !held.has(n) && (!contains || n.includes(contains)) && (!areaCode || n.startsWith(`+1${areaCode}`)))
        .slice(0, Number(url.searchParams.get('PageSize') ?? 50))
        .map((n) => ({ friendly_name: n, phone_number: n, locality: 'San Francisco', region: 'CA', iso_country: 'US', capabilities: { voice: true, SMS: true, MMS: false, fax: false } }));
      return send(200, { available_phone_numbers: list, uri: path });
    }
    if (req.method === 'GET' && path === '/v1/PhoneNumbers/Countries/US') {
      return send(200, { iso_country: 'US', price_unit: 'USD', phone_number_prices: [{ number_type: 'local', base_price: '1.15', current_price: '1.15' }] });
    }
    if (req.method === 'GET' && path === '/v2/Voice/Countries/US') {
      return send(200, {
        iso_country: 'US', price_unit: 'USD',
        inbound_call_prices: [{ number_type: 'local', base_price: '0.0085', current_price: '0.0085' }],
        outbound_prefix_prices: [{ prefixes: ['1'], friendly_name: 'United States', base_price: '0.0140', current_price: '0.0140' }],
      });
    }
    if (req.method === 'GET' && path === '/v2/Voice/Countries/GB') {
      return send(200, {
        iso_country: 'GB', price_unit: 'USD',
        inbound_call_prices: [{ number_type: 'local', base_price: '0.0100', current_price: '0.0100' }],
        outbound_prefix_prices: [
          { prefixes: ['44'], friendly_name: 'United Kingdom', base_price: '0.0158', current_price: '0.0158' },
          { prefixes: ['447'], friendly_name: 'United Kingdom - Mobile', base_price: '0.0376', current_price: '0.0376' },
        ],
      });
    }
    if (req.method === 'POST' && path === `${account}/IncomingPhoneNumbers.json`) {
      const phone = form.get('PhoneNumber');
      if (!phone) return send(400, twilioError(21421, 'PhoneNumber is required.', 400));
      if ([...numbers.values()].some((n) => n.phone_number === phone) || !available.includes(phone)) return send(400, twilioError(21422, 'Phone number is not available.', 400));
      const number: TwilioNumber = {
        sid: sid('PN'), phone_number: phone,
        voice_url: form.get('VoiceUrl'), voice_method: form.get('VoiceMethod') ?? 'POST',
        status_callback: form.get('StatusCallback'), status_callback_method: form.get('StatusCallbackMethod') ?? 'POST',
      };
      numbers.set(number.sid, number);
      return send(201, { account_sid: accountSid, ...number });
    }
    const one = path.match(new RegExp(`^${account}/IncomingPhoneNumbers/(PN\\w+)\\.json$`));
    if (one) {
      const number = numbers.get(one[1]!);
      if (!number) return send(404, twilioError(20404, 'The requested resource was not found', 404));
      if (req.method === 'DELETE') {
        numbers.delete(number.sid);
        return send(204);
      }
      if (req.method === 'POST') {
        // An empty value clears a URL, as in Twilio's console.
        if (form.has('VoiceUrl')) number.voice_url = form.get('VoiceUrl') || null;
        if (form.has('StatusCallback')) number.status_callback = form.get('StatusCallback') || null;
        if (form.has('StatusCallbackMethod')) number.status_callback_method = form.get('StatusCallbackMethod')!;
      }
      return send(200, { account_sid: accountSid, ...number });
    }
    if (req.method === 'POST' && path === `${account}/Calls.json`) {
      const [to, from, url] = [form.get('To'), form.get('From'), form.get('Url') ?? form.get('Twiml')];
      if (!to || !from || !url) return send(400, twilioError(21201, 'To, From and Url are required.', 400));
      const timeout = form.get('Timeout');
      const machineDetection = form.get('MachineDetection');
      const detectionTimeout = form.get('MachineDetectionTimeout');
      const asyncAmd = form.get('AsyncAmd');
      const amdMethod = form.get('AsyncAmdStatusCallbackMethod');
      // Twilio refuses a detection setting it does not know (21234): MachineDetection Enable or DetectMessageEnd, a timeout of 3–59 s, AsyncAmd true or false.
      if (machineDetection !== null && !MACHINE_DETECTION.includes(machineDetection)) return send(400, twilioError(21234, `Invalid MachineDetection: ${machineDetection}`, 400));
      if (detectionTimeout !== null && !(Number.isInteger(Number(detectionTimeout)) && Number(detectionTimeout) >= 3 && Number(detectionTimeout) <= 59)) return send(400, twilioError(21234, `Invalid MachineDetectionTimeout: ${detectionTimeout}`, 400));
      if (asyncAmd !== null && !['true', 'false'].includes(asyncAmd)) return send(400, twilioError(21234, `Invalid AsyncAmd: ${asyncAmd}`, 400));
      if (amdMethod !== null && !['GET', 'POST'].includes(amdMethod)) return send(400, twilioError(21234, `Invalid AsyncAmdStatusCallbackMethod: ${amdMethod}`, 400));
      const call: StandInCall = {
        sid: sid('CA'), from, to, twiml: '', status: 'queued',
        placed: {
          url, statusCallback: form.get('StatusCallback'), ...(timeout ? { timeout: Number(timeout) } : {}), machineDetection,
          // AsyncAmd without MachineDetection runs no detection.
          ...(machineDetection && asyncAmd === 'true' ? { asyncAmd: true, amdCallback: form.get('AsyncAmdStatusCallback') } : {}),
          events: form.getAll('StatusCallbackEvent').flatMap((e) => e.split(/[\s,]+/)).filter(Boolean), at: performance.now(),
        },
      };
      calls.set(call.sid, call);
      send(201, { sid: call.sid, status: 'queued', to, from, account_sid: accountSid });
      // Twilio starts dialling: `initiated`, then `ringing`, each when asked for.
      call.progress = (async () => {
        if (call.placed!.events!.includes('initiated')) await statusCallback(call, { CallStatus: 'queued', CallbackSource: 'call-progress-events' });
        if (call.placed!.events!.includes('ringing') && call.status === 'queued') await statusCallback(call, { CallStatus: 'ringing', CallbackSource: 'call-progress-events' });
      })().catch((err: Error) => void (call.failures ??= []).push(err.message));
      return;
    }
    const live = path.match(new RegExp(`^${account}/Calls/(CA\\w+)\\.json$`));
    if (req.method === 'GET' && live) {
      // Twilio's Call resource: `duration` is a string of whole seconds once the call ended, else null.
      const call = calls.get(live[1]!);
      if (!call) return send(404, twilioError(20404, 'The requested resource was not found', 404));
      const ended = !['queued', 'ringing', 'in-progress'].includes(call.status);
      const duration = ended ? String(call.answeredAtMs !== undefined && call.endedAtMs !== undefined ? Math.round((call.endedAtMs - call.answeredAtMs) / 1000) : 0) : null;
      return send(200, {
        sid: call.sid, account_sid: accountSid, to: call.to, from: call.from, status: call.status, duration,
        answered_by: call.answeredBy ?? null, direction: call.placed ? 'outbound-api' : 'inbound',
        start_time: call.answeredAtMs !== undefined ? new Date(call.answeredAtMs).toUTCString() : null, end_time: call.endedAtMs !== undefined ? new Date(call.endedAtMs).toUTCString() : null,
      });
    }
    if (req.method === 'POST' && live) {
      await standIn.holdUpdates?.(live[1]!, form);
      const call = calls.get(live[1]!);
      if (!call) return send(404, twilioError(20404, 'The requested resource was not found', 404));
      if (call.status === 'queued' && ['completed', 'canceled'].includes(form.get('Status') ?? '')) {
        // A call still ringing is cancelled (Twilio: Status canceled, or completed, ends a queued or ringing call).
        send(200, { sid: call.sid, status: 'canceled' });
        call.status = 'canceled';
        await statusCallback(call, { CallStatus: 'canceled', CallDuration: '0' });
        return;
      }
      if (call.status !== 'in-progress') return send(400, twilioError(21220, 'Call is not in-progress. Cannot redirect.', 400));
      if (standIn.refuseUpdates?.(call.sid, form)) return send(500, twilioError(20500, 'Internal Server Error', 500));
      send(200, { sid: call.sid, status: call.status });
      const fetched = form.get('Url');
      if (fetched) {
        // New instructions to fetch: Twilio requests the Url (signed) and plays what it answers.
        await leaveActivity(call);
        const answer = await post(fetched, { AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, CallStatus: 'in-progress', Direction: call.placed ? 'outbound-api' : 'inbound', ApiVersion: '2010-04-01' });
        if (answer.status !== 200) return end(call); // Twilio plays an application error and hangs up
        await play(call, answer.text);
        return;
      }
      const twiml = form.get('Twiml');
      const dial = twiml?.match(/<Dial[^>]*>([^<]+)<\/Dial>/);
      if (twiml && call.queue && !dial) {
        // A caller on hold: out of the queue, the new instructions played (an apology and a hang-up).
        await leaveActivity(call);
        await play(call, twiml);
      } else if (twiml && /<(Conference|Connect)\b/.test(twiml)) {
        // New instructions: the call leaves what it does (its conference, its session: no action is asked) and plays them.
        await leaveActivity(call);
        await play(call, twiml);
      } else if (form.get('Status') === 'completed' || (twiml && !dial)) await end(call);
      else if (dial) {
        // New instructions leave <Connect><Stream>: the stream stops; the call goes on with the dialled party.
        call.dialled = dial[1];
        call.stream?.stop();
        if (call.relay) call.relay.onSessionEnd = undefined; // a redirect leaves the <Connect>: its action is not requested
        call.relay?.close();
      }
      return;
    }
    send(404, twilioError(20404, 'The requested resource was not found', 404));
  });

  async function post(url: string, params: Record<string, string>): Promise<{ status: number; text: string }> {
    if (standIn.dropCallbacks?.(url, params)) return { status: 503, text: '' };
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(authToken, url, params) },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, text: await response.text() };
  }

  /** The call is over: the stream stops at once, it leaves its conference; the status callback goes only to a number that has one. */
  async function end(call: StandInCall): Promise<void> {
    if (call.status !== 'in-progress') return;
    call.status = 'completed';
    call.endedAtMs = now();
    delete call.queue;
    if (call.stream?.open) call.stream.stop();
    if (call.relay?.open) call.relay.close();
    if (call.conference) await leaveConference(call);
    await statusCallback(call, { CallStatus: 'completed', CallDuration: String(Math.round((now() - call.answeredAtMs!) / 1000)), ...(call.answeredBy ? { AnsweredBy: call.answeredBy } : {}) });
  }

  /** A live update takes the call out of what it does: its conference (its <Dial> is over), its relay session (no action is asked) or its stream. */
  async function leaveActivity(call: StandInCall): Promise<void> {
    delete call.queue;
    if (call.conference) await leaveConference(call);
    call.stream?.stop();
    if (call.relay) call.relay.onSessionEnd = undefined;
    if (call.relay?.open) call.relay.close();
  }

  async function conferenceCallback(conference: StandInConference, event: string, callSid?: string): Promise<void> {
    conference.events.push(callSid ? `${event}:${callSid}` : event);
    const asked = conference.statusCallbackEvents.some((e) => event === `conference-${e}` || event === `participant-${e}`);
    if (!conference.statusCallback || !asked) return;
    const params: Record<string, string> = {
      AccountSid: accountSid, ConferenceSid: conference.sid, FriendlyName: conference.name, StatusCallbackEvent: event, Timestamp: new Date(now()).toUTCString(), SequenceNumber: String(conference.events.length),
      ...(callSid ? { CallSid: callSid } : {}),
    };
    const answer = await post(conference.statusCallback, params);
    callbacks.push({ url: conference.statusCallback, params, status: answer.status });
  }

  /** `<Dial><Conference>`: joins (or opens) the conference; `after` is the TwiML's rest, played when the <Dial> is over. */
  async function joinConference(call: StandInCall, name: string, attrs: Record<string, string>, after: string): Promise<void> {
    let conference = conferences.get(name);
    if (!conference || conference.status === 'completed') {
      conference = { sid: sid('CF'), name, status: 'init', participants: new Map(), joined: [], statusCallbackEvents: [], events: [] };
      conferences.set(name, conference);
    }
    if (!conference.statusCallback && attrs.statusCallback) {
      conference.statusCallback = attrs.statusCallback;
      conference.statusCallbackEvents = (attrs.statusCallbackEvent ?? 'start end').split(/[\s,]+/).filter(Boolean);
    }
    const participant: ConferenceParticipant = {
      callSid: call.sid, startConferenceOnEnter: attrs.startConferenceOnEnter !== 'false', endConferenceOnExit: attrs.endConferenceOnExit === 'true', waitUrl: attrs.waitUrl, after,
    };
    conference.participants.set(call.sid, participant);
    conference.joined.push(call.sid);
    // Twilio: a conference starts once at least two participants are in and one of them starts it on entering; until then they hear the waitUrl.
    const starts = conference.status === 'init' && conference.participants.size >= 2 && [...conference.participants.values()].some((p) => p.startConferenceOnEnter);
    if (starts) {
      conference.status = 'in-progress';
      for (const p of conference.participants.keys()) delete calls.get(p)!.onHold;
    } else if (conference.status === 'init') {
      call.onHold = participant.waitUrl ?? 'https://twimlets.com/holdmusic?Bucket=com.twilio.music.classical';
    }
    call.conference = name;
    await conferenceCallback(conference, 'participant-join', call.sid);
    if (starts) await conferenceCallback(conference, 'conference-start');
  }

  /**
   * The call leaves its conference (hung up, or `continues`: moved by a live update, its TwiML goes
   * elsewhere). One with endConferenceOnExit ends a started conference for everyone; the last one
   * out ends it too. Whoever's <Dial> ends so goes on with the TwiML after it.
   */
  async function leaveConference(call: StandInCall): Promise<void> {
    const conference = conferences.get(call.conference!);
    delete call.conference;
    delete call.onHold;
    if (!conference) return;
    const participant = conference.participants.get(call.sid);
    if (!participant) return;
    conference.participants.delete(call.sid);
    await conferenceCallback(conference, 'participant-leave', call.sid);
    const endsAll = participant.endConferenceOnExit && conference.status === 'in-progress';
    if (!endsAll && conference.participants.size) return;
    conference.status = 'completed';
    const rest = [...conference.participants.values()];
    conference.participants.clear();
    await conferenceCallback(conference, 'conference-end');
    for (const other of rest) {
      const c = calls.get(other.callSid)!;
      delete c.conference;
      delete c.onHold;
      await conferenceCallback(conference, 'participant-leave', c.sid);
      await play(c, other.after);
    }
  }

  type Verb = { name: string; attrs: Record<string, string>; inner: string; outer: string };
  const attrsOf = (text: string) => Object.fromEntries([...text.matchAll(/([\w:]+)="([^"]*)"/g)].map((m) => [m[1]!, unxmlText(m[2]!)]));
  /** The top-level verbs of a TwiML document (or of the rest of one). */
  function verbsOf(twiml: string): Verb[] {
    const body = twiml.replace(/^[\s\S]*?<Response>/, '').replace(/<\/Response>[\s\S]*$/, '');
    return [...body.matchAll(/<(\w+)((?:\s+[\w:]+="[^"]*")*)\s*(?:\/>|>([\s\S]*?)<\/\1>)/g)].map((m) => ({ name: m[1]!, attrs: attrsOf(m[2] ?? ''), inner: m[3] ?? '', outer: m[0] }));
  }
  const docOf = (verbs: Verb[]) => `<Response>${verbs.map((v) => v.outer).join('')}</Response>`;

  /**
   * A caller in a queue: the waitUrl is asked, what it answers played, and asked again once that has
   * played, until the caller leaves the queue (`<Leave/>`: the rest of the document plays; a live
   * update or `<Redirect>` takes them elsewhere; `<Hangup/>` or a hang-up ends the call).
   */
  async function hold(call: StandInCall, name: string, waitUrl: string | undefined, rest: string): Promise<void> {
    const entered = now();
    const roundMs = standIn.holdRoundMs ?? 100;
    while (call.queue === name && call.status === 'in-progress') {
      if (!waitUrl) {
        // Twilio's default waitUrl: its classical hold music.
        (call.heard ??= []).push('https://twimlets.com/holdmusic?Bucket=com.twilio.music.classical');
        await new Promise((resolve) => setTimeout(resolve, roundMs));
        continue;
      }
      const inQueue = [...calls.values()].filter((c) => c.queue === name);
      call.holdRequests = (call.holdRequests ?? 0) + 1;
      const answer = await post(waitUrl, {
        AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, CallStatus: 'in-progress', Direction: call.placed ? 'outbound-api' : 'inbound', ApiVersion: '2010-04-01',
        QueueSid: `QU${Buffer.from(name).toString('hex').slice(0, 32).padEnd(32, '0')}`, QueuePosition: String(inQueue.indexOf(call) + 1), QueueTime: String(Math.round((now() - entered) / 1000)),
        AvgQueueTime: '0', CurrentQueueSize: String(inQueue.length), MaxQueueSize: '100',
      });
      if (call.queue !== name || call.status !== 'in-progress') return; // moved or hung up while the waitUrl was asked
      if (answer.status !== 200) return end(call); // Twilio plays an application error and hangs up
      for (const verb of verbsOf(answer.text)) {
        if (verb.name === 'Play') (call.heard ??= []).push(unxmlText(verb.inner.trim()));
        else if (verb.name === 'Say') (call.said ??= []).push(unxmlText(verb.inner));
        else if (verb.name === 'Leave') {
          delete call.queue;
          return play(call, rest);
        } else if (verb.name === 'Hangup') return end(call);
        else if (verb.name === 'Redirect') {
          delete call.queue;
          return play(call, `<Response>${verb.outer}</Response>`);
        } else if (verb.name !== 'Pause') throw new Error(`Twilio stand-in: a verb a waitUrl may not answer: ${verb.outer}`);
      }
      await new Promise((resolve) => setTimeout(resolve, roundMs));
    }
  }

  /** Plays a TwiML document on a live call, verb by verb; its end hangs up. */
  async function play(call: StandInCall, twiml: string): Promise<void> {
    (call.documents ??= []).push(twiml);
    const verbs = verbsOf(twiml);
    for (const [i, verb] of verbs.entries()) {
      if (call.status !== 'in-progress') return;
      const rest = docOf(verbs.slice(i + 1));
      switch (verb.name) {
        case 'Say':
          (call.said ??= []).push(unxmlText(verb.inner));
          break;
        case 'Pause':
          break;
        case 'Play':
          (call.heard ??= []).push(unxmlText(verb.inner.trim()));
          break;
        case 'Redirect': {
          const answer = await post(unxmlText(verb.inner.trim()), { AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, CallStatus: 'in-progress', Direction: call.placed ? 'outbound-api' : 'inbound', ApiVersion: '2010-04-01' });
          if (answer.status !== 200) return end(call);
          return play(call, answer.text);
        }
        case 'Enqueue': {
          // The caller waits in the queue; the hold loop asks the waitUrl until they leave it (the rest of the document then plays).
          const name = unxmlText(verb.inner.trim());
          call.queue = name;
          call.holding = hold(call, name, verb.attrs.waitUrl ? unxmlText(verb.attrs.waitUrl) : undefined, rest).catch((err: Error) => void (call.failures ??= []).push(err.message));
          return;
        }
        case 'Hangup':
        case 'Reject':
          return end(call);
        case 'Gather': {
          for (const said of verb.inner.matchAll(/<Say\b[^>]*>([^<]*)<\/Say>/g)) (call.said ??= []).push(unxmlText(said[1]!));
          const pressed = (call.pendingDigits ?? '').slice(0, Number(verb.attrs.numDigits ?? 1) || 1);
          delete call.pendingDigits;
          if (!pressed && verb.attrs.actionOnEmptyResult !== 'true') break; // timed out: the next verb
          (call.gathered ??= []).push(pressed);
          const answer = await post(verb.attrs.action!, { AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, CallStatus: 'in-progress', Direction: call.placed ? 'outbound-api' : 'inbound', ApiVersion: '2010-04-01', Digits: pressed, FinishedOnKey: '' });
          if (answer.status !== 200 || call.hangUpAfterKey) return end(call);
          return play(call, answer.text);
        }
        case 'Dial': {
          const conference = verb.inner.match(/<Conference((?:\s+[\w:]+="[^"]*")*)\s*>([^<]+)<\/Conference>/);
          if (conference) return joinConference(call, unxmlText(conference[2]!), attrsOf(conference[1] ?? ''), rest);
          call.dialled = unxmlText(verb.inner.replace(/<\/?Number[^>]*>/g, '').trim());
          return;
        }
        case 'Connect':
          if (/<ConversationRelay\b/.test(verb.inner)) return runRelay(call, verb.outer, call.placed ? 'outbound-api' : 'inbound');
          if (/<Stream\b/.test(verb.inner)) {
            const customParameters = Object.fromEntries([...verb.inner.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxmlText(m[1]!), unxmlText(m[2]!)]));
            call.stream = await TwilioMediaClient.connect(unxmlText(verb.inner.match(/<Stream url="([^"]*)"/)![1]!), { callSid: call.sid, customParameters });
            (call.streams ??= []).push(call.stream);
          }
          return;
        default:
          throw new Error(`Twilio stand-in: a verb it does not play: ${verb.outer}`);
      }
    }
    return end(call);
  }

  /** Twilio's final status callback of an incoming call: to the number's StatusCallback, or nowhere. */
  async function statusCallback(call: StandInCall, fields: Record<string, string>): Promise<void> {
    if (call.placed) {
      if (!call.placed.statusCallback) return;
      const params: Record<string, string> = { AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, Direction: 'outbound-api', ApiVersion: '2010-04-01', Timestamp: new Date(now()).toUTCString(), ...fields };
      const answer = await post(call.placed.statusCallback, params);
      callbacks.push({ url: call.placed.statusCallback, params, status: answer.status });
      return;
    }
    const number = [...numbers.values()].find((n) => n.phone_number === call.to);
    if (!number?.status_callback) return;
    const params: Record<string, string> = {
      AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, Direction: 'inbound', ApiVersion: '2010-04-01',
      Timestamp: new Date(now()).toUTCString(), ...fields,
    };
    const answer = await post(number.status_callback, params);
    callbacks.push({ url: number.status_callback, params, status: answer.status });
  }

  const unxmlText = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

  /**
   * `<Connect><ConversationRelay>`: Twilio opens the url as given (query included), signing the
   * upgrade with X-Twilio-Signature over that URL. When the session ends the `<Connect>` finishes:
   * with an `action`, Twilio requests it (signed, with `CallStatus`, `SessionStatus` and
   * `SessionDuration` in whole seconds) and runs the TwiML it answers; without one there is no next
   * verb and the call hangs up. `SessionStatus` (Twilio's ConversationRelay action callback):
   * `ended` when the platform sent `end` (with `HandoffData` = its handoffData), `failed` when the
   * socket closed without `end` (the server or the network dropped it) or the connection was
   * refused (no `HandoffData`), `completed` when the caller hung up: the call is over (its status
   * callback goes out), the action is still requested, with CallStatus `completed`, and nothing it
   * answers is played.
   */
  async function runRelay(call: StandInCall, twiml: string, direction: string): Promise<void> {
    const relayUrl = unxmlText(twiml.match(/<ConversationRelay url="([^"]*)"/)?.[1] ?? '');
    const actionAttr = twiml.match(/<Connect\b[^>]*\baction="([^"]*)"/)?.[1];
    const action = actionAttr ? unxmlText(actionAttr) : undefined;
    const params = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxmlText(m[1]!), unxmlText(m[2]!)]));
    const sessionStarted = now();
    const afterSession = (status: 'ended' | 'failed' | 'completed', handoffData: string | undefined) => {
      const hungUp = status === 'completed' || call.status !== 'in-progress'; // the caller hung up, or the call was ended while the session ran
      const fields = { SessionStatus: hungUp ? 'completed' : status, SessionDuration: String(Math.round((now() - sessionStarted) / 1000)), ...(handoffData !== undefined ? { HandoffData: handoffData } : {}) };
      const done = hungUp
        ? end(call).then(() => (action ? connectAction(call, action, fields) : undefined))
        : action ? connectAction(call, action, fields) : end(call);
      call.after = done.catch((err: Error) => void (call.failures ??= []).push(err.message));
    };
    let client: RelayClient;
    try {
      client = await RelayClient.connect(relayUrl, { callSid: call.sid, from: call.from, to: call.to, direction, customParameters: params }, { 'x-twilio-signature': twilioSignature(authToken, relayUrl, {}) });
    } catch (err) {
      (call.refusals ??= []).push({ status: (err as { status?: number }).status ?? 0, body: (err as { body?: string }).body ?? '' });
      afterSession('failed', undefined);
      return;
    }
    call.relay = client;
    (call.relays ??= []).push(client);
    client.onSessionEnd = (handoffData) => afterSession(client.handoff ? 'ended' : client.hungUp ? 'completed' : 'failed', handoffData);
  }

  /** Requests a `<Connect action>` URL (signed, as every Twilio webhook) and plays what it answers (nothing once the call is over). */
  async function connectAction(call: StandInCall, url: string, fields: Record<string, string>): Promise<void> {
    const params: Record<string, string> = { AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, CallStatus: call.status, Direction: call.placed ? 'outbound-api' : 'inbound', ApiVersion: '2010-04-01', ...fields };
    const sentAt = performance.now();
    const answer = await post(url, params);
    (call.actions ??= []).push({ url, params, status: answer.status, twiml: answer.text, sentAt, answeredAt: performance.now() });
    if (call.status !== 'in-progress') return; // the call is over: its TwiML is not run
    if (answer.status !== 200) return end(call); // Twilio plays an application error and hangs up
    if (/<Conference\b/.test(answer.text)) return play(call, answer.text);
    const dial = answer.text.match(/<Dial\b[^>]*>(?:<Number>)?([^<]+)(?:<\/Number>)?<\/Dial>/);
    if (dial) {
      call.dialled = dial[1];
      return;
    }
    for (const said of answer.text.matchAll(/<Say\b[^>]*>([^<]*)<\/Say>/g)) (call.said ??= []).push(unxmlText(said[1]!));
    if (/<ConversationRelay\b/.test(answer.text)) return runRelay(call, answer.text, params.Direction!);
    return end(call);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const standIn: TwilioCarrierStandIn = {
    url: base,
    accountSid,
    authToken,
    numbers,
    calls,
    callbacks,
    available,
    adopt(phone, urls) {
      const number: TwilioNumber = { sid: sid('PN'), phone_number: phone, voice_url: urls.voiceUrl, voice_method: 'POST', status_callback: urls.statusCallback ?? null, status_callback_method: 'POST' };
      numbers.set(number.sid, number);
      return number;
    },
    async incomingCall(from, to) {
      const number = [...numbers.values()].find((n) => n.phone_number === to);
      if (!number?.voice_url) throw new Error(`Twilio stand-in: ${to} is not a number of the account with a VoiceUrl`);
      const call: StandInCall = { sid: sid('CA'), from, to, twiml: '', status: 'ringing' };
      calls.set(call.sid, call);
      const answer = await post(number.voice_url, { AccountSid: accountSid, CallSid: call.sid, From: from, To: to, CallStatus: 'ringing', Direction: 'inbound', ApiVersion: '2010-04-01' });
      if (answer.status !== 200) throw new Error(`Twilio stand-in: the VoiceUrl answered ${answer.status}: ${answer.text}`);
      call.twiml = answer.text;
      if (/<Reject\b/.test(answer.text)) {
        // Rejected before an answer: the caller hears busy; the number's status callback hears `busy`.
        call.status = 'busy';
        await statusCallback(call, { CallStatus: 'busy', CallDuration: '0' });
        return call;
      }
      const stream = answer.text.match(/<Stream url="([^"]*)"/);
      if (/<ConversationRelay\b/.test(answer.text)) {
        call.status = 'in-progress';
        call.answeredAtMs = now();
        await runRelay(call, answer.text, 'inbound');
        return call;
      }
      if (!stream) {
        // Any other instructions (a conference, <Say>, <Gather>…) are played verb by verb.
        call.status = 'in-progress';
        call.answeredAtMs = now();
        await play(call, answer.text);
        return call;
      }
      const unxml = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
      const customParameters = Object.fromEntries([...answer.text.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxml(m[1]!), unxml(m[2]!)]));
      call.status = 'in-progress';
      call.answeredAtMs = now();
      call.stream = await TwilioMediaClient.connect(unxml(stream[1]!), { callSid: call.sid, customParameters });
      return call;
    },
    conferences,
    async answer(callSid, options = {}) {
      const call = calls.get(callSid);
      if (!call?.placed) throw new Error(`Twilio stand-in: no placed call ${callSid}`);
      // Twilio does not wait for our answer to an `initiated`/`ringing` callback before the phone is answered.
      if (call.status !== 'queued') throw new Error(`Twilio stand-in: call ${callSid} is ${call.status}, it cannot be answered`);
      call.status = 'in-progress';
      call.answeredAtMs = now();
      if (options.digits !== undefined) call.pendingDigits = options.digits;
      if (options.hangUpAfterKey) call.hangUpAfterKey = true;
      const async = !!call.placed.asyncAmd;
      call.pickedUpAt = performance.now();
      // Synchronous detection decides before the instructions are asked (they carry AnsweredBy; the callee hears nothing meanwhile: `detectionMs`); asynchronous detection decides while they play.
      if (call.placed.machineDetection && !async) {
        if (options.detectionMs) await new Promise((resolve) => setTimeout(resolve, options.detectionMs));
        call.answeredBy = options.answeredBy ?? 'human';
      }
      const detected: Record<string, string> = call.answeredBy ? { AnsweredBy: call.answeredBy } : {};
      await statusCallback(call, { CallStatus: 'in-progress', ...detected });
      call.instructionsAskedAt = performance.now();
      const answer = await post(call.placed.url, { AccountSid: accountSid, CallSid: call.sid, From: call.from, To: call.to, CallStatus: 'in-progress', Direction: 'outbound-api', ApiVersion: '2010-04-01', ...detected });
      if (answer.status !== 200) throw new Error(`Twilio stand-in: the call's Url answered ${answer.status}: ${answer.text}`);
      call.twiml = answer.text;
      if (async) {
        // The result comes within the first seconds, while the instructions' first verb (the briefing) plays.
        call.answeredBy = options.answeredBy ?? 'human';
        if (call.placed.amdCallback) {
          const params = { AccountSid: accountSid, CallSid: call.sid, AnsweredBy: call.answeredBy, MachineDetectionDuration: String(options.detectionMs ?? 2400) };
          const result = await post(call.placed.amdCallback, params);
          callbacks.push({ url: call.placed.amdCallback, params, status: result.status });
        }
      }
      await play(call, answer.text);
      return call;
    },
    async noAnswer(callSid) {
      const call = calls.get(callSid);
      if (!call?.placed || call.status !== 'queued') throw new Error(`Twilio stand-in: no ringing placed call ${callSid}`);
      call.status = 'no-answer';
      await statusCallback(call, { CallStatus: 'no-answer', CallDuration: '0' });
    },
    async busy(callSid) {
      const call = calls.get(callSid);
      if (!call?.placed || call.status !== 'queued') throw new Error(`Twilio stand-in: no ringing placed call ${callSid}`);
      call.status = 'busy';
      await statusCallback(call, { CallStatus: 'busy', CallDuration: '0' });
    },
    placedTo: (to) => [...calls.values()].filter((c) => c.placed && c.to === to),
    async hangUp(callSid) {
      const call = calls.get(callSid);
      if (!call) throw new Error(`Twilio stand-in: no call ${callSid}`);
      await end(call);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return standIn;
}

/**
 * A test platform's settings for calls through a Twilio stand-in with a stand-in Chat Completions
 * model (ConversationRelay agents answer with it).
 */
export function twilioRelayEnv(twilio: Pick<TwilioCarrierStandIn, 'url' | 'accountSid' | 'authToken'>, model: { url: string }): Record<string, string> {
  return {
    TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: twilio.accountSid, TWILIO_AUTH_TOKEN: twilio.authToken,
    LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model',
  };
}
