import { http } from '../../shared/http/handler';
import { receiveTwilioRecording as op } from '../../shared/domain/calls/operations';
import { acceptTwilioRecording } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, query, body }) => acceptTwilioRecording(event, query, body));
