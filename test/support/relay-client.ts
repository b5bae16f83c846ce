import WebSocket from 'ws';

/**
 * A Twilio ConversationRelay stand-in: it opens the TwiML's `url` as given (query included),
 * sends `setup` (the call, `customParameters` from the `<Parameter>`s) as Twilio does first, then
 * what a test makes the caller do: `prompt` (`voicePrompt`, `lang`, `last: true`), `interrupt`
 * (`utteranceUntilInterrupt`, `durationUntilInterruptMs`), `dtmf` (`digit`). It keeps what the
 * platform sends (`text` tokens with `last`, `sendDigits`, `end` with `handoffData`) and, like
 * Twilio, closes the socket once it gets `end`. Messages Twilio would refuse (no `type`, a `text`
 * without `token` or `last`) are recorded in `refused`, as Twilio answers them with `error`.
 */
export interface RelayOutboundSeen {
  type: string;
  [k: string]: unknown;
}

export class RelayClient {
  readonly received: RelayOutboundSeen[] = [];
  readonly refused: unknown[] = [];
  readonly closed: Promise<number>;
  /** The `end` message's `handoffData`, once the platform sent `end` (the session is over for Twilio from then on). */
  handoff: { data: string | undefined } | undefined;
  /** The socket closed because the caller hung up (`close()`), not because the server closed or dropped it. */
  hungUp = false;
  /** Called once when the session ends: on `end` (at once, before the socket closes) or when the socket closes without one. */
  onSessionEnd: ((handoffData: string | undefined) => void) | undefined;
  /** `received.length` at each interruption the caller made: a reply cut there ends there (the platform sends no `last` for it). */
  private readonly cuts: number[] = [];
  private waiters: (() => void)[] = [];

  private constructor(private readonly ws: WebSocket) {
    this.closed = new Promise((resolve) =>
      ws.on('close', (code) => {
        this.sessionEnded(undefined);
        resolve(code);
      }),
    );
    ws.on('message', (data) => {
      let m: RelayOutboundSeen;
      try {
        m = JSON.parse(data.toString());
      } catch {
        this.refused.push(data.toString());
        return;
      }
      const valid =
        (m.type === 'text' && typeof m.token === 'string' && typeof m.last === 'boolean') ||
        (m.type === 'end' && (m.handoffData === undefined || typeof m.handoffData === 'string')) ||
        (m.type === 'sendDigits' && typeof m.digits === 'string' && /^[0-9*#wW]+$/.test(m.digits as string)) ||
        m.type === 'play' || m.type === 'language';
      if (!valid) this.refused.push(m);
      else this.received.push(m);
      if (m.type === 'end') {
        // Twilio ends the session on `end`: what the <Connect> does next (its action, or hanging up) starts now, not at the close.
        this.handoff ??= { data: m.handoffData as string | undefined };
        this.sessionEnded(this.handoff.data);
        ws.close(1000);
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  private sessionOver = false;
  private sessionEnded(handoffData: string | undefined): void {
    if (this.sessionOver) return;
    this.sessionOver = true;
    this.onSessionEnd?.(handoffData);
  }

  /**
   * Connects to `url` and sends `setup`; rejects with the HTTP status and the refusal's body when
   * the upgrade is refused. `headers`: the upgrade request's (Twilio's `X-Twilio-Signature`).
   */
  static async connect(url: string, setup: { callSid: string; from?: string; to?: string; direction?: string; customParameters: Record<string, string> }, headers: Record<string, string> = {}): Promise<RelayClient> {
    const ws = new WebSocket(url, { headers });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => reject(Object.assign(new Error(`relay refused: ${res.statusCode} ${body}`), { status: res.statusCode, body })));
        res.on('error', () => reject(Object.assign(new Error(`relay refused: ${res.statusCode}`), { status: res.statusCode, body })));
      });
      ws.once('error', reject);
    });
    const client = new RelayClient(ws);
    client.send({
      type: 'setup', sessionId: `VX${setup.callSid.slice(2)}`, accountSid: 'AC00000000000000000000000000000000', parentCallSid: '', callSid: setup.callSid,
      from: setup.from ?? '+14155550100', to: setup.to ?? '+14155550101', forwardedFrom: '', callType: 'PSTN', callerName: '', direction: setup.direction ?? 'inbound', callStatus: 'IN-PROGRESS',
      customParameters: setup.customParameters,
    });
    return client;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** The caller says `text` (one final transcript). */
  say(text: string, lang = 'en-US'): void {
    this.send({ type: 'prompt', voicePrompt: text, lang, last: true });
  }

  interrupt(heard: string, durationMs = 800): void {
    this.cuts.push(this.received.length);
    this.send({ type: 'interrupt', utteranceUntilInterrupt: heard, durationUntilInterruptMs: durationMs });
  }

  press(digit: string): void {
    this.send({ type: 'dtmf', digit });
  }

  /** The replies spoken so far: the `text` tokens joined, one string per `last: true` (or per interruption that cut one short). */
  replies(): string[] {
    const out: string[] = [];
    let cur = '';
    let cut = false;
    for (const [i, m] of this.received.entries()) {
      if (this.cuts.includes(i) && cur) {
        out.push(cur.trim());
        cur = '';
        cut = true;
      }
      if (m.type !== 'text') continue;
      cur += m.token as string;
      if (m.last) {
        // The empty `last` that closes a reply cut short (as Twilio's SDK sends it) is no reply of its own.
        if (cur || !cut) out.push(cur.trim());
        cur = '';
        cut = false;
      } else if (m.token) cut = false;
    }
    return out;
  }

  /** Waits until `done()` holds (checked at each message), failing after `ms`. */
  async until(done: () => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`relay stand-in: timed out waiting for ${what}; received ${JSON.stringify(this.received)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /**
   * The network between Twilio and the platform fails: the socket is gone without a close
   * handshake (the platform sees 1006), the caller still on the line; Twilio's session fails.
   */
  drop(): void {
    this.ws.terminate();
  }

  /** The caller hangs up: Twilio closes the socket (the carrier stand-in then ends the call: `hungUp`). */
  close(): void {
    this.hungUp = true;
    this.ws.close(1000);
  }
}
