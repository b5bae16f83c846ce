/**
 * The port through which the campaign engine places calls. The calls service implements it and is
 * the default (../calls/campaign-calls.ts: it creates a queued call session, placed by its own
 * job) and, when a campaign call ends,
 * calls `recordCampaignCallOutcome` (./outcomes.ts) with the same organization, campaign,
 * campaign contact and attempt.
 *
 * Contract for an implementation:
 * - idempotent per (`campaignContactId`, `attempt`): a second request for the same pair (a
 *   recovered lease, a redelivered dispatch) answers the same `callId` and places nothing new;
 * - it only queues the call: it answers within a request's time, never waits for the call;
 * - it throws when the call cannot be queued; the engine then puts the contact back to `pending`.
 */
export interface CampaignCallRequest {
  organizationId: string;
  campaignId: string;
  campaignContactId: string;
  /** 1 for the first call to this contact, 2 for the first retry, … */
  attempt: number;
  agentId: string;
  /** The agent version the campaign fixed (null: the draft); absent: the calls service's default. */
  agentVersion?: number | null;
  /**
   * The campaign pins no version: while the agent has a traffic split, the contact's first attempt
   * draws its version (sticky for the contact) and a retry keeps the first attempt's version and
   * split; without a split, `agentVersion`.
   */
  splitDraw?: boolean;
  fromPhoneNumber: string;
  /** The id of `fromPhoneNumber` (the campaign's), so the dialer need not look it up. */
  phoneNumberId?: string;
  toPhoneNumber: string;
  contactId: string;
  dynamicVariables: Record<string, string>;
}

export interface CampaignDialer {
  placeCampaignCall(input: CampaignCallRequest): Promise<{ callId: string }>;
}

/** How a campaign call ended, as the calls service reports it. */
export interface CampaignCallOutcome {
  callId: string;
  endedAt: string;
  durationSec: number;
  answered: boolean;
  disconnectionReason: 'completed' | 'no_answer' | 'busy' | 'voicemail' | 'failed' | 'canceled';
  /** Why the platform ended it (the call's `error_message`: do-not-call, carrier refusal, sweep), when it did. */
  errorMessage?: string;
  /**
   * False when the carrier never dialed the call (it refused or was unavailable when asked to place
   * it, or the call was never handed to it): such a `failed` end does not use up an attempt.
   * Omitted means dialed.
   */
  dialed?: boolean;
}
