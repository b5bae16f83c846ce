import { recordCallHandoff } from '../shared/domain/calls/handoffs';
import { settleTransfer, startWarmTransfer } from '../shared/domain/calls/warm-transfer';
import { logger } from '../shared/logger';
import type { CallContext } from './call-context';
import type { CarrierCall } from './carrier';
import type { EndDeps } from './call-ending';
import type { VoiceSettings } from './config';
import { applySwitch, callHandoff } from './handoff';
import { agentUpdate } from './realtime-client';
import { historyItems, resumeInstructions, transferOf } from './resume';
import { toolsBridge, type ToolRun, type ToolsBridge } from './tools-bridge';
import type { TranscriptRecorder } from './transcript';

/**
 * A stream of a call that had a warm transfer may stop because the platform moved the caller (a
 * send-back, or a late move into a transfer's conference overtaken by its outcome): the carrier
 * says whether the call goes on, and then the stop does not end it.
 */
export async function movedByPlatform(context: CallContext, carrier: CarrierCall, startedWarm: boolean): Promise<boolean> {
  if (!(startedWarm || (context.call.transfers ?? []).some((t) => t.mode === 'warm')) || !(await carrier.goesOn())) return false;
  logger.info('The stream stopped but the call goes on at the carrier (moved by the platform): it is not ended here', { call_id: context.call.id });
  return true;
}

/** What the session lends its transfers and hand-offs. */
export interface TransferHost {
  context: CallContext;
  settings: VoiceSettings;
  transcript: TranscriptRecorder;
  /** Sends an event to the model's session. */
  send(event: Record<string, unknown>): void;
  /** The model has produced audio in this session: the Realtime API no longer lets its voice change (a hand-off keeps it). */
  modelSpoke(): boolean;
  /** Closes the model's session. */
  closeModel(): void;
}

/**
 * A session's transfers and hand-offs, beside turn-taking and call-ending (session.ts routes to
 * them):
 *
 * - `handoff_to_agent` (handoff.ts): the platform's rules decide; a switch gives the session the
 *   target's instructions and tools (and its voice while the model has not spoken), records the
 *   call's segment and the event, and the next response is the target's. A refusal is the tool's
 *   error the model hears, and the current agent goes on. So the call's tools live here: a
 *   hand-off replaces them.
 * - a warm transfer's platform side (shared/domain/calls/warm-transfer.ts), for call-ending.ts:
 *   started, abandoned when the caller cannot be moved, or the caller moved to its conference.
 * - a resumed stream (resume.ts): the caller back from a transfer the person did not take.
 */
export class Transfers implements Pick<EndDeps, 'startWarm' | 'abandonWarm' | 'handedOver'> {
  /** The call's tools, the current agent's (undefined until the session opens them). */
  tools: ToolsBridge | undefined;
  /** A hand-off being made (one at a time: a second in the same breath is refused). */
  private handingOff = false;
  /** The hand-offs' records (segments and events), in order; each of the call's writes waits for them (its end carries the segments). */
  private writes: Promise<void> = Promise.resolve();
  /** The caller left this stream for a warm transfer's conference: nothing more is written (the platform owns the call). */
  private moved = false;
  /** This stream started a warm transfer (its outcome's send-back may stop the stream before the caller's move lands). */
  startedWarm = false;

  constructor(private readonly host: TransferHost) {}

  private get callId(): string {
    return this.host.context.call.id;
  }

  /** The caller was moved to a warm transfer's conference. */
  get movedToConference(): boolean {
    return this.moved;
  }

  /** Settles once every hand-off made so far is recorded. */
  get recorded(): Promise<void> {
    return this.writes;
  }

  /** Opens the first agent's tools, with `handoff_to_agent` carried out here. */
  async openTools(): Promise<ToolsBridge> {
    this.tools = await toolsBridge(this.host.context, { handoff: (args) => this.handOff(args) });
    return this.tools;
  }

  /** `handoff_to_agent`: the switch applied to the call and the model's session, or the refusal the model hears. */
  async handOff(args: Record<string, unknown>): Promise<ToolRun> {
    if (this.handingOff) return { result: { error: 'another hand-off is being made: wait for it' } };
    this.handingOff = true;
    try {
      const context = this.host.context;
      const reason = typeof args.reason === 'string' && args.reason.trim() ? args.reason.trim() : null;
      const sw = await callHandoff(context, String(args.agent_id ?? ''), reason);
      if ('refused' in sw) return { result: { error: sw.refused } };
      applySwitch(context, sw);
      this.tools = await toolsBridge(context, { catalog: sw.tools, handoff: (a) => this.handOff(a) });
      const voice = sw.agent.voice_id && !this.host.modelSpoke() ? sw.agent.voice_id : undefined;
      this.host.send(agentUpdate(this.host.settings.realtimeProtocol, { instructions: context.instructions, tools: this.tools.definitions, voice, temperature: sw.agent.temperature }));
      // The record (segments, event) does not hold up the target's reply; hand-offs are written in order, and before the call's own writes.
      const segments = context.segments;
      this.writes = this.writes
        .then(() => recordCallHandoff({ ...context.call, agent_version: context.call.agent_version ?? null }, sw, segments))
        .catch((err) => logger.warn('A hand-off\'s event could not be sent', { call_id: this.callId, error: err as Error }));
      return { result: { handed_off_to: sw.agent.id, agent_name: sw.agent.agent_name || sw.agent.name, reason } };
    } finally {
      this.handingOff = false;
    }
  }

  /** The platform's side of a warm transfer (shared/domain/calls/warm-transfer.ts). */
  startWarm: EndDeps['startWarm'] = async (to, warm) => {
    const call = this.host.context.call;
    try {
      const started = await startWarmTransfer({
        organizationId: call.organization_id,
        callId: call.id,
        destination: { phone_number: to, ...(warm.description ? { description: warm.description } : {}) },
        pipeline: 'realtime',
        ...(warm.reason ? { reason: warm.reason } : {}),
        // The conversation as this stream has it (written just before, but the briefing need not read it back).
        transcript: this.host.transcript.transcript(),
      });
      if (started.ok) this.startedWarm = true;
      return started.ok ? { ok: true, callerTwiml: started.callerTwiml, transferIndex: started.transferIndex } : { ok: false, error: started.error };
    } catch (err) {
      logger.error('A warm transfer could not be started', { call_id: call.id, error: err as Error });
      return { ok: false, error: 'the transfer could not be started' };
    }
  };

  abandonWarm: EndDeps['abandonWarm'] = (index) =>
    settleTransfer(this.host.context.call.organization_id, this.callId, index, 'failed', { redirect: false }).then(
      () => undefined,
      (err) => logger.error('A warm transfer the caller could not join was not settled', { call_id: this.callId, error: err as Error }),
    );

  handedOver: EndDeps['handedOver'] = () => {
    this.moved = true;
    this.host.closeModel();
  };

  /** A resumed stream (`resume`, a warm transfer's index): the conversation so far, for the new model session before anything the caller says now. */
  resumedHistory(resume: string | undefined): Record<string, unknown>[] {
    return resume === undefined ? [] : historyItems(this.host.settings.realtimeProtocol, this.host.transcript.transcript());
  }

  /** The first response's instructions on a resumed stream: the caller is back from the transfer. */
  resumedGreeting(resume: string): string {
    return resumeInstructions(transferOf(this.host.context.call, resume));
  }
}
