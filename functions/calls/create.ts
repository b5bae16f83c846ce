import { http } from '../../shared/http/handler';
import { createCall as op } from '../../shared/domain/calls/operations';
import { requestCall } from '../../shared/domain/calls/service';
import { header } from '../../shared/domain/common/header';

// The Idempotency-Key names the call it makes, so a retry after a failure that followed the write answers that call.
export const handler = http(op, ({ body, caller, event }) => requestCall(caller.organizationId, body, header(event, 'idempotency-key') || undefined));
