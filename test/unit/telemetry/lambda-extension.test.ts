/**
 * The internal extension's wait carries a function's work after its answer (shared/after-answer.ts,
 * shared/telemetry/lambda-extension.ts): against a Runtime API stand-in that gives one INVOKE
 * event and then holds the next request, as Lambda does until the next invocation. The work runs
 * after the handler has settled (its answer is on its way) and before the extension asks for its
 * next event, which is what keeps Lambda from freezing the environment first.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAnswerOf } from '../../../shared/after-answer';
import { lambdaHandlers } from '../../../shared/telemetry/lambda-extension';

const order: string[] = [];
let server: Server;
let api = '';
let nexts = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url?.endsWith('/extension/register')) {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'lambda-extension-identifier': 'ext-1' }).end('{}');
      return;
    }
    if (req.url?.endsWith('/extension/event/next')) {
      nexts++;
      order.push(`next #${nexts}`);
      // The first: this invocation's INVOKE event. Later ones wait for an invocation that never comes.
      if (nexts === 1) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ eventType: 'INVOKE', deadlineMs: Date.now() + 5_000, requestId: 'r-1' }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  // The held `next` is cut: the extension says it stopped, as when an environment shuts down.
  const said = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  for (let i = 0; i < 100 && !said.mock.calls.length; i++) await new Promise((r) => setTimeout(r, 10));
  expect(said.mock.calls[0]?.[0]).toMatch(/^trace export extension stopped/);
});

it('registers with tracing on in Lambda, offers work after the answer, and runs it before asking for the next event', async () => {
  const wrap = await lambdaHandlers({ AWS_LAMBDA_RUNTIME_API: api, AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
  const handler = wrap(async (_event: unknown, context: object) => {
    const later = afterAnswerOf(context);
    expect(later).toBeDefined();
    later!(async () => {
      order.push('after the answer');
    });
    order.push('answered');
    return { statusCode: 200 };
  });
  for (let i = 0; i < 100 && nexts < 1; i++) await new Promise((r) => setTimeout(r, 10));
  await expect(handler({}, { awsRequestId: 'r-1' })).resolves.toEqual({ statusCode: 200 });
  for (let i = 0; i < 200 && nexts < 2; i++) await new Promise((r) => setTimeout(r, 10));
  expect(order).toEqual(['next #1', 'answered', 'after the answer', 'next #2']);
});

it('offers nothing where no extension is registered (tracing off): the handler is the function\'s own', async () => {
  const own = async () => ({ statusCode: 200 });
  const wrap = await lambdaHandlers({ AWS_LAMBDA_RUNTIME_API: api, AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x' });
  expect(wrap(own)).toBe(own);
});
