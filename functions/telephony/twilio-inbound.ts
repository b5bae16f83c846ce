import { http } from '../../shared/http/handler';
import { receiveTwilioInboundCall as op } from '../../shared/domain/calls/operations';
import { answerTwilioIncomingCall } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, body }) => answerTwilioIncomingCall(event, body));
