import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { twilioSignature } from '../shared/adapters/telephony/twilio-signature';

/**
 * The terminal client's call (`npm run relay`, scripts/relay.ts): it plays Twilio's part of a
 * ConversationRelay call against the running platform, and the caller's (what is typed) and, in a
 * warm transfer, the person's. Importable, so tests drive it as the terminal does.
 *
 * As Twilio does, in order:
 *
 * 1. The incoming call: POST the number's voice URL (`/api/v1/telephony/twilio/inbound`, signed with
 *    X-Twilio-Signature): the platform's own process asks the number's routing webhook
 *    (`inbound_webhook_url`), creates the call and answers its TwiML. Without an auth token to sign
 *    with, the call is made in this process instead (the platform refuses unsigned callbacks), as
 *    the client did before it played the callbacks.
 * 2. `<Connect action><ConversationRelay>`: the session over the WebSocket (`setup`, then a
 *    `prompt` per line typed, `/press 5` as `dtmf`, `/interrupt`), the agent's `text` tokens shown
 *    as they come. When the session ends (the platform sent `end`, or closed it), the `<Connect
 *    action>` is requested (signed; `HandoffData` from `end`, `SessionStatus`) and what it answers
 *    is played: a new session (a reconnect, or the conversation resuming after a warm transfer the
 *    person did not take), `<Dial>` (a cold transfer: the agent is gone), `<Say>`/`<Hangup/>`.
 * 3. A warm transfer's `<Dial><Conference>`: the briefing and the outcome are shown (from the call's
 *    `transfers`); the caller and the person talk until the person hangs up (after `personTalks`)
 *    or the caller does (`/quit`): the conference's `statusCallback` hears `conference-end`, which
 *    ends the call `transferred`.
 *
 * `/quit` (or the end of the input) hangs up: the socket closes and the platform ends the call.
 */

export interface TerminalOptions {
  /** The platform's base URL (the local runtime's, runtime.json `url`). */
  url: string;
  /** An API key of the organization (the number, the agent, the call's record). */
  apiKey: string;
  /** The auth token the platform checks Twilio's signatures with (its TWILIO_AUTH_TOKEN): signs every callback. */
  authToken?: string;
  accountSid?: string;
  /** The URL the platform's signatures cover (its PUBLIC_BASE_URL); default `url`. */
  publicBaseUrl?: string;
  /** Talk to this agent on a number of the client's own (imported once, named "relay terminal client")… */
  agentId?: string;
  /** …or call this number of the organization: its routing webhook or its inbound agent answers. */
  to?: string;
  /** The caller's number. */
  from?: string;
  /** Where the call's course is written (the terminal's stdout). */
  write: (text: string) => void;
  /** How long the person talks once a warm transfer connected them (default: SIMULATED_CALL_SECONDS, 3, real seconds; `/quit` hangs up first). */
  personTalks?: () => Promise<void>;
  /** How long after a reply's last token the next typed line is said (the reply being spoken; default 200 ms). */
  speakingMs?: number;
  /** Twilio's clock for timestamps (default Date.now). */
  now?: () => number;
  /** Makes the call in this process (no auth token): the client's own copy of the platform's settings must be set. */
  inProcessAnswer?: (to: string, from: string, callSid: string) => Promise<{ twiml: string } | { rejected: string }>;
}

/** What became of the call, for the caller of `run`. */
export interface TerminalResult {
  callId?: string;
  callSid: string;
  /** Every `<Connect action>` request: its URL, parameters, the answer's status and TwiML. */
  actions: { url: string; params: Record<string, string>; status: number; twiml: string }[];
  /** ConversationRelay sessions opened. */
  sessions: number;
  /** How the call ended for the client. */
  end: 'hung-up' | 'agent-hung-up' | 'transferred-cold' | 'transferred-warm' | 'rejected' | 'refused' | 'not-relay';
}

export const CLIENT_NUMBER_NAME = 'relay terminal client';
const API = '/api/v1';
const unxml = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const attr = (twiml: string, name: string) => {
  const m = twiml.match(new RegExp(` ${name}="([^"]*)"`));
  return m ? unxml(m[1]!) : undefined;
};

export class TerminalCall {
  readonly callSid = `CA${randomBytes(16).toString('hex')}`;
  readonly result: TerminalResult = { callSid: this.callSid, actions: [], sessions: 0, end: 'hung-up' };
  private readonly from: string;
  private readonly now: () => number;
  private number = '';
  private readonly queued: string[] = [];
  private hungUp = false;
  private wake: (() => void) | undefined;
  private session: { ws: WebSocket; answering: boolean; reply: string; over: boolean } | undefined;
  private readonly waiters: (() => void)[] = [];
  /** Everything written so far (tests read it). */
  output = '';

  constructor(private readonly o: TerminalOptions) {
    this.from = o.from ?? '+15555550100';
    this.now = o.now ?? Date.now;
  }

  private write(text: string): void {
    this.output += text;
    this.o.write(text);
    for (const w of this.waiters.splice(0)) w();
  }

  private line(text: string): void {
    this.write(`${text}\n`);
  }

  /** What the caller says next (a line), `/press <key>`, `/interrupt`, or `/quit`. */
  input(text: string): void {
    const said = text.trim();
    if (!said) return;
    const s = this.session;
    if (said === '/interrupt') {
      if (s && !s.over) {
        s.ws.send(JSON.stringify({ type: 'interrupt', utteranceUntilInterrupt: s.reply, durationUntilInterruptMs: 1000 }));
        s.reply = '';
        s.answering = false;
      }
    } else this.queued.push(said);
    this.next();
  }

  /** Resolves once `done()` holds of what was written (tests), failing after `ms`. */
  async until(done: (output: string) => boolean, what: string, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done(this.output)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`relay terminal: timed out waiting for ${what}; wrote:\n${this.output}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  private async api(method: string, path: string, body?: unknown): Promise<{ status: number; body: { data?: any; message?: string } }> {
    const res = await fetch(`${this.o.url}${path}`, { method, headers: { 'x-api-key': this.o.apiKey, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as { data?: any; message?: string } };
  }

  /** A Twilio webhook request: a form POST, signed over the URL and the parameters when the client has the auth token. */
  private async twilio(url: string, params: Record<string, string>): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.o.authToken) headers['x-twilio-signature'] = twilioSignature(this.o.authToken, url, params);
    const res = await fetch(this.local(url), { method: 'POST', headers, body: new URLSearchParams(params).toString() });
    return { status: res.status, text: await res.text() };
  }

  /** A URL the platform gave under its public base URL, reached at the platform itself. */
  private local(url: string): string {
    const base = (this.o.publicBaseUrl ?? this.o.url).replace(/\/$/, '');
    return url.startsWith(base) ? `${this.o.url.replace(/\/$/, '')}${url.slice(base.length)}` : url;
  }

  private callFields(): Record<string, string> {
    return { AccountSid: this.o.accountSid ?? 'AC00000000000000000000000000000000', CallSid: this.callSid, From: this.from, To: this.number, Direction: 'inbound', ApiVersion: '2010-04-01' };
  }

  /** Places the call and plays it to its end. */
  async run(): Promise<TerminalResult> {
    this.number = this.o.to ?? (await this.numberFor(this.o.agentId!));
    let twiml: string;
    if (this.o.authToken) {
      const voiceUrl = `${(this.o.publicBaseUrl ?? this.o.url).replace(/\/$/, '')}${API}/telephony/twilio/inbound`;
      const answer = await this.twilio(voiceUrl, { ...this.callFields(), CallStatus: 'ringing' });
      if (answer.status !== 200) throw new Error(`The platform refused the incoming call: ${answer.status} ${answer.text}${answer.status === 401 ? `\n${SIGNING_HELP}` : ''}`);
      twiml = answer.text;
    } else {
      if (!this.o.inProcessAnswer) throw new Error(`No auth token to sign Twilio's requests with.\n${SIGNING_HELP}`);
      const answer = await this.o.inProcessAnswer(this.number, this.from, this.callSid);
      if ('rejected' in answer) {
        this.line(`[the call was rejected: ${answer.rejected}]`);
        this.result.end = 'rejected';
        return this.result;
      }
      twiml = answer.twiml;
    }
    this.result.callId = twiml.match(/<Parameter name="call_id" value="([^"]*)"/)?.[1];
    await this.play(twiml);
    if (this.result.callId) this.line(`Call ${this.result.callId}: its transcript is on the call (GET ${this.o.url}${API}/calls/${this.result.callId}).`);
    return this.result;
  }

  /** Plays a TwiML document the platform answered. */
  private async play(twiml: string): Promise<void> {
    for (;;) {
      if (/<Reject\b/.test(twiml)) {
        this.line('[the call was rejected: the caller hears busy]');
        this.result.end = 'rejected';
        return;
      }
      for (const said of twiml.matchAll(/<Say\b[^>]*>([^<]*)<\/Say>/g)) this.line(`[said: ${unxml(said[1]!)}]`);
      if (/<ConversationRelay\b/.test(twiml)) {
        const next = await this.relaySession(twiml);
        if (next === undefined) return;
        twiml = next;
        continue;
      }
      if (/<Conference\b/.test(twiml)) return this.conference(twiml);
      const dial = twiml.match(/<Dial\b[^>]*>(?:<Number>)?([^<]+)(?:<\/Number>)?<\/Dial>/);
      if (dial) {
        this.line(`[the call is transferred to ${unxml(dial[1]!)} (cold): the agent left the call]`);
        this.result.end = 'transferred-cold';
        return;
      }
      if (/<Stream\b/.test(twiml)) {
        this.line('[the agent that answered uses the realtime pipeline (a media stream): this client speaks ConversationRelay only; hanging up]');
        await this.twilio(`${(this.o.publicBaseUrl ?? this.o.url).replace(/\/$/, '')}${API}/telephony/twilio/status`, { ...this.callFields(), CallStatus: 'completed', CallDuration: '0', Timestamp: new Date(this.now()).toUTCString() });
        this.result.end = 'not-relay';
        return;
      }
      this.line('[the call hung up]');
      this.result.end = 'agent-hung-up';
      return;
    }
  }

  /**
   * One ConversationRelay session; answers the TwiML its `<Connect action>` answered, or undefined
   * when nothing follows (the caller hung up, or the action was refused).
   */
  private async relaySession(twiml: string): Promise<string | undefined> {
    const url = attr(twiml, 'url');
    if (!url) throw new Error(`No ConversationRelay url in ${twiml}`);
    const action = twiml.match(/<Connect\b[^>]*\baction="([^"]*)"/)?.[1];
    const params = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxml(m[1]!), unxml(m[2]!)]));
    const greeting = attr(twiml, 'welcomeGreeting');
    const ws = new WebSocket(url, { headers: this.o.authToken ? { 'x-twilio-signature': twilioSignature(this.o.authToken, url, {}) } : {} });
    const opened = await new Promise<true | string>((resolve) => {
      ws.once('open', () => resolve(true));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => resolve(`${res.statusCode} ${body}`));
      });
      ws.once('error', (err) => resolve(err.message));
    });
    const startedMs = this.now();
    let handoff: string | undefined;
    let ended = false;
    if (opened === true) {
      this.result.sessions++;
      // A welcome greeting is spoken first (by Twilio): the caller speaks after it.
      const session = { ws, answering: !!greeting, reply: '', over: false };
      ws.on('error', () => undefined); // a socket error closes it: the close ends the session
      this.session = session;
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      ws.send(JSON.stringify({ type: 'setup', sessionId: `VX${this.callSid.slice(2)}`, callSid: this.callSid, from: this.from, to: this.number, direction: 'inbound', customParameters: params }));
      if (this.result.sessions === 1) this.line(`Call ${params.call_id} (GET ${this.o.url}${API}/calls/${params.call_id}): type what the caller says; /press <key>, /interrupt, /quit.`);
      if (greeting) this.line(`agent> ${greeting}`);
      ws.on('message', (data) => {
        const m = JSON.parse(data.toString()) as Record<string, unknown>;
        if (m.type === 'text') {
          if (!session.reply && m.token) this.write('agent> ');
          this.write(String(m.token));
          session.reply += String(m.token);
          if (m.last) {
            if (session.reply) this.write('\n');
            session.reply = '';
            // The caller speaks once the reply is spoken: a session the reply ends (`end` follows it) takes no more lines.
            setTimeout(() => {
              session.answering = false;
              this.next();
            }, this.o.speakingMs ?? 200);
          }
        } else if (m.type === 'sendDigits') this.line(`[the agent pressed ${String(m.digits)}]`);
        else if (m.type === 'end') {
          // Twilio ends the session on `end`; its <Connect action> says what follows.
          ended = true;
          handoff = typeof m.handoffData === 'string' ? m.handoffData : undefined;
          this.line(`[the agent ended the session: ${handoff ?? ''}]`);
          session.over = true;
          ws.close(1000);
        } else this.line(`[${JSON.stringify(m)}]`);
      });
      if (greeting) {
        setTimeout(() => {
          session.answering = false;
          this.next();
        }, this.o.speakingMs ?? 200);
      } else this.next();
      await closed;
      session.over = true;
      this.session = undefined;
      if (this.hungUp && !ended) {
        // The caller hung up: the call is over. Twilio still requests the action (CallStatus and SessionStatus `completed`) and plays nothing it answers.
        if (action && this.o.authToken) await this.requestAction(unxml(action), { CallStatus: 'completed', SessionStatus: 'completed', SessionDuration: String(Math.round((this.now() - startedMs) / 1000)) });
        return undefined;
      }
    } else this.line(`[the relay refused the session: ${opened}]`);
    if (!action) {
      this.line('[no <Connect action>: the call hangs up]');
      return undefined;
    }
    const answer = await this.requestAction(unxml(action), {
      CallStatus: 'in-progress', SessionStatus: ended ? 'ended' : 'failed', SessionDuration: String(Math.round((this.now() - startedMs) / 1000)), ...(handoff !== undefined ? { HandoffData: handoff } : {}),
    });
    if (answer.status !== 200) {
      this.line(`[the platform refused the <Connect action>: ${answer.status} ${answer.text.slice(0, 300)}; nothing follows the session, and the call stays in progress until the recovery sweep ends it]`);
      if (answer.status === 401) this.line(SIGNING_HELP);
      this.result.end = 'refused';
      return undefined;
    }
    if (handoff && /"mode":"warm"/.test(handoff)) await this.showTransfer();
    return answer.text;
  }

  /** Requests a session's `<Connect action>` as Twilio does (the call's fields, the session's), signed; kept in `result.actions`. */
  private async requestAction(url: string, fields: Record<string, string>): Promise<{ status: number; text: string }> {
    const params = { ...this.callFields(), SessionId: `VX${this.callSid.slice(2)}`, ...fields };
    const answer = await this.twilio(url, params);
    this.result.actions.push({ url, params, status: answer.status, twiml: answer.text });
    return answer;
  }

  /** Sends the next typed line when the agent is not answering (a line waits for the reply before it, as a caller waits for the agent). */
  private next(): void {
    if (this.wake) {
      // In the conference: the person hears the caller (the client does not play their side); /quit hangs up.
      while (this.queued.length) {
        const text = this.queued.shift()!;
        if (text !== '/quit') continue;
        this.hungUp = true;
        this.wake();
        return;
      }
      return;
    }
    const s = this.session;
    while (s && !s.over && !s.answering && this.queued.length && s.ws.readyState === WebSocket.OPEN) {
      const text = this.queued.shift()!;
      if (text === '/quit') {
        this.hungUp = true;
        s.over = true;
        s.ws.close(1000);
        return;
      }
      const press = text.match(/^\/press\s+([0-9*#A-D])$/i);
      if (press) s.ws.send(JSON.stringify({ type: 'dtmf', digit: press[1] }));
      else s.ws.send(JSON.stringify({ type: 'prompt', voicePrompt: text, lang: 'en-US', last: true }));
      s.answering = true;
    }
  }

  /** The warm transfer just made (the call's last), as the person heard it and as it ended. */
  private async showTransfer(): Promise<void> {
    const call = await this.api('GET', `${API}/calls/${this.result.callId}`);
    const t = (call.body.data?.transfers ?? []).at(-1);
    if (!t) return;
    this.line(`[warm transfer to ${t.phone_number}: the person heard: "${t.briefing}"]`);
    this.line(`[warm transfer to ${t.phone_number}: ${t.outcome ?? 'under way'}${t.outcome && t.outcome !== 'connected' ? ': the caller is back with the agent' : ''}]`);
  }

  /**
   * The caller in a warm transfer's conference: the person accepted (on the simulated carrier the
   * outcome is known before the caller is moved). They talk until the person hangs up (the
   * conference ends: `conference-end` to its statusCallback) or the caller does (`/quit`).
   */
  private async conference(twiml: string): Promise<void> {
    const statusCallback = attr(twiml, 'statusCallback');
    const name = twiml.match(/<Conference\b[^>]*>([^<]+)<\/Conference>/)?.[1];
    const events = (attr(twiml, 'statusCallbackEvent') ?? '').split(/\s+/);
    this.line(`[the caller waits in conference ${name ?? ''}, hearing hold music, until the person joins]`);
    const conferenceSid = `CF${randomBytes(16).toString('hex')}`;
    let sequence = 0;
    const post = async (event: string, callSid?: string) => {
      if (!statusCallback || !events.some((e) => event === `conference-${e}` || event === `participant-${e}`)) return;
      await this.twilio(statusCallback, {
        AccountSid: this.o.accountSid ?? 'AC00000000000000000000000000000000', ConferenceSid: conferenceSid, FriendlyName: name ?? '', StatusCallbackEvent: event,
        Timestamp: new Date(this.now()).toUTCString(), SequenceNumber: String(++sequence), ...(callSid ? { CallSid: callSid } : {}),
      });
    };
    await post('participant-join', this.callSid);
    this.line('[the person joined: you are talking with them; the agent left the call (/quit hangs up)]');
    await post('conference-start');
    const hangUp = new Promise<void>((resolve) => {
      this.wake = resolve;
      this.next();
    });
    await Promise.race([hangUp, (this.o.personTalks ?? defaultPersonTalks)()]);
    this.wake = undefined;
    this.line(this.hungUp ? '[you hung up: the conference ends]' : '[the person hung up: the conference ends]');
    await post('conference-end');
    await post('participant-leave', this.callSid);
    this.result.end = 'transferred-warm';
  }

  /** The agent's number for this client: the one made before (named CLIENT_NUMBER_NAME), else a new imported one. */
  private async numberFor(agentId: string): Promise<string> {
    const held = await this.api('GET', `${API}/phone-numbers?limit=100&status=active`);
    const mine = (held.body.data ?? []).find((n: any) => n.name === CLIENT_NUMBER_NAME && n.inbound_agent_id === agentId);
    if (mine) return mine.phone_number;
    const { tryNormalizeE164 } = await import('../shared/domain/common/phone');
    for (let attempt = 0; attempt < 20; attempt++) {
      const phone = tryNormalizeE164(`+1415${String(Math.floor(2_000_000 + Math.random() * 7_000_000))}`);
      if (!phone) continue;
      const made = await this.api('POST', `${API}/phone-numbers/import`, { phone, type: 'pstn', name: CLIENT_NUMBER_NAME, inbound_agent_id: agentId });
      if (made.status === 200) return made.body.data.phone_number;
      if (made.status !== 409) throw new Error(`Importing a number for the agent failed: ${made.status} ${made.body.message ?? ''}`);
    }
    throw new Error('No free number could be imported for the agent');
  }
}

/** What to do when the platform cannot check the client's signatures. */
export const SIGNING_HELP =
  'The platform checks Twilio\'s signature on every callback (the <Connect action>, the incoming call, the conference). Start it with a Twilio auth token ' +
  '(any value; telephony stays simulated): TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000 TWILIO_AUTH_TOKEN=local-token npm start, ' +
  'and give this client the same TWILIO_AUTH_TOKEN.';

/** The person talks as long as a simulated call lasts (SIMULATED_CALL_SECONDS, default 3 s) before hanging up. */
async function defaultPersonTalks(): Promise<void> {
  const seconds = Number(process.env.SIMULATED_CALL_SECONDS) || 3;
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}
