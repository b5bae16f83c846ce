/**
 * The wait for DynamoDB Local (shared/local/dynamo.ts): as long as Java lives, up to the bound
 * DYNAMODB_START_TIMEOUT_SECONDS sets, whatever the speed of its first answers. A stand-in
 * speaks DynamoDB's JSON protocol on a local port; a sleeping Node process plays the Java process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dynamoStartTimeoutMs, waitUntilReady } from '../../../shared/local/dynamo';

/** A DynamoDB stand-in whose every answer to ListTables comes after `delayMs` (never, for `null`). */
async function dynamoStandIn(delayMs: number | null): Promise<{ endpoint: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests += 1;
    req.resume();
    if (delayMs === null) return;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end('{"TableNames":[]}');
    }, delayMs);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

function sleepingProcess(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
}

describe('waiting for DynamoDB Local', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  const java = () => {
    const child = sleepingProcess();
    children.push(child);
    return child;
  };

  it('waits for first answers slower than a second (a loaded machine), instead of cutting each attempt', async () => {
    // Prepare
    const standIn = await dynamoStandIn(1_500);
    try {
      // Act
      await waitUntilReady({ endpoint: standIn.endpoint, child: java(), output: () => '', timeoutMs: 20_000 });
      // Assess: the first attempt was waited for, not aborted and repeated.
      expect(standIn.requests()).toBe(1);
    } finally {
      await standIn.close();
    }
  }, 30_000);

  it('gives up at the bound with a message that names DYNAMODB_START_TIMEOUT_SECONDS', async () => {
    // Prepare
    const standIn = await dynamoStandIn(null);
    try {
      // Act
      const wait = waitUntilReady({ endpoint: standIn.endpoint, child: java(), output: () => 'Initializing DynamoDB Local', timeoutMs: 1_000 });
      // Assess
      await expect(wait).rejects.toThrow(/within 1 s \(the limit set by DYNAMODB_START_TIMEOUT_SECONDS, default 120\)/);
      await expect(wait).rejects.toThrow(/DYNAMODB_START_TIMEOUT_SECONDS=300 npm start/);
      await expect(wait).rejects.toThrow(/Initializing DynamoDB Local/);
    } finally {
      await standIn.close();
    }
  }, 30_000);

  it('stops waiting at once when Java exits', async () => {
    // Prepare: nothing listens, and the process ends by itself.
    const child = spawn(process.execPath, ['-e', 'process.exit(3)'], { stdio: 'ignore' });
    children.push(child);
    await new Promise((r) => child.once('exit', r));
    // Act
    const wait = waitUntilReady({ endpoint: 'http://127.0.0.1:9', child, output: () => 'Error: could not bind', timeoutMs: 60_000 });
    // Assess
    await expect(wait).rejects.toThrow(/exited during start-up \(3\):\nError: could not bind/);
  });

  it('reads the bound from DYNAMODB_START_TIMEOUT_SECONDS (default 120 s) and refuses a value that is not a positive number', () => {
    expect(dynamoStartTimeoutMs({})).toBe(120_000);
    expect(dynamoStartTimeoutMs({ DYNAMODB_START_TIMEOUT_SECONDS: '300' })).toBe(300_000);
    expect(() => dynamoStartTimeoutMs({ DYNAMODB_START_TIMEOUT_SECONDS: 'soon' })).toThrow(/DYNAMODB_START_TIMEOUT_SECONDS must be a positive number of seconds, got "soon"/);
    expect(() => dynamoStartTimeoutMs({ DYNAMODB_START_TIMEOUT_SECONDS: '0' })).toThrow(/DYNAMODB_START_TIMEOUT_SECONDS/);
  });
});
