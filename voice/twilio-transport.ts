import type { RawData, WebSocket } from 'ws';

/**
 * Twilio Media Streams, both ways (https://www.twilio.com/docs/voice/media-streams/websocket-messages).
 * In: `connected`, `start` (with `customParameters` from the TwiML's `<Parameter>`s), `media`
 * (base64 μ-law 8 kHz, 20 ms frames), `mark` (a mark we sent, echoed once the audio before it has
 * played, or at once when a `clear` dropped it), `dtmf`, `stop`. Out: `media`, `mark`, `clear`.
 */
export interface TwilioStart {
  streamSid: string;
  callSid?: string;
  accountSid?: string;
  customParameters: Record<string, string>;
  mediaFormat?: { encoding: string; sampleRate: number; channels: number };
}

export type TwilioFrame =
  | { event: 'connected' }
  | { event: 'start'; streamSid: string; start: TwilioStart }
  | { event: 'media'; media: { payload: string; track?: string; timestamp?: string } }
  | { event: 'mark'; mark: { name: string } }
  | { event: 'dtmf'; dtmf: { digit: string } }
  | { event: 'stop' };

const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === 'object' && !Array.isArray(v);

/** One carrier message, or null when it is not a well-formed Media Streams message. */
export function parseTwilioFrame(data: RawData, isBinary: boolean): TwilioFrame | null {
  if (isBinary) return null;
  let m: unknown;
  try {
    m = JSON.parse(data.toString());
  } catch {
    return null;
  }
  if (!isObject(m) || typeof m.event !== 'string') return null;
  switch (m.event) {
    case 'connected':
    case 'stop':
      return { event: m.event };
    case 'start': {
      const s = m.start;
      if (!isObject(s)) return null;
      const streamSid = typeof m.streamSid === 'string' ? m.streamSid : s.streamSid;
      if (typeof streamSid !== 'string') return null;
      const params = isObject(s.customParameters) ? s.customParameters : {};
      const customParameters = Object.fromEntries(Object.entries(params).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
      return { event: 'start', streamSid, start: { ...s, streamSid, customParameters } as TwilioStart };
    }
    case 'media':
      return isObject(m.media) && typeof m.media.payload === 'string' ? { event: 'media', media: m.media as { payload: string } } : null;
    case 'mark':
      return isObject(m.mark) && typeof m.mark.name === 'string' ? { event: 'mark', mark: { name: m.mark.name } } : null;
    case 'dtmf':
      return isObject(m.dtmf) ? { event: 'dtmf', dtmf: { digit: String(m.dtmf.digit ?? '') } } : null;
    default:
      return null;
  }
}

/** What the runtime sends to the carrier on one stream. */
export class TwilioTransport {
  streamSid = '';

  constructor(private readonly ws: WebSocket) {}

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  /** Agent audio, as the model's base64 μ-law, unchanged. */
  sendMedia(payload: string): void {
    this.send(`{"event":"media","streamSid":${JSON.stringify(this.streamSid)},"media":{"payload":${JSON.stringify(payload)}}}`);
  }

  sendMark(name: string): void {
    this.send(JSON.stringify({ event: 'mark', streamSid: this.streamSid, mark: { name } }));
  }

  /** Drops the agent audio Twilio holds but has not played (the caller interrupted). */
  clear(): void {
    this.send(JSON.stringify({ event: 'clear', streamSid: this.streamSid }));
  }

  close(code = 1000, reason = ''): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }

  private send(text: string): void {
    if (this.open) this.ws.send(text);
  }
}
