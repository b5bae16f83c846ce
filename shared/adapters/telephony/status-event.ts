import { ValidationError } from '../../errors';
import type { CallStatus, CallStatusEvent } from './port';

const STATUSES: CallStatus[] = ['queued', 'ringing', 'in-progress', 'completed', 'busy', 'no-answer', 'failed', 'canceled'];

/**
 * Reads a call status callback in Twilio's form fields (`CallSid`, `CallStatus`,
 * `CallDuration`, `Timestamp`, `AnsweredBy`), the shape both adapters post and accept. Twilio also sends
 * `initiated`, which is `queued` here.
 */
export function parseCallStatusFields(fields: Record<string, string>): CallStatusEvent {
  const providerCallId = fields.CallSid;
  const raw = fields.CallStatus === 'initiated' ? 'queued' : fields.CallStatus;
  if (!providerCallId) throw ValidationError.field('CallSid', 'is required');
  if (!STATUSES.includes(raw as CallStatus)) throw ValidationError.field('CallStatus', `is not a call status: ${raw}`);
  const duration = fields.CallDuration !== undefined ? Number(fields.CallDuration) : undefined;
  const at = fields.Timestamp ? new Date(fields.Timestamp) : new Date();
  return {
    providerCallId,
    status: raw as CallStatus,
    ...(duration !== undefined && Number.isFinite(duration) ? { durationSec: duration } : {}),
    ...(fields.AnsweredBy ? { answeredBy: fields.AnsweredBy } : {}),
    at: Number.isNaN(at.getTime()) ? new Date().toISOString() : at.toISOString(),
  };
}
