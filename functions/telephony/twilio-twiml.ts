import { http } from '../../shared/http/handler';
import { getTwilioCallInstructions as op } from '../../shared/domain/calls/operations';
import { twilioInstructions } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, query, body }) => twilioInstructions(event, query, body));
