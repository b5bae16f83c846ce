import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluate } from '../../shared/local/stack/template';
import { parseSecretValueFrom, readContainerSecrets } from '../../shared/local/stack/ecs-task';
import { FunctionError, LambdaService, LambdaServiceError, type FunctionSpec } from '../../shared/local/stack/functions';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/** The stack runner's pieces that need no AWS stand-ins: intrinsics, ECS secrets, Lambda environments. */

const scope = (extra: Partial<Parameters<typeof evaluate>[1]> = {}) => ({
  refs: { 'AWS::Region': 'eu-west-1', 'AWS::URLSuffix': 'amazonaws.com', Table: 'tbl', Param: 'p-value' },
  attrs: { Table: { Arn: 'arn:aws:dynamodb:eu-west-1:1:table/tbl' }, Nested: { 'Outputs.FnArn': 'arn:aws:lambda:eu-west-1:1:function:f' } },
  conditions: { IsProd: { 'Fn::Equals': [{ Ref: 'Param' }, 'p-value'] } },
  mappings: { Sizes: { small: { mb: 128 } } },
  missing: [] as string[],
  where: 'test',
  ...extra,
});

describe('CloudFormation intrinsics (template.ts evaluate)', () => {
  it('resolves Ref, GetAtt (nested outputs too), Join, Sub, Select, Split, If, FindInMap and drops AWS::NoValue', () => {
    const s = scope();
    expect(
      evaluate(
        {
          name: { Ref: 'Table' },
          arn: { 'Fn::GetAtt': ['Table', 'Arn'] },
          nested: { 'Fn::GetAtt': ['Nested', 'Outputs.FnArn'] },
          url: { 'Fn::Join': ['', ['https://', { Ref: 'Param' }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }]] },
          sub: { 'Fn::Sub': ['${Table}/${Table.Arn}/${x}/${!Literal}', { x: 'X' }] },
          selected: { 'Fn::Select': [1, { 'Fn::Split': [',', 'a,b,c'] }] },
          chosen: { 'Fn::If': ['IsProd', 'yes', 'no'] },
          mapped: { 'Fn::FindInMap': ['Sizes', 'small', 'mb'] },
          gone: { Ref: 'AWS::NoValue' },
          list: ['keep', { Ref: 'AWS::NoValue' }],
        },
        s,
      ),
    ).toEqual({
      name: 'tbl',
      arn: 'arn:aws:dynamodb:eu-west-1:1:table/tbl',
      nested: 'arn:aws:lambda:eu-west-1:1:function:f',
      url: 'https://p-value.execute-api.eu-west-1.amazonaws.com',
      sub: 'tbl/arn:aws:dynamodb:eu-west-1:1:table/tbl/X/${Literal}',
      selected: 'b',
      chosen: 'yes',
      mapped: 128,
      list: ['keep'],
    });
    expect(s.missing).toEqual([]);
  });

  it('leaves an IAM statement\'s Condition block as it is (not a CloudFormation condition)', () => {
    const statement = { Effect: 'Allow', Action: 'dynamodb:UpdateItem', Resource: { 'Fn::GetAtt': ['Table', 'Arn'] }, Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RATE#*'] }, Bool: { 'aws:SecureTransport': 'true' } } };
    expect(evaluate(statement, scope())).toEqual({ ...statement, Resource: 'arn:aws:dynamodb:eu-west-1:1:table/tbl' });
  });

  it('reports what it cannot resolve, naming where', () => {
    const s = scope();
    evaluate({ a: { Ref: 'Nowhere' }, b: { 'Fn::GetAtt': ['Table', 'StreamArn'] }, c: { 'Fn::ImportValue': 'x' } }, s);
    expect(s.missing).toEqual(['test: Ref Nowhere', 'test: Fn::GetAtt Table.StreamArn', 'test: Fn::ImportValue']);
  });
});

describe('ECS task secrets (ecs-task.ts)', () => {
  const arn = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:RealtimeKey-AbCdEf';
  it('splits ValueFrom into the secret ARN and its json-key, stage and version', () => {
    expect(parseSecretValueFrom(`${arn}:api_key::`)).toEqual({ secretId: arn, jsonKey: 'api_key' });
    expect(parseSecretValueFrom(arn)).toEqual({ secretId: arn });
    expect(parseSecretValueFrom(`${arn}:api_key:AWSPREVIOUS:`)).toEqual({ secretId: arn, jsonKey: 'api_key', versionStage: 'AWSPREVIOUS' });
  });

  const client = (value: string) => ({ send: async () => ({ SecretString: value }) }) as unknown as SecretsManagerClient;
  it('reads one key of a JSON secret, as the ECS agent does', async () => {
    await expect(readContainerSecrets({ REALTIME_API_KEY: `${arn}:api_key::` }, client('{"api_key":"sk-1"}'))).resolves.toEqual({ REALTIME_API_KEY: 'sk-1' });
    await expect(readContainerSecrets({ WHOLE: arn }, client('plain'))).resolves.toEqual({ WHOLE: 'plain' });
  });

  it('fails the task before it starts when the secret lacks the key (a plain generated string, say)', async () => {
    await expect(readContainerSecrets({ REALTIME_API_KEY: `${arn}:api_key::` }, client('kX9vR2mQ'))).rejects.toThrow(
      /ResourceInitializationError: unable to pull secrets or registry auth: retrieved secret from Secrets Manager did not contain json key api_key/,
    );
  });
});

describe('Lambda execution environments (functions.ts)', () => {
  let dir: string;
  let lambda: LambdaService;
  const fn = (name: string, code: string, extra: Partial<FunctionSpec> = {}): FunctionSpec => {
    const codeDir = join(dir, name);
    mkdirSync(codeDir, { recursive: true });
    writeFileSync(join(codeDir, 'index.mjs'), code);
    return {
      name,
      logicalId: `${name}Function`,
      arn: `arn:aws:lambda:us-east-1:000000000000:function:${name}`,
      codeDir,
      handler: 'index.handler',
      environment: { OWN: name },
      memoryMb: 128,
      timeoutSeconds: 1,
      credentials: { accessKeyId: `ASIA${name.toUpperCase()}`, secretAccessKey: 's', sessionToken: 't' },
      logGroupName: `/aws/lambda/${name}`,
      ...extra,
    };
  };
  const logs: string[] = [];
  /**
   * A bundle with an internal extension registered at init (a top-level await, as
   * shared/telemetry/lambda-extension.ts is): after each INVOKE it waits for the handler, works
   * `afterInvokeMs`, writes the request id to `done.log` beside the bundle, then asks for its
   * next event. The handler answers what the extension has done so far.
   */
  const extension = (options: { afterInvokeMs?: number; firstNextDelayMs?: number; neverNext?: boolean; events?: string[] }) => `
    import { appendFileSync } from 'node:fs';
    const base = 'http://' + process.env.AWS_LAMBDA_RUNTIME_API + '/2020-01-01/extension';
    const reg = await fetch(base + '/register', { method: 'POST', headers: { 'Lambda-Extension-Name': 'test-ext' }, body: JSON.stringify({ events: ${JSON.stringify(options.events ?? ['INVOKE'])} }) });
    const registration = { status: reg.status, body: await reg.json() };
    const id = reg.headers.get('lambda-extension-identifier');
    const done = [];
    let settled = 0;
    let nextCalled = false;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    if (id) (async () => {
      await sleep(${options.firstNextDelayMs ?? 0});
      for (let taken = 0; ; ) {
        nextCalled = true;
        const event = await (await fetch(base + '/event/next', { headers: { 'Lambda-Extension-Identifier': id } })).json();
        taken++;
        while (settled < taken) await sleep(5);
        if (${!!options.neverNext}) return;
        await sleep(${options.afterInvokeMs ?? 0});
        done.push(event.requestId);
        appendFileSync(new URL('./done.log', import.meta.url), event.eventType + ' ' + event.requestId + ' ' + (event.deadlineMs > Date.now()) + ' ' + event.invokedFunctionArn + '\\n');
      }
    })();
    export const handler = async (event, context) => {
      try {
        if (event.registerLate) {
          const late = await fetch(base + '/register', { method: 'POST', headers: { 'Lambda-Extension-Name': 'late' }, body: '{"events":["INVOKE"]}' });
          const unnamed = await fetch(base + '/register', { method: 'POST', body: '{}' });
          const stranger = await fetch(base + '/event/next', { headers: { 'Lambda-Extension-Identifier': 'not-registered' } });
          return { late: late.status, lateType: (await late.json()).errorType, unnamed: unnamed.status, stranger: stranger.status };
        }
        return { registration, nextCalled, done: [...done], requestId: context.awsRequestId };
      } finally {
        settled++;
      }
    };`;
  const doneLog = (name: string) => {
    try {
      return readFileSync(join(dir, name, 'done.log'), 'utf8').trim().split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'stack-fns-'));
    lambda = new LambdaService(
      [
        fn('env', 'export const handler = async (event, context) => ({ own: process.env.OWN, key: process.env.AWS_ACCESS_KEY_ID, name: context.functionName, remaining: context.getRemainingTimeInMillis() > 0, endpoint: process.env.AWS_ENDPOINT_URL, region: process.env.AWS_REGION, event });'),
        fn('other', 'export const handler = async () => ({ own: process.env.OWN, key: process.env.AWS_ACCESS_KEY_ID });'),
        fn('slow', 'export const handler = () => new Promise((r) => setTimeout(() => r("late"), 5000));'),
        fn('broken', 'import "./missing-chunk.mjs"; export const handler = async () => 1;'),
        fn('throws', 'export const handler = async () => { const e = new Error("bad input"); e.name = "ValidationError"; throw e; };'),
        fn('noexport', 'export const other = 1;'),
        fn('stream', 'export const handler = awslambda.streamifyResponse(async (event, stream) => { const out = awslambda.HttpResponseStream.from(stream, { statusCode: 201, headers: { "content-type": "text/event-stream" } }); out.write("data: 1\\n\\n"); out.write("data: 2\\n\\n"); out.end(); });'),
        // Ends its stream, then works on (as a turn storing its figures after the answer does): writes its line 300 ms after.
        fn('streamlate', 'import { appendFileSync } from "node:fs"; export const handler = awslambda.streamifyResponse(async (event, stream) => { const out = awslambda.HttpResponseStream.from(stream, { statusCode: 200, headers: {} }); out.write("whole"); out.end(); await new Promise((r) => setTimeout(r, 300)); appendFileSync(new URL("./done.log", import.meta.url), "after\\n"); });', { timeoutSeconds: 3 }),
        fn('reserved', 'export const handler = () => new Promise((r) => setTimeout(() => r("ok"), 300));', { reservedConcurrency: 1, timeoutSeconds: 3 }),
        fn('logs', 'console.log("init line"); export const handler = async () => { console.log(JSON.stringify({ level: "INFO", message: "hello" })); return 1; };'),
        fn('ext', extension({ afterInvokeMs: 300 }), { timeoutSeconds: 3 }),
        fn('extslow', extension({ firstNextDelayMs: 300 }), { timeoutSeconds: 3 }),
        fn('extstuck', extension({ neverNext: true }), { timeoutSeconds: 1 }),
        fn('extshutdown', extension({ events: ['INVOKE', 'SHUTDOWN'] })),
      ],
      { region: 'eu-west-1', extraEnvironment: { AWS_ENDPOINT_URL: 'http://127.0.0.1:9' }, log: (line, f) => logs.push(`[${f.logicalId}] ${line}`) },
    );
  });
  afterAll(async () => {
    await lambda.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives each function its own environment, credentials and context', async () => {
    await expect(lambda.invoke('env', { a: 1 })).resolves.toEqual({ own: 'env', key: 'ASIAENV', name: 'env', remaining: true, endpoint: 'http://127.0.0.1:9', region: 'eu-west-1', event: { a: 1 } });
    await expect(lambda.invoke('other', {})).resolves.toEqual({ own: 'other', key: 'ASIAOTHER' });
  });

  it('stops an invocation past its timeout, as Lambda does, and starts a new environment after', async () => {
    await expect(lambda.invoke('slow', {})).rejects.toMatchObject({ name: 'Sandbox.Timedout', message: expect.stringMatching(/Task timed out after 1\.00 seconds$/) });
    expect(lambda.stats.get('slow')).toMatchObject({ timeouts: 1, coldStarts: 1 });
  });

  it('fails the invocation of a bundle that does not load, and of a handler that is not exported', async () => {
    await expect(lambda.invoke('broken', {})).rejects.toMatchObject({ name: 'Runtime.ImportModuleError' });
    await expect(lambda.warm('broken')).rejects.toBeInstanceOf(FunctionError);
    await expect(lambda.invoke('noexport', {})).rejects.toMatchObject({ name: 'Runtime.HandlerNotFound' });
  });

  it('reports the function\'s own error by its name', async () => {
    await expect(lambda.invoke('throws', {})).rejects.toMatchObject({ name: 'ValidationError', message: 'bad input' });
  });

  it('streams a response: the prelude first, then each chunk', async () => {
    const seen: unknown[] = [];
    await lambda.invoke('stream', {}, { prelude: (p) => seen.push(p), chunk: (c) => seen.push(c) });
    expect(seen).toEqual([{ statusCode: 201, headers: { 'content-type': 'text/event-stream' } }, 'data: 1\n\n', 'data: 2\n\n']);
  });

  it('ends a streamed response with its stream, as Lambda does, while the invocation goes on until the handler returns', async () => {
    const seen: string[] = [];
    let endedAt = 0;
    const invoked = lambda.invoke('streamlate', {}, { prelude: () => undefined, chunk: (c) => seen.push(c), end: () => (endedAt = Date.now()) });
    await invoked;
    const returnedAt = Date.now();
    expect(seen).toEqual(['whole']);
    expect(endedAt).toBeGreaterThan(0);
    // The client had its whole answer before the handler's work after it (300 ms) was done.
    expect(returnedAt - endedAt).toBeGreaterThanOrEqual(250);
    expect(doneLog('streamlate')).toEqual(['after']);
  });

  it('throttles past the reserved concurrency', async () => {
    const results = await Promise.allSettled([lambda.invoke('reserved', {}), lambda.invoke('reserved', {})]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(LambdaServiceError);
    expect(refused.reason).toMatchObject({ name: 'TooManyRequestsException', statusCode: 429 });
  });

  it('refuses an event over the 6 MB payload limit', async () => {
    await expect(lambda.invoke('env', { big: 'x'.repeat(6 * 1024 * 1024) })).rejects.toMatchObject({ name: 'RequestTooLargeException' });
  });

  describe('the Extensions API (extensions-api.ts)', () => {
    const waitFor = async (check: () => boolean, what: string) => {
      for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
      if (!check()) throw new Error(`not seen within 2 s: ${what}`);
    };

    it('registers an extension during init and gives it each INVOKE event; the caller is answered before the extension has finished', async () => {
      const first = (await lambda.invoke('ext', {})) as { registration: { status: number; body: unknown }; done: string[]; requestId: string };
      expect(first.registration).toEqual({ status: 200, body: { functionName: 'ext', functionVersion: '$LATEST', handler: 'index.handler' } });
      expect(first.done).toEqual([]);
      // Answered while the extension still works on this invocation (it writes its line 300 ms after).
      expect(doneLog('ext')).toEqual([]);
      // The environment is not free until the extension asks for its next event: a second invocation gets another one.
      await lambda.invoke('ext', {});
      expect(lambda.stats.get('ext')).toMatchObject({ coldStarts: 2, timeouts: 0 });
      await waitFor(() => doneLog('ext').length === 2, 'both INVOKE events handled');
      expect(doneLog('ext')).toEqual(expect.arrayContaining([`INVOKE ${first.requestId} true arn:aws:lambda:us-east-1:000000000000:function:ext`]));
      // Once it has asked, the environment takes the next invocation, and the work is done by then.
      const third = (await lambda.invoke('ext', {})) as { done: string[] };
      expect(lambda.stats.get('ext')).toMatchObject({ coldStarts: 2 });
      expect(third.done).toHaveLength(1);
    });

    it('ends init only once every registered extension has asked for its next event', async () => {
      await expect(lambda.invoke('extslow', {})).resolves.toMatchObject({ nextCalled: true });
    });

    it('refuses a registration after init, without a name, an unknown identifier, and SHUTDOWN for an internal extension', async () => {
      await expect(lambda.invoke('ext', { registerLate: true })).resolves.toEqual({ late: 403, lateType: 'Extension.RegistrationForbidden', unnamed: 400, stranger: 403 });
      await expect(lambda.invoke('extshutdown', {})).resolves.toMatchObject({ registration: { status: 403, body: { errorType: 'Extension.ShutdownNotAllowed' } } });
    });

    it('resets the environment when an extension does not ask for its next event within the timeout; the caller has its answer', async () => {
      await expect(lambda.invoke('extstuck', {})).resolves.toMatchObject({ done: [] });
      await waitFor(() => lambda.stats.get('extstuck')?.timeouts === 1, 'the environment reset');
      expect(logs.some((line) => /^\[extstuckFunction\] .* Task timed out after 1\.00 seconds \(Invoke: extension test-ext did not ask/.test(line))).toBe(true);
      await lambda.invoke('extstuck', {});
      expect(lambda.stats.get('extstuck')).toMatchObject({ coldStarts: 2 });
    });
  });

  it('keeps the functions\' log lines, each named by its function', async () => {
    await lambda.invoke('logs', {});
    await new Promise((r) => setTimeout(r, 50));
    expect(logs).toEqual(expect.arrayContaining(['[logsFunction] init line', '[logsFunction] {"level":"INFO","message":"hello"}']));
  });
});
