import { relayConnections } from '../../adapters/relay-connections';
import { clockNow } from '../../clock';
import { logger } from '../../logger';
import { recordConversation } from '../calls/voice-session';
import { send } from './reply';
import { afterTurn } from './turn-wait';
import { deleteRelayState, readRelayState, type RelayState } from './state';
import { forgetRelayTools } from './tool-calls';
import { collectConversation } from './turns';

/**
 * How a relay session ends and what the call does next. The platform ends a session with `end`
 * (its `handoffData`: why, and where to for a transfer); Twilio then requests the `<Connect
 * action>` (action.ts), which answers the next TwiML: `<Dial>` for a transfer, `<Hangup/>`
 * after `end_call` or the goodbye, a reconnect with a fresh token when the session ended on its
 * own while the call should go on (the session cap's `end`, or a socket API Gateway or the
 * network dropped), nothing after the caller's hang-up, an apology otherwise. `$disconnect` waits
 * for a turn still being written, writes the call's transcript and tool calls whole from the turns
 * (turns.ts) and removes the connection's state. It is best effort: when it never comes, the
 * recovery sweep finds the connection's entry due and writes the conversation instead (recovery.ts).
 */

/** What the caller hears when the call's time is up, before the end. */
export const RELAY_TIME_UP = 'I am sorry, we have reached the time limit for this call. Goodbye.';
/** What the caller hears when the relay cannot go on (no reconnect left, the agent gone). */
export const RELAY_CANNOT_CONTINUE = 'Sorry, this call cannot continue. Goodbye.';
/** A session ends before API Gateway's 2-hour connection limit: a longer call goes on in a new session (a reconnect). */
export const RELAY_SESSION_CAP_MS = 115 * 60_000;
/** Sessions a call may open after its first one (reconnects). */
export const RELAY_MAX_RECONNECTS = 3;

/** Why a session ends, as `end`'s handoffData (JSON) carries it to the action. */
export interface Handoff {
  reasonCode: 'end-call' | 'transfer' | 'max-duration' | 'reconnect';
  to?: string;
  /** A transfer's mode: `warm` goes through a conference and a briefing (calls/warm-transfer.ts); absent: cold (`<Dial>`). */
  mode?: 'warm';
  /** A warm transfer's destination description and the tool's reason (the briefing reads them). */
  description?: string;
  reason?: string;
}

/** A transfer's handoff (`end`'s handoffData): where to, and for a warm transfer its mode, the destination's description and the reason. */
export function transferHandoff(ending: NonNullable<RelayState['ending']>): Handoff {
  return {
    reasonCode: 'transfer',
    to: ending.to,
    ...(ending.mode === 'warm' ? { mode: 'warm' as const, ...(ending.description ? { description: ending.description } : {}), ...(ending.transfer_reason ? { reason: ending.transfer_reason } : {}) } : {}),
  };
}

/** Whether an utterance at `atMs` comes past the call's limit (the agent's maximum, else the session cap) or the session's. */
export function capOf(state: RelayState, atMs: number): 'max-duration' | 'reconnect' | undefined {
  const callLimit = state.agent.max_call_duration_ms > 0 ? state.agent.max_call_duration_ms : RELAY_SESSION_CAP_MS;
  if (atMs - state.started_ms >= callLimit) return 'max-duration';
  if (atMs - state.connected_at_ms >= RELAY_SESSION_CAP_MS) return 'reconnect';
  return undefined;
}

/** Sends `end`: Twilio ends the session and requests the `<Connect action>` with this handoff. */
export async function endSession(state: RelayState, handoff: Handoff): Promise<void> {
  const outcome = await send(state, { type: 'end', handoffData: JSON.stringify(handoff) });
  if (outcome === 'failed') await relayConnections().close(state.connection_id).catch((err: unknown) => logger.warn('A relay connection could not be closed', { connection_id: state.connection_id, error: err as Error }));
}

/**
 * `$disconnect`: a turn still being written is waited for (bounded), the call's conversation is
 * written whole from its turns, and the connection's state goes (its entry in the calls-due index
 * with it). It never decides the call's end by itself when Twilio runs the session: a socket closes
 * without `end` when the caller hangs up, but also when API Gateway drops it (10 idle minutes, its
 * 2-hour limit), at a restart or on a network fault while the caller is still on the line. Twilio
 * then requests the `<Connect action>` with the call's status (action.ts): `completed` ends the
 * call there, `in-progress` resumes the conversation in a new session. Only a session with no
 * Twilio behind it (TELEPHONY_PROVIDER not `twilio`: the terminal client on the simulated carrier)
 * is hung up by its close, an inbound call ending now as at a media stream's stop.
 */
export async function disconnectRelay(connectionId: string): Promise<void> {
  forgetRelayTools(connectionId);
  const read = await readRelayState(connectionId);
  if (!read) return;
  await afterTurn(read, read.turn);
  const hangsUp = !read.ending && !read.action_follows;
  await recordConversation(read.organization_id, read.call_id, { ...(await collectConversation(read.call_id)), ...(hangsUp ? { streamEndedAt: clockNow().toISOString() } : {}) });
  await deleteRelayState(connectionId);
}
