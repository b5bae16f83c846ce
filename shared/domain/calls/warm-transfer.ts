import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { llm } from '../../adapters/llm';
import { telephony, type CallStatusEvent } from '../../adapters/telephony';
import { clockMs, clockNow } from '../../clock';
import { config } from '../../config';
import { db, tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, transact, updateExisting, type CounterDelta, type TransactItem } from '../../db/store';
import { logger } from '../../logger';
import { effectiveModel } from '../agents/models';
import { chargeWrite, derivedChargeId } from '../billing/service';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { findConversationAgent } from '../agents/service';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import { relayTwiml, relayCallAgent, isRelayAgent } from '../relay/twiml';
import { collectConversation, sessionSeq, turnSeq, turnWrite } from '../relay/turns';
import type { Transcript, TransferOutcome } from './schemas';
import { view, type CallItem } from './service';
import { billableMinutes, isMachine } from './state';
import { briefingLine, outcomeLine, transferView, type TransferItem } from './transfer-item';
import { recordConversation } from './voice-session';
import { streamTwiml } from './voice-stream';

/**
 * Warm transfer (docs/api.md, "Hand-offs" → "Warm transfer"), the platform's side for both voice
 * pipelines. The pipeline (the relay's `<Connect action>`, the Realtime runtime) calls
 * startWarmTransfer once the agent said it is connecting the caller, and plays the TwiML it answers
 * on the caller's call: `<Dial><Conference>` with hold audio (`waitUrl`), the caller not starting
 * the conference (`startConferenceOnEnter=false`) and ending it on leaving. Meanwhile the platform
 * dials the person (machine detection, ringing the agent's `ring_duration_ms`); when they answer,
 * Twilio asks the transfer-answer callback, which speaks the briefing in a one-key `<Gather>`
 * (transfer-callbacks.ts). `1` joins them to the conference (`startConferenceOnEnter=true`: the
 * caller's hold ends, the two are bridged) and the call will end `transferred`; anything else, a
 * timeout, no answer, a machine or a failed dial settles the transfer otherwise and the caller's
 * live call is redirected back to the agent: a new ConversationRelay session resuming the
 * conversation, or a new media stream with the `resume` parameter (the transfer's index).
 *
 * The record: the call's `transfers[]` (transfer-item.ts), events `call.transfer_started`,
 * `call.transferred` and `call.transfer_failed`, and two `system` transcript lines per transfer
 * (the briefing, the outcome): on a relay call as turn items of their own (the call's
 * transcript is written from its turns), on a Realtime call appended to the call's transcript
 * (the runtime's resumed session keeps what the call holds).
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
  return `${base.replace(/\/$/, '')}/api/v1/telephony/twilio/${kind}?${new URLSearchParams({ organization_id: orgId, call_id: callId, transfer: String(index) })}`;
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
    const next: CallItem = { ...call, ...c.set, transfers: c.transfers, updated_at: now, version: (call.version ?? 0) + 1 };
    try {
      await transact([
        updateExisting(keys.call(orgId, callId), { transfers: c.transfers, updated_at: now, ...c.set }, { condition: '#v = :read', values: { ':read': call.version ?? 0 } }),
        ...(c.also ? await c.also(next) : []),
      ], c.counters ?? []);
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

/** The conversation so far as lines: what the pipeline gave, else the relay's turns or the call's transcript. */
async function conversationSoFar(call: CallItem, input: WarmTransferInput): Promise<Transcript> {
  if (input.transcript) return input.transcript;
  if (input.pipeline === 'relay') return (await collectConversation(call.id)).transcript;
  return call.transcript ?? [];
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

/**
 * Starts a warm transfer of a live phone call. The person is dialed first (the time from the
 * tool call to their phone ringing is what the caller waits through), then the transfer is
 * recorded (`transfers[]` at the index the dial's callback URLs name, `call.transfer_started`)
 * while the briefing is made (it is ready well before the person picks up: they hear it on
 * answering), and the caller's TwiML is answered: the conference. `call`: the call as the
 * pipeline just read it (else it is read). A dial the carrier refuses settles the transfer
 * `failed` (`call.transfer_failed`) and answers `ok: false`: the caller has not moved, and the
 * pipeline goes on with the conversation.
 */
export async function startWarmTransfer(input: WarmTransferInput & { call?: CallItem }): Promise<WarmTransferStart> {
  const { organizationId: orgId, callId } = input;
  const startedMs = clockMs();
  const read = input.call ?? (await getItem<CallItem>(keys.call(orgId, callId)));
  if (!read) return { ok: false, outcome: 'failed', error: 'the call does not exist' };
  const refusal = refusalOf(read);
  if (refusal) return { ok: false, outcome: 'failed', error: refusal };
  const index = (read.transfers ?? []).length;
  const carrier = telephony();
  let dialed: { providerCallId: string; events?: CallStatusEvent[] } | { error: Error };
  try {
    dialed = await carrier.placeCall({
      from: ownNumber(read),
      to: input.destination.phone_number,
      timeoutSeconds: Math.max(5, Math.min(600, Math.round((read.ring_duration_ms || 30_000) / 1000))),
      detectMachine: true,
      ...(carrier.name === 'twilio' ? { answerUrl: transferCallbackUrl('transfer-answer', orgId, callId, index), statusCallbackUrl: transferCallbackUrl('transfer-status', orgId, callId, index) } : {}),
    });
  } catch (err) {
    logger.warn('The person of a warm transfer could not be dialed', { call_id: callId, error: err as Error });
    dialed = { error: err as Error };
  }
  const briefing = conversationSoFar(read, input)
    .then((lines) => makeBriefing(read, lines, input.reason, input.destination.description))
    .catch((err: unknown) => {
      logger.warn('The briefing could not be made from the conversation; the fixed one is spoken', { call_id: callId, error: err as Error });
      return templateBriefing(read, input.transcript ?? read.transcript ?? [], input.reason, input.destination.description);
    });
  const events: PlatformEvent[] = [];
  let lost = false;
  const started = await changeTransfers(orgId, callId, (_call, transfers) => {
    lost = transfers.length !== index; // another transfer was recorded since the read (at most one runs: the dial is undone)
    if (lost) return undefined;
    transfers.push({
      phone_number: input.destination.phone_number,
      mode: 'warm',
      started_at: new Date(startedMs).toISOString(),
      outcome: null,
      briefing: '',
      pipeline: input.pipeline,
      ...('providerCallId' in dialed ? { leg_call_id: dialed.providerCallId } : {}),
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
  if (!started) {
    if ('providerCallId' in dialed && carrier.updateCall) await carrier.updateCall(dialed.providerCallId, { hangUp: true }).catch(() => undefined);
    return { ok: false, outcome: 'failed', error: lost ? 'another transfer of this call started meanwhile' : 'the call does not exist' };
  }
  await dispatchEvents(events);
  if ('error' in dialed) {
    await saveBriefing(started, index, await briefing, undefined, startedMs);
    await settleTransfer(orgId, callId, index, 'failed', { redirect: false });
    return { ok: false, outcome: 'failed', error: `the carrier did not place the call: ${dialed.error.message}` };
  }
  await saveBriefing(started, index, await briefing, dialed.providerCallId, startedMs);
  if (dialed.events?.length) {
    // A carrier that decides a call's course up front (the simulated one) has already said how the person's call goes.
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

/** The briefing and the person's call on the transfer; the briefing's `system` line on a relay call's turns (a Realtime call gets it with the outcome). */
async function saveBriefing(call: CallItem, index: number, briefing: string, legId: string | undefined, atMs: number): Promise<void> {
  const text = briefing || templateBriefing(call, call.transcript ?? [], call.transfers![index]!.reason, call.transfers![index]!.description);
  await changeTransfers(call.organization_id, call.id, (_c, transfers) => {
    const t = transfers[index];
    if (!t) return undefined;
    t.briefing = text;
    if (legId) t.leg_call_id = legId;
    return { transfers };
  });
  if (call.transfers![index]!.pipeline === 'relay') await addSystemLine(call, 'relay', index, 'briefing', briefingLine({ phone_number: call.transfers![index]!.phone_number, briefing: text }), atMs);
}

/** The transfer as the call holds it now. */
export async function readTransfer(orgId: string, callId: string, index: number): Promise<{ call: CallItem; transfer: TransferItem } | undefined> {
  const call = await getItem<CallItem>(keys.call(orgId, callId));
  const transfer = call?.transfers?.[index];
  return call && transfer ? { call, transfer } : undefined;
}

/**
 * Settles a transfer once (the first outcome wins; later ones change nothing and answer false):
 * the outcome on the call with its event (`call.transferred`, or `call.transfer_failed` with the
 * outcome), the outcome's `system` line (with the briefing's on a Realtime call), and, unless the
 * transfer connected or `redirect` is false, the caller's live call sent back to the agent.
 */
export async function settleTransfer(orgId: string, callId: string, index: number, outcome: TransferOutcome, opts: { redirect?: boolean } = {}): Promise<boolean> {
  const atMs = clockMs();
  const events: PlatformEvent[] = [];
  const settled = await changeTransfers(orgId, callId, (_call, transfers) => {
    const t = transfers[index];
    if (!t || t.outcome !== null) return undefined;
    t.outcome = outcome;
    t.decided_at = new Date(atMs).toISOString();
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
  if (outcome !== 'connected' && opts.redirect !== false) await returnCaller(settled, index);
  return true;
}

/** The caller's live call back to the agent: a new ConversationRelay session resuming the conversation, or a new media stream with `resume`. */
async function returnCaller(call: CallItem, index: number): Promise<void> {
  if (call.status === 'ended' || !call.provider_call_id) return;
  const carrier = telephony();
  if (!carrier.updateCall) return void logger.warn('The carrier cannot redirect a live call: the caller stays where they are', { call_id: call.id });
  let twiml: string | undefined;
  const pipeline = call.transfers![index]!.pipeline ?? 'relay';
  if (pipeline === 'relay') {
    const agent = await relayCallAgent(call);
    const url = process.env.RELAY_URL;
    if (agent && isRelayAgent(agent) && url) twiml = (await relayTwiml(url, call, agent, 0, { resume: index })).body;
  } else {
    const runtime = config().voiceRuntimeUrl;
    if (runtime) twiml = (await streamTwiml(runtime, { organization_id: call.organization_id, call_id: call.id, agent_id: call.agent_id, direction: call.direction, resume: String(index) })).body;
  }
  try {
    await carrier.updateCall(call.provider_call_id, twiml ? { twiml } : { hangUp: true });
  } catch (err) {
    logger.warn('The caller could not be sent back to the agent after a warm transfer', { call_id: call.id, error: err as Error });
  }
}

/**
 * The person's call ended after `durationSec` connected: its minutes are charged like any outbound
 * minute of the organization's number (its `per_minute_price_outbound`), once (the charge's id is
 * derived from the call and the transfer; the transfer records it).
 */
export async function chargeTransferLeg(orgId: string, callId: string, index: number, durationSec: number): Promise<void> {
  const read = await readTransfer(orgId, callId, index);
  if (!read || read.transfer.leg_charged_at) return;
  const { call, transfer } = read;
  const number = call.phone_number_id ? await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, call.phone_number_id)) : undefined;
  const price = number?.per_minute_price_outbound ?? (call.direction === 'outbound' ? call.price_per_minute : 0);
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
