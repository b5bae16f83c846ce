import { http } from '../../shared/http/handler';
import { receiveTwilioTransferGather as op } from '../../shared/domain/calls/transfer-operations';
import { transferGather } from '../../shared/domain/calls/transfer-callbacks';

export const handler = http(op, ({ event, query, body }) => transferGather(event, query, body));
