import { http } from '../../shared/http/handler';
import { twilioRecordingCallback as op } from '../../shared/domain/calls/operations';
import { receiveTwilioRecording } from '../../shared/domain/calls/twilio-callbacks';

export const handler = http(op, ({ event, query, body }) => receiveTwilioRecording(event, query, body));
