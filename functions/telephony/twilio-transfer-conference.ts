import { http } from '../../shared/http/handler';
import { receiveTwilioTransferConference as op } from '../../shared/domain/calls/transfer-operations';
import { transferConference } from '../../shared/domain/calls/transfer-callbacks';

export const handler = http(op, ({ event, query, body }) => transferConference(event, query, body));
