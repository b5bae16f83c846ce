import { http } from '../../shared/http/handler';
import { receiveTwilioTransferAnswer as op } from '../../shared/domain/calls/transfer-operations';
import { transferAnswer } from '../../shared/domain/calls/transfer-callbacks';

export const handler = http(op, ({ event, query, body }) => transferAnswer(event, query, body));
