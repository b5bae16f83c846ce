import middy from '@middy/core';
import { requestContext } from '../../../shared/http/middleware/request-context';
import { errorEnvelope } from '../../../shared/http/middleware/error-envelope';
import type { Operation } from '../../../shared/http/operation';

process.env.TABLE_NAME ??= 'unit';
process.env.BUCKET_NAME ??= 'unit';
process.env.LOG_LEVEL = 'SILENT';

/** An operation declaration with only what a middleware test needs. */
export const op = (over: Partial<Operation> = {}): Operation => ({
  method: 'POST', path: '/api/v1/test', operationId: 'test', summary: 't', tag: 't', entry: 'x', auth: false, access: {}, ...over,
});

/** A handler with the outer pair every stack has, plus the middleware under test. */
export function stack(operation: Operation, fn: (event: any) => unknown, ...extra: any[]) {
  const h = middy(async (event: any) => fn(event) as any).use(requestContext(operation)).use(errorEnvelope());
  extra.forEach((m) => h.use(m));
  return h;
}
