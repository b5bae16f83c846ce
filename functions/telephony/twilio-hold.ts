import { http } from '../../shared/http/handler';
import { getTwilioHoldInstructions as op } from '../../shared/domain/calls/operations';
import { twilioHold } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, query, body }) => twilioHold(event, query, body));
