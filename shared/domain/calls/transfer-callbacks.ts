import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { telephony } from '../../adapters/telephony';
import { clockNow } from '../../clock';
import { logger } from '../../logger';
import { rawBody, type RawBody } from '../common/raw-body';
import { endAtStreamStop } from './lifecycle';
import { isMachine } from './state';
import { verify } from './twilio-callbacks';
import { briefingTwiml, chargeTransferLeg, hangupDoc, personConferenceTwiml, readTransfer, settleTransfer, templateBriefing } from './warm-transfer';

/**
 * Twilio's callbacks of a warm transfer (calls/warm-transfer.ts), each signed like every Twilio
 * webhook (X-Twilio-Signature over PUBLIC_BASE_URL + path + query, where the query names the
 * call and the transfer):
 *
 * - transfer-answer: the person's call was answered. A machine (AnsweredBy) settles the transfer
 *   `machine` and hangs up; a person hears the briefing in a one-key `<Gather>`.
 * - transfer-gather: the key pressed (empty: none within the timeout). `1` joins the person to
 *   the caller's conference (`connected`); anything else is `declined`.
 * - transfer-status: the person's call status. No answer or busy settles `no_answer`, a failure
 *   `failed`, an end before any decision `declined` (or `machine`); the end's duration is charged.
 * - transfer-conference: the conference's events. Its end after the person accepted ends an
 *   inbound call (`transferred`: Twilio reports an incoming call's end only to a number with a
 *   StatusCallback); its end before, the caller having hung up, settles the transfer `failed` and
 *   hangs up the person's call.
 */
export interface TransferRef {
  organization_id: string;
  call_id: string;
  transfer: number;
}

const xmlDoc = (twiml: string): RawBody => rawBody('text/xml', twiml);

export async function transferAnswer(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  const read = await readTransfer(ref.organization_id, ref.call_id, ref.transfer);
  if (!read) return xmlDoc(hangupDoc());
  const { call, transfer } = read;
  if (transfer.outcome !== null || call.status === 'ended') return xmlDoc(hangupDoc('The caller is no longer waiting. Goodbye.'));
  const answeredBy = params.AnsweredBy;
  if (answeredBy && (isMachine(answeredBy) || answeredBy === 'fax')) {
    await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'machine');
    return xmlDoc(hangupDoc());
  }
  const briefing = transfer.briefing || templateBriefing(call, call.transcript ?? [], transfer.reason, transfer.description);
  return xmlDoc(briefingTwiml(ref.organization_id, ref.call_id, ref.transfer, briefing));
}

export async function transferGather(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  const read = await readTransfer(ref.organization_id, ref.call_id, ref.transfer);
  if (!read) return xmlDoc(hangupDoc());
  if (read.call.status === 'ended') {
    await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'failed', { redirect: false });
    return xmlDoc(hangupDoc('Sorry, the caller has hung up. Goodbye.'));
  }
  if ((params.Digits ?? '') === '1') {
    if (await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'connected')) return xmlDoc(personConferenceTwiml(ref.call_id, ref.transfer));
    return xmlDoc(hangupDoc('Sorry, the caller is no longer waiting. Goodbye.'));
  }
  await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'declined');
  return xmlDoc(hangupDoc('Thank you. The caller will be told you could not take the call. Goodbye.'));
}

export async function transferStatus(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<{ received: true }> {
  await verify(event, params);
  const status = telephony().parseStatusEvent(params);
  const { organization_id: orgId, call_id: callId, transfer: index } = ref;
  switch (status.status) {
    case 'no-answer':
    case 'busy':
      await settleTransfer(orgId, callId, index, 'no_answer');
      break;
    case 'failed':
    case 'canceled':
      await settleTransfer(orgId, callId, index, 'failed');
      break;
    case 'completed':
      // Ended before any decision: a machine, or a person who hung up during the briefing.
      await settleTransfer(orgId, callId, index, isMachine(status.answeredBy) ? 'machine' : 'declined');
      if (status.durationSec !== undefined) await chargeTransferLeg(orgId, callId, index, status.durationSec);
      break;
    default:
      break;
  }
  return { received: true };
}

export async function transferConference(event: APIGatewayProxyEventV2, ref: TransferRef, params: Record<string, string>): Promise<{ received: true }> {
  await verify(event, params);
  if (params.StatusCallbackEvent !== 'conference-end') return { received: true };
  const read = await readTransfer(ref.organization_id, ref.call_id, ref.transfer);
  if (!read) return { received: true };
  const { call, transfer } = read;
  if (transfer.outcome === 'connected') {
    // The caller's <Dial> is over, and with it the call (no verb follows): an inbound call ends here, `transferred`.
    if (call.status !== 'ended') await endAtStreamStop(call, clockNow().toISOString());
    return { received: true };
  }
  if (transfer.outcome === null) {
    // The caller hung up while waiting: the person's call goes too.
    await settleTransfer(ref.organization_id, ref.call_id, ref.transfer, 'failed', { redirect: false });
    const carrier = telephony();
    if (transfer.leg_call_id && carrier.updateCall) {
      await carrier.updateCall(transfer.leg_call_id, { hangUp: true }).catch((err: unknown) => logger.info('The person\'s call of a warm transfer could not be hung up (it may have ended)', { call_id: call.id, error: err as Error }));
    }
    if (call.status !== 'ended') await endAtStreamStop(call, clockNow().toISOString());
  }
  return { received: true };
}
