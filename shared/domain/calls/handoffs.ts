import { keys } from '../../db/keys';
import { transact, updateExisting } from '../../db/store';
import { logger } from '../../logger';
import { dispatchEvents } from '../events/publish';
import { handoffEvent } from '../conversations/handoff';
import type { HandoffSwitch } from '../conversations/engine';
import type { Segment } from '../conversations/segments';

/** The members of a call (item or relay state) a hand-off record needs. */
export interface HandedOffCall {
  organization_id: string;
  id: string;
  channel?: string | null;
  /** The agent the call started with, and its version. */
  agent_id: string;
  agent_version: number | null;
}

/**
 * Records a call's hand-off to another agent (docs/api.md, "Agent-to-agent hand-off"): the call's
 * `segments` (the whole chain, `segments` as it stands after the switch) and the
 * `conversation.handed_off` event, in one transaction; then the event is dispatched. Used by
 * simulated calls, the relay and the Realtime runtime (voice/). A hand-off is at most five per
 * call, so writing the call item at each is cheap; `segments` is written by nothing else, so the
 * write needs no condition beyond the call's existence. A failure is logged, never thrown: the
 * conversation has already moved on with the new agent.
 */
export async function recordCallHandoff(call: HandedOffCall, sw: Pick<HandoffSwitch, 'from' | 'segment'>, segments: Segment[]): Promise<void> {
  const e = handoffEvent(call.organization_id, { type: 'call', id: call.id, channel: call.channel || 'phone', agent_id: call.agent_id, agent_version: call.agent_version }, sw, segments);
  try {
    await transact([updateExisting(keys.call(call.organization_id, call.id), { segments, updated_at: new Date().toISOString() }), e.write]);
  } catch (err) {
    logger.warn('A call\'s hand-off could not be recorded', { call_id: call.id, error: err as Error });
    return;
  }
  await dispatchEvents([e.event]);
}
