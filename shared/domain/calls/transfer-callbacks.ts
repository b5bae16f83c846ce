import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { telephony } from '../../adapters/telephony';
import { clockNow } from '../../clock';
import { logger } from '../../logger';
import { rawBody, type RawBody } from '../common/raw-body';
import { endAtStreamStop } from './lifecycle';
import { isMachine } from './state';
import type { TransferItem } from './transfer-item';
import { verify } from './twilio-callbacks';
import {
  acceptTransfer, briefingForAnswer, briefingTwiml, chargeAmd, chargeConference, chargeTransferLeg, ensureBriefing, hangUpLeg, hangupDoc, noteOnTransfer,
  personConferenceTwiml, readTransfer, returnLateCaller, settleTransfer,
} from './warm-transfer';

/**
 * Twilio's callbacks of a warm transfer (calls/warm-transfer.ts), each signed like every Twilio
 * webhook (X-Twilio-Signature over PUBLIC_BASE_URL + path + query, where the query names the
 * call and the transfer). A callback about the person's call whose CallSid is not the transfer's
 * (`leg_call_id`: a late callback of another call) changes nothing: 200 and a log.
 *
 * - transfer-answer: the person's call was answered (asynchronous machine detection: at once,
 *   without AnsweredBy). They hear the briefing in a one-key `<Gather>` (made while their phone
 *   rang; not ready within BRIEFING_WAIT_MS: the template). A synchronous machine result
 *   (AnsweredBy) settles the transfer `machine` and hangs up.
 * - transfer-gather: the key pressed (empty: none within the timeout). `1` accepts: the person
 *   is joined to the caller's conference and the transfer connects when they are in it (the
 *   conference's participant-join); anything else is `declined`.
 * - transfer-status: the person's call status, and the asynchronous machine-detection result
 *   (AnsweredBy without CallStatus). `initiated`/`ringing` make the briefing while the phone
 *   rings. A machine settles `machine` (their call hung up); no answer or busy `no_answer`, a
 *   failure `failed`; an end before any decision `declined` (or `machine`), an end after 1 but
 *   before joining `failed`; the end's duration (and the detection) is charged.
 * - transfer-conference: the conference's events. The person joining connects the transfer;
 *   participants' joins and leaves are kept (their minutes are charged at the end). Its end after
 *   the person joined ends an inbound call (`transferred`: Twilio reports an incoming call's end
 *   only to a number with a StatusCallback); its end before, the caller having hung up, settles
 *   the transfer `failed` and hangs up the person's call.
 */
export interface TransferRef {
  organization_id: string;
  call_id: string;
  transfer: number;
}

const xmlDoc = (twiml: string): RawBody => rawBody('text/xml', twiml);

/** A callback about a call that is not the transfer's person's call (a lost race's, an earlier attempt's): logged, ignored. */
function foreign(ref: TransferRef, transfer: TransferItem, params: Record<string, string>, kind: string): boolean {
  if (!transfer.leg_call_id || !params.CallSid || params.CallSid === transfer.leg_call_id) return false;
  logger.warn('A warm transfer callback for another carrier call; ignored', { call_id: ref.call_id, transfer: ref.transfer, kind, call_sid: params.CallSid, leg_call_id: transfer.leg_call_id });
  return true;
}

export async function transferAnswer(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  const read = await readTransfer(ref.organization_id, ref.call_id, ref.transfer);
  if (!read) return xmlDoc(hangupDoc());
  const { call, transfer } = read;
  if (foreign(ref, transfer, params, 'answer')) return xmlDoc(hangupDoc());
  if (transfer.outcome !== null || call.status === 'ended') return xmlDoc(hangupDoc('The caller is no longer waiting. Goodbye.'));
  const answeredBy = params.AnsweredBy;
  if (answeredBy && (isMachine(answeredBy) || answeredBy === 'fax')) {
    await chargeAmd(ref.organization_id, ref.call_id, ref.transfer, answeredBy);
    await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'machine');
    return xmlDoc(hangupDoc());
  }
  const briefing = await briefingForAnswer(ref.organization_id, ref.call_id, ref.transfer);
  return xmlDoc(briefingTwiml(ref.organization_id, ref.call_id, ref.transfer, briefing));
}

export async function transferGather(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  const read = await readTransfer(ref.organization_id, ref.call_id, ref.transfer);
  if (!read) return xmlDoc(hangupDoc());
  if (foreign(ref, read.transfer, params, 'gather')) return xmlDoc(hangupDoc());
  if (read.call.status === 'ended') {
    await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'failed', { redirect: false });
    return xmlDoc(hangupDoc('Sorry, the caller has hung up. Goodbye.'));
  }
  if ((params.Digits ?? '') === '1') {
    // Accepted: connected once they are in the conference (its participant-join); a person who hangs up before is not.
    if (await acceptTransfer(ref.organization_id, ref.call_id, ref.transfer)) return xmlDoc(personConferenceTwiml(ref.call_id, ref.transfer));
    return xmlDoc(hangupDoc('Sorry, the caller is no longer waiting. Goodbye.'));
  }
  await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'declined');
  return xmlDoc(hangupDoc('Thank you. The caller will be told you could not take the call. Goodbye.'));
}

/** The asynchronous machine-detection result: charged, kept; a machine (or fax) is hung up on and the caller goes back to the agent. */
async function machineDetected(ref: TransferRef, answeredBy: string): Promise<void> {
  const { organization_id: orgId, call_id: callId, transfer: index } = ref;
  await chargeAmd(orgId, callId, index, answeredBy);
  if (!(isMachine(answeredBy) || answeredBy === 'fax')) return;
  const read = await readTransfer(orgId, callId, index);
  if (!read || read.transfer.outcome !== null) return;
  await settleTransfer(orgId, callId, index, 'machine');
  await hangUpLeg(read.call, read.transfer);
}

export async function transferStatus(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<{ received: true }> {
  await verify(event, params);
  const { organization_id: orgId, call_id: callId, transfer: index } = ref;
  const read = await readTransfer(orgId, callId, index);
  if (!read) return { received: true };
  if (foreign(ref, read.transfer, params, params.CallStatus ? 'status' : 'machine-detection')) return { received: true };
  // Asynchronous machine detection posts its result here: AnsweredBy, no CallStatus.
  if (!params.CallStatus && params.AnsweredBy) {
    await machineDetected(ref, params.AnsweredBy);
    return { received: true };
  }
  const status = telephony().parseStatusEvent(params);
  switch (status.status) {
    case 'queued':
    case 'ringing':
      // The phone rings: the briefing is made now, within this request, ready before anyone answers.
      await ensureBriefing(orgId, callId, index);
      break;
    case 'no-answer':
    case 'busy':
      await settleTransfer(orgId, callId, index, 'no_answer');
      break;
    case 'failed':
    case 'canceled':
      await settleTransfer(orgId, callId, index, 'failed');
      break;
    case 'completed': {
      // Ended before any decision: a machine, or a person who hung up during the briefing; after 1 but before joining: failed.
      const machine = isMachine(status.answeredBy) || isMachine(read.transfer.answered_by);
      await settleTransfer(orgId, callId, index, machine ? 'machine' : read.transfer.accepted_at && !read.transfer.joined_at ? 'failed' : 'declined');
      if (status.durationSec !== undefined) await chargeTransferLeg(orgId, callId, index, status.durationSec, status.answeredBy);
      break;
    }
    default:
      break;
  }
  return { received: true };
}

/** A conference callback's time (Twilio's Timestamp), else now. */
const timeOf = (params: Record<string, string>) => {
  const at = params.Timestamp ? Date.parse(params.Timestamp) : NaN;
  return Number.isFinite(at) ? new Date(at).toISOString() : clockNow().toISOString();
};

export async function transferConference(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<{ received: true }> {
  await verify(event, params);
  const { organization_id: orgId, call_id: callId, transfer: index } = ref;
  const kind = params.StatusCallbackEvent;
  const at = timeOf(params);
  if (kind === 'participant-join' && params.CallSid) {
    const sid = params.CallSid;
    await noteOnTransfer(orgId, callId, index, (t) => {
      if (t.participants?.[sid] && !t.participants[sid]!.left_at) return false;
      t.participants = { ...t.participants, [sid]: { joined_at: at } };
      if (sid === t.leg_call_id && !t.joined_at) t.joined_at = at;
      return true;
    });
    const read = await readTransfer(orgId, callId, index);
    // The person is in: the transfer connects (the caller's hold ends as the conference starts).
    if (read && sid === read.transfer.leg_call_id && read.transfer.outcome === null) await settleTransfer(orgId, callId, index, 'connected');
    // The caller arrived after the transfer was over (their move raced its outcome's send-back): nobody is coming, back to the agent.
    else if (read && sid === read.call.provider_call_id && read.transfer.outcome !== null && read.transfer.outcome !== 'connected') await returnLateCaller(orgId, callId, index);
    return { received: true };
  }
  if (kind === 'participant-leave' && params.CallSid) {
    const sid = params.CallSid;
    await noteOnTransfer(orgId, callId, index, (t) => {
      const p = t.participants?.[sid];
      if (!p || p.left_at) return false;
      t.participants = { ...t.participants, [sid]: { ...p, left_at: at } };
      return true;
    });
    return { received: true };
  }
  if (kind !== 'conference-end') return { received: true };
  const read = await readTransfer(orgId, callId, index);
  if (!read) return { received: true };
  const { call, transfer } = read;
  await chargeConference(orgId, callId, index, at);
  if (transfer.outcome === 'connected') {
    // The caller's <Dial> is over, and with it the call (no verb follows): an inbound call ends here, `transferred`.
    if (call.status !== 'ended') await endAtStreamStop(call, clockNow().toISOString());
    return { received: true };
  }
  if (transfer.outcome === null) {
    // The caller hung up while waiting: the person's call goes too.
    await settleTransfer(orgId, callId, index, 'failed', { redirect: false });
    await hangUpLeg(call, transfer);
    if (call.status !== 'ended') await endAtStreamStop(call, clockNow().toISOString());
  }
  return { received: true };
}
