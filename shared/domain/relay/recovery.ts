import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import type { CallToolCalls, Transcript } from '../calls/schemas';
import type { CallItem } from '../calls/service';
import { recordConversation, type VoiceFields } from '../calls/voice-session';
import { deleteRelayState, RELAY_SESSION_DUE_MS, sessionDue, type RelayDue, type RelayState } from './state';
import { collectConversation } from './turns';

/**
 * The relay's part of the recovery sweep (calls/recovery.ts): what a lost `$disconnect` (AWS
 * delivers it best effort) would have written. A relay call's transcript reaches the call only when
 * its session ends (turns.ts): `$disconnect` writes it and deletes the connection's state and due
 * entry; the `<Connect action>` writes it too when the platform ended the session. A connection
 * whose `$disconnect` never came keeps its due entry (state.ts, RELAY_SESSION_DUE_MS after its
 * admission): the sweep finds it due, moves it on when a prompt came since (the session may live),
 * else writes the call's transcript and tool calls from the turns, once, and removes the
 * connection. It never ends the call: the carrier's final status, the action or the call's own
 * entry in the sweep ends it, exactly once, as any call.
 */

/**
 * A connection's due entry found due by the sweep: `moved` (a prompt within RELAY_SESSION_DUE_MS:
 * the entry is due that long after it now, the time returned) or `recovered` (the conversation onto
 * the call unless recorded since the last prompt, the connection's items removed).
 */
export async function recoverRelaySession(entry: RelayDue, now: string): Promise<{ movedTo?: string }> {
  const nowMs = Date.parse(now);
  const state = await getItem<RelayState>(keys.relayConnection(entry.connection_id));
  const lastHeardMs = state ? (state.last_prompt_ms ?? state.connected_at_ms) : 0;
  if (state && lastHeardMs + RELAY_SESSION_DUE_MS > nowMs) {
    const due = sessionDue(entry.connection_id, lastHeardMs + RELAY_SESSION_DUE_MS);
    try {
      await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.relayConnectionDue(entry.connection_id),
          UpdateExpression: 'SET #due = :due, gsi2pk = :gpk, gsi2sk = :gsk',
          ConditionExpression: '#due = :read',
          ExpressionAttributeNames: { '#due': 'due_at' },
          ExpressionAttributeValues: { ':due': due.due_at, ':gpk': due.gsi2pk, ':gsk': due.gsi2sk, ':read': entry.due_at },
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err; // gone or moved meanwhile
    }
    return { movedTo: due.due_at };
  }
  const call = await getItem<CallItem & VoiceFields>(keys.call(entry.organization_id, entry.call_id));
  if (call && !(call.voice_recorded_at && Date.parse(call.voice_recorded_at) >= lastHeardMs)) {
    const outcome = await recordConversation(entry.organization_id, entry.call_id, await collectConversation(entry.call_id));
    logger.info('A relay session whose $disconnect never came: its conversation was written from its turns', { call_id: entry.call_id, connection_id: entry.connection_id, call_was: outcome === 'after_end' ? 'ended' : 'live' });
  }
  await deleteRelayState(entry.connection_id);
  return {};
}

/** The conversation a relay call's turns hold, for a call the sweep ends with no voice recorded on it; undefined when it has none (not a relay call). */
export async function lostRelayConversation(callId: string): Promise<{ transcript: Transcript; toolCalls: CallToolCalls } | undefined> {
  const conversation = await collectConversation(callId);
  return conversation.transcript.length || conversation.toolCalls.length ? conversation : undefined;
}
