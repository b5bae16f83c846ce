import { http } from '../../shared/http/handler';
import { receiveTwilioStatus as op } from '../../shared/domain/calls/operations';
import { acceptTwilioStatus } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, query, body }) => acceptTwilioStatus(event, query, body));
