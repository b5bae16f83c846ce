import type { Transcript } from './schemas';
import { fillVariables } from './state';

/** The agent's opening when its begin message is empty. */
const DEFAULT_OPENING = 'Hello, this is your assistant calling. Do you have a moment?';

/** The scripted turns after the agent's opening, in order, at fractions of the call. */
const SCRIPT: { role: 'agent' | 'user'; text: string; at: number }[] = [
  { role: 'user', text: 'Hi, yes, this is a good time. Thanks for calling.', at: 0.25 },
  { role: 'agent', text: 'Great. I am calling to confirm your details and answer any questions you have.', at: 0.45 },
  { role: 'user', text: 'Everything looks fine to me. That sounds great, thank you.', at: 0.7 },
  { role: 'agent', text: 'Wonderful, thank you for your time. Have a good day. Goodbye.', at: 0.88 },
];

/**
 * The transcript of an answered simulated call of `seconds` seconds: the agent's begin message
 * (its `{{name}}` placeholders filled from the call's dynamic variables) at 0 s, then the
 * scripted turns spread over the call. Deterministic, so tests can assert it.
 */
export function simulatedTranscript(beginMessage: string, variables: Record<string, string>, seconds: number): Transcript {
  const opening = fillVariables(beginMessage.trim() || DEFAULT_OPENING, variables);
  const time = (fraction: number) => Math.round(seconds * fraction * 10) / 10;
  return [{ role: 'agent', text: opening, time_sec: 0 }, ...SCRIPT.map((t) => ({ role: t.role, text: t.text, time_sec: time(t.at) }))];
}
