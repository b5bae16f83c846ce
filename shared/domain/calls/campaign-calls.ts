import { queue } from '../../adapters/queue';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem } from '../../db/store';
import type { CampaignCallOutcome, CampaignCallRequest, CampaignDialer } from '../campaigns/dial-port';
import { createCall, type CallItem } from './service';

/**
 * The calls service's side of the campaign engine.
 *
 * - placing: a campaign call is created through createCall (the same checks, item, indexes and
 *   call-place job as POST /calls) with `campaign_id`, and the campaign contact and attempt kept
 *   on the call. An attempt marker written in the call's transaction makes it idempotent per
 *   (campaign contact, attempt): a repeated request answers the call already made, placing it
 *   again if it is still queued (a call-place message that was never sent) and reporting its
 *   outcome again if it already ended (a contact put back to pending meanwhile).
 * - outcome: when a campaign call ends (carrier event, do-not-call cancel, carrier refusal,
 *   recovery sweep) the state machine's after-end steps call campaignCallEnded, which maps the
 *   call's end to recordCampaignCallOutcome (itself idempotent per contact and attempt).
 */

interface AttemptMarker {
  call_id: string;
}

async function existingCall(input: CampaignCallRequest): Promise<{ callId: string } | undefined> {
  const marker = await getItem<AttemptMarker>(keys.campaignAttemptCall(input.organizationId, input.campaignId, input.campaignContactId, input.attempt));
  if (!marker) return undefined;
  const call = await getItem<CallItem>(keys.call(input.organizationId, marker.call_id));
  if (call?.status === 'queued') await queue().send('call-place', { organization_id: input.organizationId, call_id: call.id });
  else if (call?.status === 'ended') await campaignCallEnded(call);
  return { callId: marker.call_id };
}

/**
 * A retry of a contact the agent's traffic split drew: its first attempt's version and split, so the
 * contact meets one version whatever the split became since (undefined: the first attempt drew none).
 */
async function firstAttemptSplit(input: CampaignCallRequest): Promise<{ version: number; splitId: string } | undefined> {
  if (input.attempt <= 1) return undefined;
  const marker = await getItem<AttemptMarker>(keys.campaignAttemptCall(input.organizationId, input.campaignId, input.campaignContactId, 1));
  const first = marker && (await getItem<CallItem>(keys.call(input.organizationId, marker.call_id)));
  return first && typeof first.agent_version === 'number' && first.traffic_split_id ? { version: first.agent_version, splitId: first.traffic_split_id } : undefined;
}

/** The campaign dialer the engine uses unless a test or the simulation installs another. */
export const callsServiceDialer: CampaignDialer = {
  async placeCampaignCall(input) {
    // A repeated attempt is found by createCall's one read (its marker), answered below as a race is.
    const variables = Object.fromEntries(Object.entries(input.dynamicVariables).filter(([, v]) => typeof v === 'string'));
    const keep = input.splitDraw ? await firstAttemptSplit(input) : undefined;
    try {
      const call = await createCall(
        input.organizationId,
        {
          agent_id: input.agentId, from_phone_number: input.fromPhoneNumber, to_phone_number: input.toPhoneNumber, contact_id: input.contactId, dynamic_variables: variables,
          // The campaign's version (null: the draft, pinned as such so a later publish does not change its calls).
          ...(input.agentVersion !== undefined ? { agent_version: input.agentVersion ?? 'draft' } : {}),
        },
        {
          campaignId: input.campaignId,
          campaignAttempt: { campaignContactId: input.campaignContactId, attempt: input.attempt },
          ...(input.phoneNumberId ? { phoneNumberId: input.phoneNumberId } : {}),
          ...(input.splitDraw ? { splitDraw: keep ? { keep } : {} } : {}),
        },
      );
      return { callId: call.id };
    } catch (err) {
      // The attempt has its call already (a repeat, or another placement wrote it first): answer that one.
      if (err instanceof ConditionFailed) {
        const raced = await existingCall(input);
        if (raced) return raced;
      }
      throw err;
    }
  },
};

/** How an ended call is reported to the campaign engine. */
export function campaignOutcome(item: CallItem): CampaignCallOutcome {
  const reason = item.disconnection_reason ?? 'failed';
  return {
    callId: item.id,
    endedAt: item.ended_at ?? item.updated_at,
    durationSec: item.duration_sec ?? 0,
    answered: !!item.answered_at && reason !== 'voicemail',
    // A transferred call was answered and handed on: for the campaign it completed. (Campaign calls
    // never wait in the concurrency queue, nor overflow (incoming calls only): those would be a call never dialed, failed.)
    disconnectionReason: reason === 'transferred' ? 'completed' : reason === 'queue_timeout' || reason === 'concurrency_limit' || reason === 'forwarded' ? 'failed' : reason,
    ...(item.error_message ? { errorMessage: item.error_message } : {}),
    // The carrier's call id is written once it accepted the call: without one, it never dialed.
    dialed: !!item.provider_call_id,
  };
}

/** Reports an ended campaign call's outcome to its campaign contact (nothing for other calls). */
export async function campaignCallEnded(item: CallItem): Promise<void> {
  if (!item.campaign_id || !item.campaign_contact_id || item.campaign_attempt === undefined) return;
  // The campaign engine's outcome rules load for a campaign's call only: every call's end reaches here.
  const { recordCampaignCallOutcome } = await import('../campaigns/outcomes');
  await recordCampaignCallOutcome(item.organization_id, item.campaign_id, item.campaign_contact_id, item.campaign_attempt, campaignOutcome(item));
}
