import WebSocket from 'ws';

/**
 * A stand-in for Twilio's side of a Media Stream (https://www.twilio.com/docs/voice/media-streams/websocket-messages):
 * it connects to the voice runtime, sends `connected` and `start` (with the TwiML's custom
 * parameters), plays a μ-law recording as 20 ms `media` frames, and behaves as Twilio does with
 * what comes back: agent `media` is "played", each `mark` is echoed once the audio before it has
 * played (at once with `autoEcho`, or when the test says with `echoMarks`), and a `clear` drops
 * the unplayed audio and echoes every pending mark.
 */

/** G.711 μ-law of one 16-bit linear sample (ITU-T G.711, the bias-and-segment encoder). */
export function linearToMulaw(sample: number): number {
  const BIAS = 0x84;
  const CLIP = 32635;
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (sign) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/**
 * A speech-like μ-law 8 kHz recording: a voiced tone (fundamental and harmonics) gliding in pitch,
 * shaped into syllables, with a little noise; deterministic for a seed.
 */
export function mulawRecording(seconds: number, seed = 1): Buffer {
  const rate = 8000;
  const out = Buffer.alloc(Math.round(seconds * rate));
  let state = seed >>> 0 || 1;
  const noise = () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
  let phase = 0;
  for (let i = 0; i < out.length; i++) {
    const t = i / rate;
    const f0 = 140 + 40 * Math.sin(2 * Math.PI * 0.7 * t + seed);
    phase += (2 * Math.PI * f0) / rate;
    const voiced = Math.sin(phase) + 0.5 * Math.sin(2 * phase) + 0.25 * Math.sin(3 * phase);
    const syllables = Math.max(0, Math.sin(2 * Math.PI * 3.5 * t));
    out[i] = linearToMulaw(9000 * syllables * voiced + 300 * noise());
  }
  return out;
}

export interface MediaClientOptions {
  streamSid?: string;
  callSid?: string;
  customParameters: Record<string, string>;
  /** Echo each mark as soon as it arrives (playback takes no time). Default true. */
  autoEcho?: boolean;
}

export class TwilioMediaClient {
  readonly streamSid: string;
  /** Agent audio received (each `media` payload decoded), in order; a `clear` does not remove what was received. */
  readonly media: Buffer[] = [];
  readonly marks: string[] = [];
  clears = 0;
  /** Every message received, parsed. */
  readonly messages: any[] = [];
  /** Marks received and not yet echoed. */
  private pending: string[] = [];
  autoEcho: boolean;
  readonly closed: Promise<{ code: number; reason: string }>;
  private seq = 0;
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  private constructor(private readonly ws: WebSocket, private readonly options: MediaClientOptions) {
    this.streamSid = options.streamSid ?? `MZ${Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32)}`;
    this.autoEcho = options.autoEcho ?? true;
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
      this.wake();
    }));
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      this.messages.push(m);
      if (m.event === 'media') this.media.push(Buffer.from(m.media.payload, 'base64'));
      if (m.event === 'mark') {
        this.marks.push(m.mark.name);
        this.pending.push(m.mark.name);
        if (this.autoEcho) this.echoMarks();
      }
      if (m.event === 'clear') {
        this.clears++;
        this.echoMarks(); // Twilio returns the marks of the audio it dropped
      }
      this.wake();
    });
  }

  /** Connects and sends `connected` and `start`; resolves once open. */
  static async connect(url: string, options: MediaClientOptions): Promise<TwilioMediaClient> {
    const ws = new WebSocket(url);
    const client = new TwilioMediaClient(ws, options);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    client.sendRaw({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    client.sendRaw({
      event: 'start',
      sequenceNumber: String(++client.seq),
      start: {
        accountSid: 'AC00000000000000000000000000000002',
        streamSid: client.streamSid,
        callSid: options.callSid,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        customParameters: options.customParameters,
      },
      streamSid: client.streamSid,
    });
    return client;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Plays a μ-law recording as 20 ms frames (160 bytes), `intervalMs` apart (0: as fast as the socket takes them). */
  async play(audio: Buffer, intervalMs = 0): Promise<void> {
    for (let at = 0, chunk = 1; at < audio.length && this.open; at += 160, chunk++) {
      this.sendRaw({
        event: 'media',
        sequenceNumber: String(++this.seq),
        media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: audio.subarray(at, at + 160).toString('base64') },
        streamSid: this.streamSid,
      });
      if (intervalMs) await new Promise((r) => setTimeout(r, intervalMs));
    }
  }

  /** Echoes the first `count` pending marks (all by default): that audio has played. */
  echoMarks(count = this.pending.length): void {
    for (const name of this.pending.splice(0, count)) this.sendRaw({ event: 'mark', sequenceNumber: String(++this.seq), streamSid: this.streamSid, mark: { name } });
  }

  get pendingMarks(): number {
    return this.pending.length;
  }

  /** The call ended at the carrier: `stop`, then the socket closes. */
  stop(): void {
    this.sendRaw({ event: 'stop', sequenceNumber: String(++this.seq), streamSid: this.streamSid, stop: { accountSid: 'AC00000000000000000000000000000002', callSid: this.options.callSid } });
    this.ws.close(1000);
  }

  sendRaw(message: unknown): void {
    if (this.open) this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Resolves when `check` holds (checked after every message), or rejects after `ms`. */
  until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Twilio stand-in: ${what} never happened`)), ms);
      this.waiters.push({ check, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  private wake(): void {
    this.waiters = this.waiters.filter((w) => (w.check() ? (w.resolve(), false) : true));
  }
}
