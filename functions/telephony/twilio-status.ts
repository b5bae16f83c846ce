import { http } from '../../shared/http/handler';
import { twilioStatusCallback as op } from '../../shared/domain/calls/operations';
import { receiveTwilioStatus } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, query, body }) => receiveTwilioStatus(event, query, body));
