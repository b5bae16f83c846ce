import { withTraceQuery } from '../../telemetry/tracing';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { llm } from '../../adapters/llm';
import { telephony, type CallStatusEvent } from '../../adapters/telephony';
import { liveCallGone } from '../../adapters/telephony/port';
import { clockMs, clockNow } from '../../clock';
import { config } from '../../config';
import { db, tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, ignoreConditionFailed, transact, updateExisting, type CounterDelta, type TransactItem } from '../../db/store';
import { noteDue } from '../../db/sweep-marker';
import { logger } from '../../logger';
import { effectiveModel } from '../agents/models';
import { chargeWrite, derivedChargeId } from '../billing/service';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { findConversationAgent } from '../agents/service';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import { relayTwiml, relayCallAgent, isRelayAgent } from '../relay/twiml';
import { collectConversation, sessionSeq, turnSeq, turnWrite } from '../relay/turns';
import type { Transcript, TransferOutcome } from './schemas';
import { dueEntry, RECOVERY_MARGIN_MS, view, type CallItem } from './service';
import { billableMinutes, isMachine, moveFor } from './state';
import { endMove, moveCall } from './lifecycle';
import { briefingLine, outcomeLine, transferView, type TransferItem } from './transfer-item';
import { recordConversation } from './voice-session';
import { streamTwiml } from './voice-stream';

/**
 * Warm transfer (docs/api.md, "Hand-offs" → "Warm transfer"), the platform's side for both voice
 * pipelines. The pipeline (the relay's `<Connect action>`, the Realtime runtime) calls
 * startWarmTransfer once the agent said it is connecting the caller, and plays the TwiML it answers
 * on the caller's call: `<Dial><Conference>` with hold audio (`waitUrl`), the caller not starting
 * the conference (`startConferenceOnEnter=false`) and ending it on leaving. The transfer is
 * recorded, then the person dialed (asynchronous machine detection, ringing the agent's
 * `ring_duration_ms`), and the caller's TwiML answered at once: the briefing is made by the
 * person's `initiated`/`ringing` status callbacks while their phone rings (ensureBriefing; each in
 * its own request, nothing after a response, as Lambda requires). When they answer, Twilio asks the
 * transfer-answer callback, which speaks the briefing in a one-key `<Gather>`
 * (transfer-callbacks.ts). `1` joins them to the conference (`startConferenceOnEnter=true`: the
 * caller's hold ends) and the transfer connects when they are in it; the call will end
 * `transferred`. Anything else, a timeout, no answer, a machine, a failed dial or a person who
 * hangs up before joining settles the transfer otherwise and the caller's live call is redirected
 * back to the agent: a new ConversationRelay session resuming the conversation, or a new media
 * stream with the `resume` parameter (the transfer's index).
 *
 * Nothing waits forever on a callback (Twilio sends each once): every pending transfer, and every
 * send-back not done yet, keeps the call's entry on the calls-due index at its deadline
 * (callDueMs), where the recovery sweep settles it by the carrier's word (superviseTransfers). A
 * connected call falls due at the carrier's own 4-hour limit, not its agent's maximum.
 *
 * The record: the call's `transfers[]` (transfer-item.ts), events `call.transfer_started`,
 * `call.transferred` and `call.transfer_failed`, and two `system` transcript lines per transfer
 * (the briefing, the outcome): on a relay call as turn items of their own (the call's
 * transcript is written from its turns), on a Realtime call appended to the call's transcript
 * (the runtime's resumed session keeps what the call holds). Charges: the person's leg at the
 * destination country's price, machine detection, the conference's participant minutes.
 */

export type WarmTransferInput = {
  organizationId: string;
  callId: string;
  destination: { phone_number: string; description?: string };
  pipeline: 'realtime' | 'relay';
  reason?: string;
  /** The conversation so far, when the pipeline holds it (the Realtime runtime); default: the call's turns (relay) or transcript. */
  transcript?: Transcript;
};
export type WarmTransferStart = { ok: true; callerTwiml: string; transferIndex: number } | { ok: false; outcome: 'failed'; error: string };

/** Twilio's own hold music, the default `waitUrl` (TRANSFER_HOLD_MUSIC_URL overrides it). */
export const DEFAULT_HOLD_MUSIC_URL = 'https://twimlets.com/holdmusic?Bucket=com.twilio.music.classical';
/** How long the person may take to press a key after the briefing (Gather `timeout`, seconds). */
export const GATHER_TIMEOUT_SECONDS = 8;
/** The briefing's budget on a real model: past it the fixed template is spoken. */
export const BRIEFING_TIMEOUT_MS = 4_000;

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const doc = (inner: string) => `<?xml version="1.0" encoding="UTF-8"?><Response>${inner}</Response>`;

export type TransferCallbackKind = 'transfer-answer' | 'transfer-gather' | 'transfer-status' | 'transfer-conference';

/** A warm transfer's Twilio callback URL: PUBLIC_BASE_URL + path, the call and the transfer in the query (signed by Twilio with the rest). */
export function transferCallbackUrl(kind: TransferCallbackKind, orgId: string, callId: string, index: number): string {
  const base = config().publicBaseUrl;
  if (!base) throw new Error('PUBLIC_BASE_URL must be set for warm transfers (Twilio calls the platform back)');
  return withTraceQuery(`${base.replace(/\/$/, '')}/api/v1/telephony/twilio/${kind}?${new URLSearchParams({ organization_id: orgId, call_id: callId, transfer: String(index) })}`);
}

/** The conference of one transfer (a name unique to the call and the transfer). */
export const conferenceName = (callId: string, index: number) => `transfer-${callId}-${index}`;

/** The caller's TwiML: wait in the conference with hold audio; the conference starts when the person joins and ends when the caller leaves. */
export function callerConferenceTwiml(orgId: string, callId: string, index: number): string {
  const hold = process.env.TRANSFER_HOLD_MUSIC_URL || DEFAULT_HOLD_MUSIC_URL;
  const status = transferCallbackUrl('transfer-conference', orgId, callId, index);
  return doc(
    `<Dial><Conference startConferenceOnEnter="false" endConferenceOnExit="true" beep="false" waitUrl="${xml(hold)}" waitMethod="GET" ` +
      `statusCallback="${xml(status)}" statusCallbackEvent="start end join leave">${conferenceName(callId, index)}</Conference></Dial>`,
  );
}

/** The person's TwiML once they accepted: join the caller's conference, starting it; the conference ends when they leave. */
export function personConferenceTwiml(callId: string, index: number): string {
  return doc(`<Say>Connecting you now.</Say><Dial><Conference startConferenceOnEnter="true" endConferenceOnExit="true" beep="false">${conferenceName(callId, index)}</Conference></Dial>`);
}

/** The person hears the briefing and presses 1 to accept; no key within the timeout asks the action with empty Digits (declined). */
export function briefingTwiml(orgId: string, callId: string, index: number, briefing: string): string {
  const action = transferCallbackUrl('transfer-gather', orgId, callId, index);
  return doc(
    `<Gather numDigits="1" timeout="${GATHER_TIMEOUT_SECONDS}" actionOnEmptyResult="true" action="${xml(action)}" method="POST">` +
      `<Say>${xml(briefing)}</Say><Say>Press 1 to take this call, or any other key to decline.</Say></Gather>` +
      `<Say>No key was pressed. Goodbye.</Say><Hangup/>`,
  );
}

export const hangupDoc = (say?: string) => doc(`${say ? `<Say>${xml(say)}</Say>` : ''}<Hangup/>`);

/** The organization's own number on the call: the one the person sees calling. */
const ownNumber = (call: CallItem) => (call.direction === 'inbound' ? call.to_phone_number : call.from_phone_number);

const secondsOn = (call: CallItem, atMs: number) => (call.answered_at ? Math.max(0, Math.round((atMs - Date.parse(call.answered_at)) / 100) / 10) : 0);

/**
 * Changes the call's `transfers` (read, change, write guarded by the item's version; another
 * write first means reading again). `change` answers undefined to write nothing. Returns the call
 * as written, or undefined when nothing was written.
 */
async function changeTransfers(
  orgId: string,
  callId: string,
  change: (call: CallItem, transfers: TransferItem[]) => { transfers: TransferItem[]; set?: Record<string, unknown>; also?: (next: CallItem) => Promise<TransactItem[]>; counters?: CounterDelta[] } | undefined,
): Promise<CallItem | undefined> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const call = await getItem<CallItem>(keys.call(orgId, callId));
    if (!call) return undefined;
    const c = change(call, (call.transfers ?? []).map((t) => ({ ...t })));
    if (!c) return undefined;
    const now = clockNow().toISOString();
    let next: CallItem = { ...call, ...c.set, transfers: c.transfers, updated_at: now, version: (call.version ?? 0) + 1 };
    // A live call's due entry follows its transfers (callDueMs): the sweep watches each pending one.
    const due = next.status !== 'ended' && next.answered_at && !c.set?.due_at ? dueEntry(orgId, callId, new Date(callDueMs(next)).toISOString()) : {};
    next = { ...next, ...due };
    try {
      await transact([
        updateExisting(keys.call(orgId, callId), { transfers: c.transfers, updated_at: now, ...c.set, ...due }, { condition: '#v = :read', values: { ':read': call.version ?? 0 } }),
        ...(c.also ? await c.also(next) : []),
      ], c.counters ?? []);
      // An entry moved earlier lowers the sweep's marker (a later one is found when the marker comes).
      if (next.due_at && (!call.due_at || next.due_at < call.due_at)) await noteDue('call-recovery', next.due_at);
      return next;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
    }
  }
  throw new Error(`Call ${callId} kept changing while its transfers were written`);
}

/** A transfer event (`data`: the call, with `transfer`: the one the event is about and its index). */
async function transferEvent(call: CallItem, type: 'call.transfer_started' | 'call.transferred' | 'call.transfer_failed', index: number) {
  const t = call.transfers![index]!;
  return newEvent(call.organization_id, type, { ...(await view(call)), transfer: { index, ...transferView(t), ...(t.description ? { description: t.description } : {}) } });
}

/** The fixed briefing (the local model, or a real model that failed): caller, reason, what was done, what is still needed. */
export function templateBriefing(call: Pick<CallItem, 'direction' | 'from_phone_number' | 'to_phone_number' | 'tool_calls'>, transcript: Transcript, reason: string | undefined, description: string | undefined): string {
  const caller = call.direction === 'inbound' ? call.from_phone_number : call.to_phone_number;
  const lastUser = [...transcript].reverse().find((t) => t.role === 'user' && t.text.trim())?.text.trim();
  const why = reason?.trim() || (lastUser ? `they said: "${lastUser.slice(0, 200)}"` : 'not stated');
  const turns = transcript.filter((t) => t.role === 'user').length;
  const tools = [...new Set((call.tool_calls ?? []).map((t) => t.name).filter((n) => n !== 'transfer_call'))];
  const done = `the agent spoke with them for ${turns} turn${turns === 1 ? '' : 's'}${tools.length ? ` and used ${tools.join(', ')}` : ''}`;
  const needed = description?.trim() ? `help from ${description.trim()}` : 'a person to take over the call';
  return `Incoming transfer from the AI agent. Caller: ${caller || 'unknown'}. Reason: ${why}. What was done: ${done}. Still needed: ${needed}.`;
}

/** The briefing: the conversation model's (a real model) or the fixed template (the local model, or a model that failed or was slow). */
export async function makeBriefing(call: CallItem, transcript: Transcript, reason: string | undefined, description: string | undefined): Promise<string> {
  const template = templateBriefing(call, transcript, reason, description);
  try {
    // A process without the model's grant (checkLlm) or a local model speaks the template.
    const model = llm();
    if (model.name === 'local') return template;
    const agent = await findConversationAgent(call.organization_id, call.agent_id, call.agent_version);
    const lines = transcript.filter((t) => t.role !== 'system').slice(-60).map((t) => `${t.role === 'agent' ? 'Agent' : 'Caller'}: ${t.text}`);
    const answer = await model.complete({
      model: agent ? effectiveModel(agent) : '',
      temperature: 0.2,
      system:
        'You brief a person who is about to take over a phone call from an AI agent. In at most four short spoken sentences say: who is calling, why, ' +
        'what the agent has already done, and what is still needed. Plain sentences, no lists, no greeting.',
      passages: [],
      messages: [{ role: 'user', content: `Caller's number: ${call.direction === 'inbound' ? call.from_phone_number : call.to_phone_number}\nTransfer reason: ${reason || 'not given'}\nTransferred to: ${description || 'a person'}\n\nConversation:\n${lines.join('\n')}` }],
      tools: [],
      timeoutMs: BRIEFING_TIMEOUT_MS,
    });
    return answer.text?.trim() ? answer.text.trim().slice(0, 1500) : template;
  } catch (err) {
    logger.warn('The briefing model failed; the fixed briefing is spoken', { call_id: call.id, error: err as Error });
    return template;
  }
}

/** A `system` line on the call's transcript: a relay call's as a turn item (the call's transcript is written from its turns), a Realtime call's appended to the call. */
async function addSystemLine(call: CallItem, pipeline: 'realtime' | 'relay', index: number, part: string, text: string, atMs: number): Promise<void> {
  const line = { role: 'system' as const, text, time_sec: secondsOn(call, atMs) };
  if (pipeline === 'relay') {
    const seq = turnSeq({ session_seq: sessionSeq(atMs, `transfer-${index}-${part}`) }, 0);
    await transact([turnWrite({ call_id: call.id }, { seq, turn: 0, messages: [], lines: [line], tool_calls: [] })]).catch((err) => {
      if (!(err instanceof ConditionFailed)) throw err; // written already (a redelivered callback)
    });
    return;
  }
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.call(call.organization_id, call.id),
      UpdateExpression: 'SET #t = list_append(if_not_exists(#t, :empty), :lines)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#t': 'transcript' },
      ExpressionAttributeValues: { ':empty': [], ':lines': [line] },
    }),
  );
}

/** A relay call's transcript written again from its turns (the transfer's lines joined it), also after the call's end. */
async function rewriteRelayTranscript(call: CallItem): Promise<void> {
  await recordConversation(call.organization_id, call.id, await collectConversation(call.id));
}

/** Why a call cannot be transferred warm now, or undefined when it can. */
function refusalOf(call: CallItem): string | undefined {
  if (call.status !== 'in_progress') return 'the call is not in progress';
  if ((call.channel ?? 'phone') !== 'phone') return 'a web call cannot be transferred to a phone';
  if (!call.provider_call_id) return 'the carrier has not named the call yet';
  if ((call.transfers ?? []).some((t) => t.mode === 'warm' && t.outcome === null)) return 'a transfer of this call is already under way';
  return undefined;
}


// ---------------------------------------------------------------------------------------------
// The watch: when each pending transfer must have settled, and when the call falls due.

/** From the person's answer to their key: the briefing spoken (at most 1,500 characters), the key prompt, the Gather's timeout. */
export const ANSWER_TO_DECISION_MS = 120_000;
/** From the key 1 to the person joining the conference ("Connecting you now", the <Dial>). */
export const ACCEPT_TO_JOIN_MS = 30_000;
/** Past a transfer's deadline, before the sweep asks the carrier (its callbacks may be late). */
export const TRANSFER_WATCH_MARGIN_MS = 60_000;
/** How soon the sweep tries again to send the caller back after a failed attempt. */
export const RETURN_RETRY_MS = 60_000;
/** Twilio ends any call 4 hours in (a <Dial>'s default timeLimit is 14,400 s): a transferred call falls due then. */
export const CARRIER_CALL_LIMIT_MS = 4 * 3600_000;
/** How far the sweep moves a call's due time when the carrier says it is still live. */
export const LIVE_RECHECK_MS = 15 * 60_000;

/** When a pending transfer must have settled: its ring time, the answer to the key, and a margin; once accepted, the join. */
export function transferDeadlineMs(call: Pick<CallItem, 'ring_duration_ms'>, t: TransferItem): number {
  if (t.accepted_at) return Date.parse(t.accepted_at) + ACCEPT_TO_JOIN_MS + TRANSFER_WATCH_MARGIN_MS;
  return Date.parse(t.started_at) + (call.ring_duration_ms || 30_000) + ANSWER_TO_DECISION_MS + TRANSFER_WATCH_MARGIN_MS;
}

/** When the sweep tries again to send the caller back (a settled transfer whose redirect did not happen). */
const returnDueMs = (t: TransferItem) => Date.parse(t.return_tried_at ?? t.decided_at ?? t.started_at) + RETURN_RETRY_MS;

/** The earliest moment a transfer of the call needs the sweep, or undefined when none does. */
export function transferWatchMs(call: CallItem): number | undefined {
  let due: number | undefined;
  for (const t of call.transfers ?? []) {
    if (t.mode !== 'warm') continue;
    const at = t.outcome === null ? transferDeadlineMs(call, t) : t.return_pending ? returnDueMs(t) : undefined;
    if (at !== undefined && (due === undefined || at < due)) due = at;
  }
  return due;
}

/** The call's own limit: its maximum duration past its answer, or, once a person took it, the carrier's limit on the conference. */
export function callLimitMs(call: CallItem): number {
  const answered = Date.parse(call.answered_at ?? call.created_at);
  const own = answered + call.max_call_duration_ms + RECOVERY_MARGIN_MS;
  const joined = (call.transfers ?? []).filter((t) => t.outcome === 'connected').map((t) => Date.parse(t.joined_at ?? t.decided_at ?? t.started_at));
  return joined.length ? Math.max(own, Math.max(...joined) + CARRIER_CALL_LIMIT_MS + RECOVERY_MARGIN_MS) : own;
}

/** When the recovery sweep looks at a live call: its first pending transfer's deadline, else its limit. */
export function callDueMs(call: CallItem): number {
  const watch = transferWatchMs(call);
  const limit = callLimitMs(call);
  return watch !== undefined && watch < limit ? watch : limit;
}

// ---------------------------------------------------------------------------------------------
// Starting a transfer, and its briefing.

/**
 * Starts a warm transfer of a live phone call: the transfer is recorded (`transfers[]` at the
 * index the dial's callback URLs name, `call.transfer_started`, the call's due entry moved to its
 * deadline so the recovery sweep watches it), the person is dialed (asynchronous machine
 * detection: they hear the briefing at once), their call's id is written, and the caller's TwiML
 * is answered: the conference. The briefing is not made here (the caller would wait for the
 * model): the person's `initiated`/`ringing` status callbacks make it while their phone rings
 * (ensureBriefing), each within its own request, so nothing runs after a response (a Lambda
 * freezes then). `call`: the call as the pipeline just read it (else it is read). A dial the
 * carrier refuses settles the transfer `failed` (`call.transfer_failed`) and answers `ok: false`:
 * the caller has not moved, and the pipeline goes on with the conversation.
 */
export async function startWarmTransfer(input: WarmTransferInput & { call?: CallItem }): Promise<WarmTransferStart> {
  const { organizationId: orgId, callId } = input;
  const startedMs = clockMs();
  const read = input.call ?? (await getItem<CallItem>(keys.call(orgId, callId)));
  if (!read) return { ok: false, outcome: 'failed', error: 'the call does not exist' };
  const refusal = refusalOf(read);
  if (refusal) return { ok: false, outcome: 'failed', error: refusal };
  const index = (read.transfers ?? []).length;
  const events: PlatformEvent[] = [];
  let lost = false;
  const started = await changeTransfers(orgId, callId, (call, transfers) => {
    lost = transfers.length !== index || !!refusalOf(call); // another transfer was recorded since the read: at most one runs, and this one dials nobody
    if (lost) return undefined;
    transfers.push({
      phone_number: input.destination.phone_number,
      mode: 'warm',
      started_at: new Date(startedMs).toISOString(),
      outcome: null,
      briefing: '',
      pipeline: input.pipeline,
      ...(input.destination.description ? { description: input.destination.description } : {}),
      ...(input.reason ? { reason: input.reason } : {}),
    });
    return {
      transfers,
      also: async (next) => {
        const built = await transferEvent(next, 'call.transfer_started', index);
        events.length = 0;
        events.push(built.event);
        return [built.write];
      },
    };
  });
  if (!started) return { ok: false, outcome: 'failed', error: lost ? 'another transfer of this call started meanwhile' : 'the call does not exist' };
  await dispatchEvents(events);
  const carrier = telephony();
  let dialed: { providerCallId: string; events?: CallStatusEvent[] } | { error: Error };
  try {
    const twilio = carrier.name === 'twilio';
    dialed = await carrier.placeCall({
      from: ownNumber(read),
      to: input.destination.phone_number,
      timeoutSeconds: Math.max(5, Math.min(600, Math.round((read.ring_duration_ms || 30_000) / 1000))),
      detectMachine: true,
      ...(twilio
        ? {
            answerUrl: transferCallbackUrl('transfer-answer', orgId, callId, index),
            statusCallbackUrl: transferCallbackUrl('transfer-status', orgId, callId, index),
            // The result comes to the status callback (its own request: AnsweredBy without CallStatus) while the briefing plays.
            asyncMachineDetection: { callbackUrl: transferCallbackUrl('transfer-status', orgId, callId, index) },
          }
        : {}),
    });
  } catch (err) {
    logger.warn('The person of a warm transfer could not be dialed', { call_id: callId, error: err as Error });
    dialed = { error: err as Error };
  }
  if ('error' in dialed) {
    await writeBriefing(orgId, callId, index, templateBriefing(read, input.transcript ?? read.transcript ?? [], input.reason, input.destination.description));
    await settleTransfer(orgId, callId, index, 'failed', { redirect: false });
    return { ok: false, outcome: 'failed', error: `the carrier did not place the call: ${dialed.error.message}` };
  }
  const legId = dialed.providerCallId;
  await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t || t.leg_call_id) return undefined;
    t.leg_call_id = legId;
    return { transfers };
  });
  if (dialed.events?.length) {
    // A carrier that decides a call's course up front (the simulated one) has already said how the person's call goes: the briefing now, then the outcome.
    await ensureBriefing(orgId, callId, index, { call: read, transcript: input.transcript });
    const { outcome, durationSec } = decidedOutcome(dialed.events, input.destination.phone_number);
    await settleTransfer(orgId, callId, index, outcome, { redirect: false });
    if (durationSec) await chargeTransferLeg(orgId, callId, index, durationSec);
    if (outcome !== 'connected') return { ok: false, outcome: 'failed', error: `the person did not take the call (${outcome})` };
  }
  return { ok: true, callerTwiml: callerConferenceTwiml(orgId, callId, index), transferIndex: index };
}

/**
 * How the person's call goes on a carrier that decides it up front (the simulated carrier's test
 * numbers, operations.md): answered by a person, they accept, unless the number ends in 5 (they
 * decline); a machine (6); no answer (7) or busy (8): `no_answer`; a failure (9).
 */
export function decidedOutcome(events: CallStatusEvent[], to: string): { outcome: TransferOutcome; durationSec?: number } {
  const last = events.at(-1)!;
  if (last.status === 'completed' && isMachine(last.answeredBy)) return { outcome: 'machine' };
  if (last.status === 'completed') return { outcome: to.endsWith('5') ? 'declined' : 'connected', durationSec: last.durationSec };
  if (last.status === 'no-answer' || last.status === 'busy') return { outcome: 'no_answer' };
  return { outcome: 'failed' };
}

/** How long a briefing being made by another request is left to finish before another one starts. */
const BRIEFING_CLAIM_MS = BRIEFING_TIMEOUT_MS + 2_000;

/**
 * Writes the briefing once (the first one written is what the person hears; a later one changes
 * nothing), with its `system` line on a relay call's turns (a Realtime call gets it with the
 * outcome). Answers the briefing the transfer holds.
 */
async function writeBriefing(orgId: string, callId: string, index: number, text: string): Promise<string> {
  let kept = text;
  const written = await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t) return undefined;
    if (t.briefing) {
      kept = t.briefing;
      return undefined;
    }
    t.briefing = text;
    return { transfers };
  });
  if (written) {
    const t = written.transfers![index]!;
    if ((t.pipeline ?? 'relay') === 'relay') await addSystemLine(written, 'relay', index, 'briefing', briefingLine(t), Date.parse(t.started_at));
  }
  return kept;
}

/**
 * Makes the transfer's briefing unless it is made or being made (a claim on the transfer, for
 * BRIEFING_CLAIM_MS): the conversation model's, or the template. Runs in the person's status
 * callbacks while their phone rings (the model has its 4 s well before anyone answers), and at
 * once on a carrier that decides the call up front. `given`: the call and conversation the
 * pipeline holds (the simulated carrier's), else read.
 */
export async function ensureBriefing(orgId: string, callId: string, index: number, given: { call?: CallItem; transcript?: Transcript } = {}): Promise<void> {
  const nowMs = clockMs();
  const claimed = await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t || t.briefing || t.outcome !== null) return undefined;
    if (t.briefing_started_at && nowMs - Date.parse(t.briefing_started_at) < BRIEFING_CLAIM_MS) return undefined;
    t.briefing_started_at = new Date(nowMs).toISOString();
    return { transfers };
  });
  if (!claimed) return;
  const t = claimed.transfers![index]!;
  const call = given.call ?? claimed;
  let lines: Transcript;
  try {
    lines = given.transcript ?? ((t.pipeline ?? 'relay') === 'relay' ? (await collectConversation(callId)).transcript : (claimed.transcript ?? []));
  } catch (err) {
    logger.warn('The conversation could not be read for the briefing; the fixed one is spoken', { call_id: callId, error: err as Error });
    lines = claimed.transcript ?? [];
  }
  await writeBriefing(orgId, callId, index, await makeBriefing(call, lines, t.reason, t.description));
}

/** How long the person's answer waits for a briefing still being made before the template is spoken. */
export const BRIEFING_WAIT_MS = 1_500;

/** The briefing the person hears on answering: the one made, or (not ready within BRIEFING_WAIT_MS) the template, written so the record says what was spoken. */
export async function briefingForAnswer(orgId: string, callId: string, index: number): Promise<string> {
  const until = Date.now() + BRIEFING_WAIT_MS;
  for (;;) {
    const read = await readTransfer(orgId, callId, index);
    if (!read) return '';
    if (read.transfer.briefing) return read.transfer.briefing;
    if (Date.now() >= until) {
      const { call, transfer } = read;
      const lines = (transfer.pipeline ?? 'relay') === 'relay' ? (await collectConversation(callId).catch(() => undefined))?.transcript : call.transcript;
      return writeBriefing(orgId, callId, index, templateBriefing(call, lines ?? call.transcript ?? [], transfer.reason, transfer.description));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The transfer as the call holds it now. */
export async function readTransfer(orgId: string, callId: string, index: number): Promise<{ call: CallItem; transfer: TransferItem } | undefined> {
  const call = await getItem<CallItem>(keys.call(orgId, callId));
  const transfer = call?.transfers?.[index];
  return call && transfer ? { call, transfer } : undefined;
}

/** Marks the transfer accepted (the person pressed 1): it connects when they join the conference. False when it is settled already. */
export async function acceptTransfer(orgId: string, callId: string, index: number): Promise<boolean> {
  const at = clockNow().toISOString();
  let accepted = false;
  await changeTransfers(orgId, callId, (call, transfers) => {
    const t = transfers[index];
    if (!t || t.outcome !== null || call.status === 'ended') return undefined;
    accepted = true;
    if (t.accepted_at) return undefined;
    t.accepted_at = at;
    return { transfers };
  });
  return accepted;
}

/** A change of one transfer's record (a conference participant, the machine-detection result); nothing when `change` answers false. */
export async function noteOnTransfer(orgId: string, callId: string, index: number, change: (t: TransferItem) => boolean): Promise<void> {
  await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t || !change(t)) return undefined;
    return { transfers };
  });
}

// ---------------------------------------------------------------------------------------------
// Settling, and the caller back to the agent.

/**
 * Settles a transfer once (the first outcome wins; later ones change nothing and answer false):
 * the outcome on the call with its event (`call.transferred`, or `call.transfer_failed` with the
 * outcome), the outcome's `system` line (with the briefing's on a Realtime call), and, unless the
 * transfer connected or `redirect` is false, the caller's live call sent back to the agent. The
 * send-back is noted as pending in the same write: one that fails (or never runs) is retried by
 * the recovery sweep (superviseTransfers) until it is done or the call is over.
 */
export async function settleTransfer(orgId: string, callId: string, index: number, outcome: TransferOutcome, opts: { redirect?: boolean } = {}): Promise<boolean> {
  const atMs = clockMs();
  const events: PlatformEvent[] = [];
  const settled = await changeTransfers(orgId, callId, (call, transfers) => {
    const t = transfers[index];
    if (!t || t.outcome !== null) return undefined;
    t.outcome = outcome;
    t.decided_at = new Date(atMs).toISOString();
    if (outcome !== 'connected' && opts.redirect !== false && call.status !== 'ended') t.return_pending = true;
    return {
      transfers,
      // Accepted: whoever ends the call (the carrier, the conference's end) ends it `transferred`.
      ...(outcome === 'connected' ? { set: { voice_end_reason: 'transferred' } } : {}),
      also: async (next) => {
        const built = await transferEvent(next, outcome === 'connected' ? 'call.transferred' : 'call.transfer_failed', index);
        events.length = 0;
        events.push(built.event);
        return [built.write];
      },
    };
  });
  if (!settled) return false;
  await dispatchEvents(events);
  const t = settled.transfers![index]!;
  const pipeline = t.pipeline ?? 'relay';
  if (pipeline === 'realtime') await addSystemLine(settled, 'realtime', index, 'briefing', briefingLine(t), Date.parse(t.started_at));
  await addSystemLine(settled, pipeline, index, 'outcome', outcomeLine(t, outcome), atMs);
  if (pipeline === 'relay') await rewriteRelayTranscript(settled);
  if (t.return_pending) await returnCaller(orgId, callId, index);
  return true;
}

/** Whether a carrier failure says the call is over (Twilio 21220: not in progress, cannot be redirected; 20404: unknown). */
const callIsOver = liveCallGone;

/**
 * The caller's live call back to the agent: a new ConversationRelay session resuming the
 * conversation, or a new media stream with `resume`. Done, or the call over, clears the pending
 * send-back; a failure leaves it for the sweep (RETURN_RETRY_MS later). Answers whether it is done.
 */
async function returnCaller(orgId: string, callId: string, index: number): Promise<boolean> {
  const call = await getItem<CallItem>(keys.call(orgId, callId));
  const t = call?.transfers?.[index];
  if (!call || !t?.return_pending) return true;
  const finish = (field: 'caller_returned_at' | 'return_abandoned_at') =>
    changeTransfers(orgId, callId, (_c, transfers) => {
      const x = transfers[index];
      if (!x?.return_pending) return undefined;
      delete x.return_pending;
      x[field] = clockNow().toISOString();
      return { transfers };
    });
  if (call.status === 'ended' || !call.provider_call_id) {
    await finish('return_abandoned_at');
    return true;
  }
  const carrier = telephony();
  if (!carrier.updateCall) {
    logger.warn('The carrier cannot redirect a live call: the caller stays where they are', { call_id: call.id });
    await finish('return_abandoned_at');
    return true;
  }
  try {
    let twiml: string | undefined;
    if ((t.pipeline ?? 'relay') === 'relay') {
      const agent = await relayCallAgent(call);
      const url = process.env.RELAY_URL;
      if (agent && isRelayAgent(agent) && url) twiml = (await relayTwiml(url, call, agent, 0, { resume: index })).body;
    } else {
      const runtime = config().voiceRuntimeUrl;
      if (runtime) twiml = (await streamTwiml(runtime, { organization_id: call.organization_id, call_id: call.id, agent_id: call.agent_id, direction: call.direction, resume: String(index) })).body;
    }
    await carrier.updateCall(call.provider_call_id, twiml ? { twiml } : { hangUp: true });
  } catch (err) {
    if (callIsOver(err)) {
      logger.info('The caller of a warm transfer had hung up before being sent back', { call_id: call.id });
      await finish('return_abandoned_at');
      return true;
    }
    logger.warn('The caller could not be sent back to the agent after a warm transfer; the recovery sweep tries again', { call_id: call.id, error: err as Error });
    await changeTransfers(orgId, callId, (_c, transfers) => {
      const x = transfers[index];
      if (!x?.return_pending) return undefined;
      x.return_tried_at = clockNow().toISOString();
      return { transfers };
    });
    return false;
  }
  await finish('caller_returned_at');
  return true;
}

/**
 * The caller joined the conference of a transfer already settled otherwise (the person's call
 * failed, or was not answered, before the caller's own move into the conference landed: a
 * Realtime runtime's redirect, or Twilio playing the `<Connect action>`'s answer, after the
 * send-back): nobody will come, so the caller is sent back to the agent again, as the settlement did.
 */
export async function returnLateCaller(orgId: string, callId: string, index: number): Promise<void> {
  const marked = await changeTransfers(orgId, callId, (call, transfers) => {
    const t = transfers[index];
    if (!t || t.outcome === null || t.outcome === 'connected' || t.accepted_at || call.status === 'ended' || t.return_pending) return undefined;
    t.return_pending = true;
    return { transfers };
  });
  if (marked) {
    logger.info('The caller reached the conference of a transfer already over: sent back to the agent', { call_id: callId, transfer: index });
    await returnCaller(orgId, callId, index);
  }
}

/** Hangs up the person's call (best effort: it may have ended). */
export async function hangUpLeg(call: CallItem, t: TransferItem): Promise<void> {
  const carrier = telephony();
  if (!t.leg_call_id || !carrier.updateCall) return;
  await carrier.updateCall(t.leg_call_id, { hangUp: true }).catch((err: unknown) => logger.info('The person\'s call of a warm transfer could not be hung up (it may have ended)', { call_id: call.id, error: err as Error }));
}

// ---------------------------------------------------------------------------------------------
// The recovery sweep's part: stalled transfers, pending send-backs, transferred calls past their limit.

const LIVE = new Set(['queued', 'ringing', 'in-progress']);

/**
 * A pending transfer past its deadline (its callbacks were lost, or the person stalled): the
 * carrier is asked how the person's call stands, and the transfer settles by it, the caller
 * back with the agent: rung out or still ringing (cancelled) `no_answer`; over after the
 * person pressed 1 without joining `failed`; over otherwise `declined` (a machine: `machine`);
 * still on the line after pressing 1 `connected` (the join's callback was lost: they talk);
 * still on the line before a key (hung up) `declined`; the carrier unreachable or a failure `failed`.
 */
async function expireTransfer(call: CallItem, index: number): Promise<void> {
  const t = call.transfers![index]!;
  const carrier = telephony();
  const leg = t.leg_call_id && carrier.fetchCall ? await carrier.fetchCall(t.leg_call_id).catch((err: unknown) => void logger.warn('The carrier could not say how a stalled transfer\'s call stands', { call_id: call.id, error: err as Error })) : undefined;
  const machine = isMachine(leg?.answeredBy) || isMachine(t.answered_by);
  let outcome: TransferOutcome = 'failed';
  if (leg) {
    if (leg.status === 'queued' || leg.status === 'ringing') outcome = 'no_answer';
    else if (leg.status === 'in-progress') outcome = machine ? 'machine' : t.accepted_at ? 'connected' : 'declined';
    else if (leg.status === 'completed') outcome = machine ? 'machine' : t.accepted_at ? 'failed' : 'declined';
    else if (leg.status === 'busy' || leg.status === 'no-answer') outcome = 'no_answer';
  }
  logger.warn('A warm transfer stalled past its deadline: settled by the carrier\'s word', { call_id: call.id, transfer: index, leg_status: leg?.status ?? null, outcome });
  if (outcome !== 'connected' && (!leg || LIVE.has(leg.status))) await hangUpLeg(call, t);
  if (outcome === 'connected') {
    await settleTransfer(call.organization_id, call.id, index, 'connected');
    await noteOnTransfer(call.organization_id, call.id, index, (x) => (x.joined_at ? false : ((x.joined_at = clockNow().toISOString()), true)));
    return;
  }
  await settleTransfer(call.organization_id, call.id, index, outcome);
  if (leg?.status === 'completed' && leg.durationSec !== undefined) await chargeTransferLeg(call.organization_id, call.id, index, leg.durationSec, leg.answeredBy);
}

/**
 * The recovery sweep's look at a due live call with warm transfers (recovery.ts): each pending
 * transfer past its deadline is settled by the carrier's word (expireTransfer), each send-back
 * still pending is tried again, and a call past its own limit (callLimitMs) is asked of the
 * carrier before anything ends it: still live, its due time moves LIVE_RECHECK_MS on; over, it
 * ends with the carrier's status and duration (a call a person took ends `transferred`).
 * Undefined when the call has no warm transfer, or is past its limit and the carrier cannot be
 * asked: the sweep ends it as any other. Else the call's next due time, or `ended`.
 */
export async function superviseTransfers(item: CallItem, now: string): Promise<{ dueAt?: string; ended?: boolean } | undefined> {
  if (!(item.transfers ?? []).some((t) => t.mode === 'warm')) return undefined;
  const nowMs = Date.parse(now);
  for (const [index, t] of (item.transfers ?? []).entries()) {
    if (t.mode !== 'warm') continue;
    if (t.outcome === null && transferDeadlineMs(item, t) <= nowMs) await expireTransfer(item, index);
    else if (t.outcome !== null && t.return_pending && returnDueMs(t) <= nowMs) await returnCaller(item.organization_id, item.id, index);
  }
  const call = await getItem<CallItem>(keys.call(item.organization_id, item.id));
  if (!call || call.status === 'ended') return { ended: false };
  if (callLimitMs(call) > nowMs) {
    const dueAt = new Date(callDueMs(call)).toISOString();
    if (dueAt !== call.due_at) await moveDue(call, dueAt);
    return { dueAt };
  }
  const carrier = telephony();
  if (!carrier.fetchCall || !call.provider_call_id) return undefined;
  const live = await carrier.fetchCall(call.provider_call_id);
  if (!live) return undefined;
  if (LIVE.has(live.status)) {
    const dueAt = new Date(Math.max(nowMs + LIVE_RECHECK_MS, transferWatchMs(call) ?? 0)).toISOString();
    logger.info('A call past its limit is still live at the carrier: looked at again later', { call_id: call.id, due_at: dueAt });
    await moveDue(call, dueAt);
    return { dueAt };
  }
  // The carrier ended it and its final status never reached us: its own status and duration.
  const move = moveFor({ status: live.status, answeredBy: live.answeredBy }) ?? endMove('failed');
  const result = await moveCall(call, move, { at: now, ...(live.durationSec !== undefined ? { durationSec: live.durationSec } : {}) });
  return { ended: result.moved };
}

/** The call's due entry at `dueAt` (a live call only). */
async function moveDue(call: CallItem, dueAt: string): Promise<void> {
  await transact([
    updateExisting(keys.call(call.organization_id, call.id), dueEntry(call.organization_id, call.id, dueAt), { condition: '#st <> :ended', names: { '#st': 'status' }, values: { ':ended': 'ended' } }),
  ]).catch(ignoreConditionFailed);
  if (!call.due_at || dueAt < call.due_at) await noteDue('call-recovery', dueAt);
}

// ---------------------------------------------------------------------------------------------
// Charges: the person's leg, machine detection, the conference's participant minutes.

/**
 * Twilio's list prices (USD) that its Pricing API does not serve: a conference's participant-minute
 * (on top of each leg's own minutes) and one answering-machine detection.
 */
export const CONFERENCE_PRICE_PER_PARTICIPANT_MINUTE = 0.0018;
export const AMD_PRICE = 0.0075;
const conferencePrice = () => CONFERENCE_PRICE_PER_PARTICIPANT_MINUTE;
const amdPrice = () => AMD_PRICE;

/**
 * The person's call ended after `durationSec` connected: its minutes are charged at the carrier's
 * outbound price to the destination's country (its Pricing API), else the organization's number's
 * outbound price, once (the charge's id is derived from the call and the transfer; the transfer
 * records it); with machine detection's own charge when the call was answered.
 */
export async function chargeTransferLeg(orgId: string, callId: string, index: number, durationSec: number, answeredBy?: string): Promise<void> {
  const read = await readTransfer(orgId, callId, index);
  if (!read) return;
  if (answeredBy || durationSec > 0) await chargeAmd(orgId, callId, index, answeredBy);
  if (read.transfer.leg_charged_at) return;
  const { call, transfer } = read;
  const carrier = telephony();
  const byDestination = carrier.outboundPrice ? await carrier.outboundPrice(transfer.phone_number).catch((err: unknown) => void logger.warn('The carrier\'s price to a transfer\'s destination could not be read; the number\'s outbound price is charged', { call_id: callId, error: err as Error })) : undefined;
  const number = byDestination === undefined && call.phone_number_id ? await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, call.phone_number_id)) : undefined;
  const price = byDestination ?? number?.per_minute_price_outbound ?? (call.direction === 'outbound' ? call.price_per_minute : 0);
  const minutes = billableMinutes(Math.max(0, Math.round(durationSec)));
  const at = clockNow().toISOString();
  await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t || t.leg_charged_at) return undefined;
    t.leg_duration_sec = Math.max(0, Math.round(durationSec));
    t.leg_charged_at = at;
    if (!(minutes > 0 && price > 0)) return { transfers };
    const charge = chargeWrite(orgId, {
      id: derivedChargeId(`transfer:${callId}:${index}`, transfer.started_at),
      amount: minutes * price,
      reason: 'call_minutes',
      description: `Warm transfer to ${transfer.phone_number} (call ${callId}): ${minutes} min at ${price} USD/min`,
      resourceType: 'call',
      resourceId: callId,
      phoneNumber: ownNumber(call),
      at,
    });
    return { transfers, also: async () => [charge.item], counters: [charge.counter] };
  });
}

/** Machine detection ran on the person's answered call (Twilio bills each detection): charged once, its result kept. */
export async function chargeAmd(orgId: string, callId: string, index: number, answeredBy: string | undefined): Promise<void> {
  const read = await readTransfer(orgId, callId, index);
  if (!read || read.transfer.amd_charged_at || telephony().name !== 'twilio') return;
  const { call, transfer } = read;
  const price = amdPrice();
  const at = clockNow().toISOString();
  await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t || t.amd_charged_at) return undefined;
    t.amd_charged_at = at;
    if (answeredBy && !t.answered_by) t.answered_by = answeredBy;
    if (!(price > 0)) return { transfers };
    const charge = chargeWrite(orgId, {
      id: derivedChargeId(`transfer-amd:${callId}:${index}`, transfer.started_at),
      amount: price,
      reason: 'call_minutes',
      description: `Answering machine detection on the warm transfer to ${transfer.phone_number} (call ${callId}): 1 detection at ${price} USD`,
      resourceType: 'call',
      resourceId: callId,
      phoneNumber: ownNumber(call),
      at,
    });
    return { transfers, also: async () => [charge.item], counters: [charge.counter] };
  });
}

/**
 * The conference ended: each participant's minutes in it (from joining to leaving, every started
 * minute; the caller's time on hold counts, as Twilio bills it) at the conference price, as one
 * charge, once.
 */
export async function chargeConference(orgId: string, callId: string, index: number, endedAt: string): Promise<void> {
  const read = await readTransfer(orgId, callId, index);
  if (!read || read.transfer.conference_charged_at) return;
  const { call, transfer } = read;
  const price = conferencePrice();
  const at = clockNow().toISOString();
  await changeTransfers(orgId, callId, (_c, transfers) => {
    const t = transfers[index];
    if (!t || t.conference_charged_at) return undefined;
    t.conference_charged_at = at;
    const seats = Object.values(t.participants ?? {});
    const minutes = seats.reduce((sum, p) => sum + billableMinutes(Math.max(0, Math.round((Date.parse(p.left_at ?? endedAt) - Date.parse(p.joined_at)) / 1000))), 0);
    if (!(minutes > 0 && price > 0)) return { transfers };
    const charge = chargeWrite(orgId, {
      id: derivedChargeId(`transfer-conference:${callId}:${index}`, transfer.started_at),
      amount: minutes * price,
      reason: 'call_minutes',
      description: `Warm transfer conference (call ${callId}): ${minutes} participant-min (${seats.length} participants) at ${price} USD/min`,
      resourceType: 'call',
      resourceId: callId,
      phoneNumber: ownNumber(call),
      at,
    });
    return { transfers, also: async () => [charge.item], counters: [charge.counter] };
  });
}
