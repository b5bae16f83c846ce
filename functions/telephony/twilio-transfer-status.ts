import { http } from '../../shared/http/handler';
import { receiveTwilioTransferStatus as op } from '../../shared/domain/calls/transfer-operations';
import { transferStatus } from '../../shared/domain/calls/transfer-callbacks';

export const handler = http(op, ({ event, query, body }) => transferStatus(event, query, body));
