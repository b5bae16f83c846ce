import type { RawData, WebSocket } from 'ws';
import { AUDIO_BYTES_PER_MS, AUDIO_FORMATS, type AudioFormat, type MediaTransport, type SessionObserver } from './media-transport';
import { base64Bytes } from './playout';

/**
 * A browser's side of a web call (docs/api.md, "Web calls"): JSON text messages both ways.
 *
 * In (the browser): `start` first (`token`, `format`: `pcm16` or `mulaw`), then `audio`
 * (base64, the chosen format) and `hangup`. Out: `started`, `audio`, `clear` (stop playing what is
 * queued: the caller cut in), `speaking`, `transcript`, `error`, and `ended` before the close.
 *
 * Marks are kept here, not sent: a browser plays what it is sent in order, in real time, so the
 * transport keeps one estimate (until when the browser has agent audio queued, from the bytes
 * sent) and echoes each mark to the session when the audio before it has played by that clock. A
 * `clear` forgets the marks pending (the session has forgotten them too). So a browser client
 * needs no mark bookkeeping, and the session's turn-taking (the heard-words cut, the silence timer,
 * an end after the last words) works as on a phone call.
 */
export type BrowserMessage =
  | { type: 'start'; token: string; format: AudioFormat }
  | { type: 'audio'; audio: string }
  | { type: 'hangup' };

/** Why the server ends a web call, as `ended.reason` says. */
export type WebCallEndReason = 'client_hangup' | 'agent_hangup' | 'failed';

const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === 'object' && !Array.isArray(v);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** One browser message, or why it is not one (the text of an `error` message). */
export function parseBrowserMessage(data: RawData, isBinary: boolean): BrowserMessage | { error: string } {
  if (isBinary) return { error: 'messages are JSON text, not binary' };
  let m: unknown;
  try {
    m = JSON.parse(data.toString());
  } catch {
    return { error: 'a message is not JSON' };
  }
  if (!isObject(m) || typeof m.type !== 'string') return { error: 'a message needs a "type"' };
  switch (m.type) {
    case 'start':
      if (typeof m.token !== 'string' || !m.token) return { error: 'start: "token" is required (the token POST /web-calls answered)' };
      if (!AUDIO_FORMATS.includes(m.format)) return { error: `start: "format" must be one of ${AUDIO_FORMATS.map((f) => `"${f}"`).join(', ')}` };
      return { type: 'start', token: m.token, format: m.format };
    case 'audio':
      if (typeof m.audio !== 'string' || !BASE64.test(m.audio) || m.audio.length % 4 !== 0) return { error: 'audio: "audio" must be base64 audio in the call\'s format' };
      return { type: 'audio', audio: m.audio };
    case 'hangup':
      return { type: 'hangup' };
    case 'mark':
      return { error: 'mark: marks are not echoed on web calls (the server times playback itself)' };
    default:
      return { error: `unknown message type "${String(m.type).slice(0, 40)}" (start, audio, hangup)` };
  }
}

/** What the runtime sends to one browser: the call's line (MediaTransport) and what it shows (SessionObserver). */
export class BrowserTransport implements MediaTransport, SessionObserver {
  /** The session's mark handler: called when the audio before the mark has played. */
  onMark: (name: string) => void = () => {};
  format: AudioFormat = 'pcm16';
  /** Set before the close: what `ended.reason` says. */
  endReason: WebCallEndReason | undefined;
  private failure: string | undefined;
  /** Until when the browser has agent audio queued (performance.now() ms). */
  private queuedUntil = 0;
  private readonly marks = new Set<NodeJS.Timeout>();
  private ended = false;

  constructor(private readonly ws: WebSocket, private readonly now: () => number = () => performance.now()) {}

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  sendMedia(payload: string): void {
    const now = this.now();
    this.queuedUntil = Math.max(this.queuedUntil, now) + base64Bytes(payload) / AUDIO_BYTES_PER_MS[this.format];
    this.send(`{"type":"audio","audio":${JSON.stringify(payload)}}`);
  }

  sendMark(name: string): void {
    const timer = setTimeout(() => {
      this.marks.delete(timer);
      this.onMark(name);
    }, Math.max(0, this.queuedUntil - this.now()));
    this.marks.add(timer);
  }

  clear(): void {
    this.dropMarks();
    this.queuedUntil = 0;
    this.send('{"type":"clear"}');
  }

  transcript(role: 'agent' | 'user', id: string, text: string, final: boolean): void {
    this.send(JSON.stringify({ type: 'transcript', role, id, text, final }));
  }

  speaking(role: 'agent' | 'user', active: boolean): void {
    this.send(JSON.stringify({ type: 'speaking', role, active }));
  }

  /** The call failed: the browser is told why before `ended`. */
  failed(message: string): void {
    this.failure = message;
  }

  /** A problem with one message (the call goes on) or with the connection (before a close). */
  error(message: string): void {
    this.send(JSON.stringify({ type: 'error', message }));
  }

  send(text: string): void {
    if (this.open) this.ws.send(text);
  }

  /** Ends the line: `error` (a failure), `ended` with the reason, then the close. */
  close(code = 1000, reason = ''): void {
    this.dropMarks();
    if (!this.ended && this.open) {
      this.ended = true;
      const why = this.endReason ?? (code === 1000 ? 'agent_hangup' : 'failed');
      if (why === 'failed') this.error(this.failure ?? (reason || 'the call failed'));
      this.send(JSON.stringify({ type: 'ended', reason: why }));
    }
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason.slice(0, 120));
  }

  /** Refuses the connection (before admission): an `error` naming why, then close 1008 (or `code`). */
  refuse(message: string, code = 1008): void {
    this.ended = true;
    this.error(message);
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, message.slice(0, 120));
  }

  private dropMarks(): void {
    for (const t of this.marks) clearTimeout(t);
    this.marks.clear();
  }
}
