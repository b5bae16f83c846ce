import { logger } from '../../logger';
import { setUp } from './connect';
import { parseRelayMessage } from './protocol';
import { readRelayState } from './state';
import { interruption, utterance } from './turn-taking';

/**
 * The relay's side of a ConversationRelay call (docs/api.md, "Two voice pipelines"), by concern as
 * the Realtime runtime is (voice/): admission and `setup` (connect.ts), turn-taking (turn-taking.ts,
 * one reply at a time: reply.ts), tool calls (tool-calls.ts), the conversation filed turn by turn
 * (turns.ts), interruptions (interruption.ts), the end of a session and what the call does next
 * (call-ending.ts; the `<Connect action>`: action.ts), the connection's state (state.ts). This file routes each message.
 */
export { connectRelay, type ConnectAnswer } from './connect';
export { disconnectRelay, RELAY_TIME_UP } from './call-ending';
export { RELAY_APOLOGY, RELAY_TURN_BUDGET_MS } from './turn-taking';
export { PRESS_DIGITS_TOOL } from './tool-calls';
export { heardOf } from './interruption';

/** `$default`: one message of the connection. A message the relay cannot read is logged and dropped (Twilio's own errors are logged). */
export async function relayMessage(connectionId: string, body: string | undefined): Promise<void> {
  const parsed = parseRelayMessage(body);
  if ('problem' in parsed) {
    logger.warn('A ConversationRelay message was dropped', { connection_id: connectionId, problem: parsed.problem });
    return;
  }
  const message = parsed.message;
  switch (message.type) {
    // A turn claims itself and reads the state in one request (claimTurn): nothing else before the model.
    case 'prompt':
      if (message.last === false) return; // a partial transcript: the final one follows
      return utterance(connectionId, message.voicePrompt, message.voicePrompt);
    case 'dtmf':
      return utterance(connectionId, `The caller pressed ${message.digit} on their keypad.`, `(pressed ${message.digit})`);
    case 'interrupt':
      return interruption(connectionId, message.utteranceUntilInterrupt);
    case 'setup': {
      const state = await readRelayState(connectionId);
      if (state) await setUp(state, message);
      return;
    }
    case 'error':
      logger.warn('ConversationRelay reported an error', { connection_id: connectionId, description: message.description });
      return;
    default:
      return;
  }
}
