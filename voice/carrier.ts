import { telephony } from '../shared/adapters/telephony';
import type { LiveCallChange } from '../shared/adapters/telephony/port';
import { logger } from '../shared/logger';

/**
 * The carrier's REST side of one call (the media stream is twilio-transport.ts): hang up, give the
 * live call new instructions (a transfer, an apology). Each answers whether the carrier took it;
 * without a carrier API or a call id it is false, and the session falls back to closing the stream.
 */

export const APOLOGY_TWIML = '<Response><Say>Sorry, we are having technical difficulties and have to end this call. Please call again later. Goodbye.</Say><Hangup/></Response>';

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A transfer: the live call's new instructions dial the number (the agent's ring duration as the dial timeout). */
export function transferTwiml(to: string, ringMs: number): string {
  const timeout = Math.max(5, Math.min(600, Math.round((ringMs || 30_000) / 1000)));
  return `<Response><Dial timeout="${timeout}">${xml(to)}</Dial></Response>`;
}

export class CarrierCall {
  /** `providerCallId`: the carrier's call id (Twilio CallSid), when known. */
  constructor(private readonly callId: string, private readonly providerCallId: string | undefined) {}

  /** Hangs the call up (`Status=completed`). */
  hangUp(): Promise<boolean> {
    return this.update({ hangUp: true });
  }

  /** Sends the caller to `to` (`<Dial>`), ringing at most `ringMs`. */
  transfer(to: string, ringMs: number): Promise<boolean> {
    return this.update({ twiml: transferTwiml(to, ringMs) });
  }

  /** Gives the live call new instructions (a warm transfer's conference): it leaves `<Connect>`, and the carrier stops the stream. */
  redirect(twiml: string): Promise<boolean> {
    return this.update({ twiml });
  }

  /** The carrier says the apology and hangs up (the model can no longer speak). */
  apologize(): Promise<boolean> {
    return this.update({ twiml: APOLOGY_TWIML });
  }

  /**
   * Whether the call goes on at the carrier (queued, ringing or in progress): asked when a stream
   * stops on a call the platform may have moved (a warm transfer's send-back or a late move into
   * its conference), so a stop that is not the caller's hang-up does not end the call. False when
   * the carrier cannot say (no API, a failure): the stop ends the call, as before.
   */
  async goesOn(): Promise<boolean> {
    const carrier = telephony();
    if (!carrier.fetchCall || !this.providerCallId) return false;
    try {
      const now = await carrier.fetchCall(this.providerCallId);
      return !!now && ['queued', 'ringing', 'in-progress'].includes(now.status);
    } catch (err) {
      logger.warn('The carrier could not say whether the call goes on; its stream\'s stop ends it', { call_id: this.callId, error: err as Error });
      return false;
    }
  }

  private async update(change: LiveCallChange): Promise<boolean> {
    const carrier = telephony();
    if (!carrier.updateCall || !this.providerCallId) return false;
    try {
      await carrier.updateCall(this.providerCallId, change);
      return true;
    } catch (err) {
      logger.error('The carrier did not update the live call', { call_id: this.callId, error: err as Error });
      return false;
    }
  }
}
