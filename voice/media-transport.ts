/**
 * What a call's session needs of the line it is bridged to, whatever carries it: Twilio's Media
 * Streams (twilio-transport.ts) or a browser's WebSocket (browser-transport.ts). The session sends
 * the agent's audio, a mark after each chunk (the line tells the session when the audio before it
 * has played), a `clear` when the caller cuts in, and closes the line when the call ends.
 */
export interface MediaTransport {
  /** Agent audio (base64, in the call's audio format), to be played in order. */
  sendMedia(payload: string): void;
  /** A mark after the audio sent so far: echoed to the session once that audio has played (or dropped by a `clear`). */
  sendMark(name: string): void;
  /** Drops the agent audio sent and not yet played (the caller interrupted). */
  clear(): void;
  /** Ends the line: 1000 a normal end, 1011 a failure (the reason says why). */
  close(code?: number, reason?: string): void;
}

/**
 * The audio both sides of a call speak: `mulaw` (G.711 μ-law at 8 kHz, one byte a sample: phone
 * calls, and browsers that choose it) or `pcm16` (16-bit little-endian PCM at 24 kHz, mono: the
 * Realtime API's native format, for browsers). The model's session is opened in the same format,
 * so audio passes through untouched both ways.
 */
export type AudioFormat = 'mulaw' | 'pcm16';

export const AUDIO_FORMATS: readonly AudioFormat[] = ['mulaw', 'pcm16'];

/** Bytes of audio per millisecond in each format. */
export const AUDIO_BYTES_PER_MS: Record<AudioFormat, number> = { mulaw: 8, pcm16: 48 };

/** What a session tells a line that shows the call as it happens (a browser: who speaks, the words). */
export interface SessionObserver {
  /** Words of one turn: `final` false while they come (the text so far), true once complete. */
  transcript(role: 'agent' | 'user', id: string, text: string, final: boolean): void;
  /** Someone started or stopped speaking (the agent: while its audio plays). */
  speaking(role: 'agent' | 'user', active: boolean): void;
}
