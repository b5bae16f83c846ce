import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import type { CallToolCalls, Transcript, TransferOutcome } from './schemas';
import type { CallItem } from './service';
import { briefingLine, outcomeLine, type TransferItem } from './transfer-item';
import { settleTransfer, startWarmTransfer } from './warm-transfer';

/**
 * A warm transfer of a simulated call (docs/api.md, "Warm transfer", "On the simulated carrier"),
 * through the same code as a Twilio call's: startWarmTransfer dials the person (the simulated
 * carrier decides their call up front by the destination's last digit, and decidedOutcome reads
 * it: 0–4 accepted, 5 declined, 6 a machine, 7 and 8 no answer, 9 a failure), records the transfer
 * on the call (`transfers[]`, `call.transfer_started`), makes the briefing from the conversation
 * so far (makeBriefing: the conversation model, or the template on the local model), settles it
 * (`call.transferred` or `call.transfer_failed`) and charges the person's answered seconds. The
 * simulated conversation (conversation.ts) then ends the call `transferred` (connected) or goes on
 * with the agent, which says what became of the transfer as a resumed relay session does.
 *
 * The simulated conversation runs when the carrier reports the call's end, before the end is
 * written; a redelivered end runs it again. The n-th warm transfer of a run is the call's n-th
 * transfer: one already on the call (the earlier run's) is read, not dialed again, and one that
 * run left unsettled settles `failed` (its person's call cannot be told from here).
 */

export interface SimulatedTransferRequest {
  to: string;
  description?: string;
  reason?: string;
}

export interface SimulatedTransferResult {
  /** The transfer's index on the call; undefined when none was recorded (the call could not be transferred). */
  index?: number;
  outcome: TransferOutcome;
  briefing: string;
  /** The two `system` lines a transfer adds to the transcript (the briefing, the outcome); none when none was recorded. */
  lines: string[];
  /** The call's transfers as they are now (with this one). */
  transfers?: TransferItem[];
}

const resultOf = (call: CallItem | undefined, index: number): SimulatedTransferResult | undefined => {
  const t = call?.transfers?.[index];
  if (!t || t.outcome === null) return undefined;
  return { index, outcome: t.outcome, briefing: t.briefing, lines: [briefingLine(t), outcomeLine(t, t.outcome)], transfers: call!.transfers };
};

/**
 * The `ordinal`-th warm transfer of a simulated call's conversation (0: its first), to `request.to`.
 * `soFar`: the conversation until the agent said it is connecting the caller (the briefing reads it).
 */
export async function simulatedWarmTransfer(call: CallItem, ordinal: number, request: SimulatedTransferRequest, soFar: { transcript: Transcript; toolCalls: CallToolCalls }): Promise<SimulatedTransferResult> {
  const orgId = call.organization_id;
  const read = (await getItem<CallItem>(keys.call(orgId, call.id))) ?? call;
  const earlier = read.transfers?.[ordinal];
  if (earlier && earlier.phone_number === request.to) {
    // A redelivered end: this transfer was made by the run before.
    if (earlier.outcome === null) await settleTransfer(orgId, call.id, ordinal, 'failed', { redirect: false });
    const again = resultOf(await getItem<CallItem>(keys.call(orgId, call.id)), ordinal);
    if (again) return again;
  }
  const started = await startWarmTransfer({
    organizationId: orgId,
    callId: call.id,
    // The transcript is the call's own (written whole with the end), as a Realtime call's: the transfer's lines are kept there.
    pipeline: 'realtime',
    destination: { phone_number: request.to, ...(request.description ? { description: request.description } : {}) },
    ...(request.reason ? { reason: request.reason } : {}),
    transcript: soFar.transcript,
    // The briefing names the tools used so far: the simulated call's tool calls are written only with its end.
    call: { ...read, tool_calls: soFar.toolCalls },
  });
  const index = started.ok ? started.transferIndex : (read.transfers ?? []).length;
  const settled = resultOf(await getItem<CallItem>(keys.call(orgId, call.id)), index);
  if (settled) return settled;
  // Not recorded (the call could not be transferred now): the agent goes on as after a failed transfer.
  logger.warn('A simulated call\'s warm transfer did not start; the conversation goes on', { call_id: call.id, error: started.ok ? 'not settled' : started.error });
  return { outcome: 'failed', briefing: '', lines: [] };
}
