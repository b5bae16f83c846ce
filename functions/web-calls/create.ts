import { http } from '../../shared/http/handler';
import { createWebCall as op } from '../../shared/domain/calls/web-call-operations';
import { createWebCall } from '../../shared/domain/calls/web-calls';

export const handler = http(op, ({ body, caller }) => createWebCall(caller.organizationId, body));
