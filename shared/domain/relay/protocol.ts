/**
 * Twilio ConversationRelay's WebSocket messages (Twilio's reference, "ConversationRelay WebSocket
 * messages"): what ConversationRelay sends the platform and what the platform sends back. Twilio
 * does the speech (transcription, text-to-speech, interruption detection); only text crosses.
 */

/** First message of a session: the call and the TwiML's `<Parameter>`s (`customParameters`). */
export interface SetupMessage {
  type: 'setup';
  sessionId?: string;
  accountSid?: string;
  callSid?: string;
  from?: string;
  to?: string;
  direction?: string;
  customParameters?: Record<string, string>;
}
/** The caller's words; `last: false` only with partial prompts on (the platform answers the `last: true` one). */
export interface PromptMessage { type: 'prompt'; voicePrompt: string; lang?: string; last?: boolean }
/** The caller spoke over the agent: the part of the agent's reply played before they did, and how long it played. */
export interface InterruptMessage { type: 'interrupt'; utteranceUntilInterrupt: string; durationUntilInterruptMs?: number }
/** A key the caller pressed (the TwiML turns `dtmfDetection` on). */
export interface DtmfMessage { type: 'dtmf'; digit: string }
/** Twilio refused something the platform sent, or failed itself. */
export interface ErrorMessage { type: 'error'; description: string }
/** Debug information (`debug` attribute): logged, nothing else. */
export interface InfoMessage { type: 'info'; [k: string]: unknown }

export type RelayInbound = SetupMessage | PromptMessage | InterruptMessage | DtmfMessage | ErrorMessage | InfoMessage;

/** One token of the agent's reply to speak; `last: true` closes the reply. */
export interface TextMessage { type: 'text'; token: string; last: boolean; interruptible?: boolean; preemptible?: boolean; lang?: string }
/** Ends the session; `handoffData` (a string, JSON here) reaches the `<Connect action>` URL as `HandoffData`. */
export interface EndMessage { type: 'end'; handoffData?: string }
/** Plays DTMF tones on the call (`w` waits half a second). */
export interface SendDigitsMessage { type: 'sendDigits'; digits: string }

export type RelayOutbound = TextMessage | EndMessage | SendDigitsMessage;

/** Largest message read from the socket (API Gateway's own frame limit is 32 KB, a message 128 KB). */
export const MAX_RELAY_MESSAGE_BYTES = 128 * 1024;

/** The digits `sendDigits` may carry: Twilio's `0-9`, `*`, `#` and `w` (a pause). */
export const DIGITS = /^[0-9*#wW]{1,64}$/;

/** Reads one message, or says what is wrong with it (a message the platform does not know is `unknown`). */
export function parseRelayMessage(raw: string | undefined): { message: RelayInbound } | { problem: string } {
  if (!raw || Buffer.byteLength(raw) > MAX_RELAY_MESSAGE_BYTES) return { problem: raw ? 'message too large' : 'empty message' };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { problem: 'not JSON' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { problem: 'not a JSON object' };
  const m = value as Record<string, unknown>;
  const str = (name: string) => typeof m[name] === 'string';
  switch (m.type) {
    case 'setup':
      if (m.customParameters !== undefined && (typeof m.customParameters !== 'object' || m.customParameters === null)) return { problem: 'setup.customParameters must be an object' };
      return { message: m as unknown as SetupMessage };
    case 'prompt':
      if (!str('voicePrompt')) return { problem: 'prompt.voicePrompt must be a string' };
      return { message: m as unknown as PromptMessage };
    case 'interrupt':
      if (!str('utteranceUntilInterrupt')) return { problem: 'interrupt.utteranceUntilInterrupt must be a string' };
      return { message: m as unknown as InterruptMessage };
    case 'dtmf':
      if (!str('digit') || !/^[0-9*#A-Da-d]$/.test(m.digit as string)) return { problem: 'dtmf.digit must be one key' };
      return { message: m as unknown as DtmfMessage };
    case 'error':
      return { message: { type: 'error', description: str('description') ? (m.description as string) : '' } };
    case 'info':
      return { message: m as InfoMessage };
    default:
      return { problem: `unknown message type ${JSON.stringify(m.type ?? null)}` };
  }
}
