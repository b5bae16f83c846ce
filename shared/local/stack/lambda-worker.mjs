// One Lambda execution environment of the synthesized stack run locally (shared/local/stack/functions.ts):
// a worker thread with the function's own environment (its template Environment, Lambda's reserved
// variables and its role's credentials) that imports the bundle as the nodejs22.x runtime does
// (`Handler` "index.handler": index.mjs, export handler), then runs one invocation at a time.
// Plain JavaScript on purpose: a worker thread gets no TypeScript loader, in jest or under tsx.
import { parentPort, workerData } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const { codeDir, handler: handlerSetting, functionName, functionArn, memoryMb, logGroupName } = workerData;
const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');

// The nodejs runtime's global for response streaming: streamifyResponse marks the handler, and
// HttpResponseStream.from sends the status and headers before the body.
globalThis.awslambda = {
  streamifyResponse(fn) {
    fn[STREAMING] = 'response';
    return fn;
  },
  HttpResponseStream: {
    from(stream, prelude) {
      stream.prelude(prelude);
      return stream;
    },
  },
};

function errorOf(err) {
  const e = err instanceof Error ? err : new Error(String(err));
  return { errorType: e.name || 'Error', errorMessage: e.message, trace: (e.stack || '').split('\n') };
}

async function loadHandler() {
  const dot = handlerSetting.lastIndexOf('.');
  if (dot <= 0) throw Object.assign(new Error(`Bad handler ${handlerSetting}: expected FILE.EXPORT`), { name: 'Runtime.MalformedHandlerName' });
  const base = handlerSetting.slice(0, dot);
  const exportName = handlerSetting.slice(dot + 1);
  const file = ['.mjs', '.js', '.cjs'].map((ext) => join(codeDir, base + ext)).find((f) => existsSync(f));
  if (!file) throw Object.assign(new Error(`Cannot find module '${base}'`), { name: 'Runtime.ImportModuleError' });
  let mod;
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (err) {
    throw Object.assign(new Error(`${err && err.name ? err.name : 'Error'}: ${err && err.message ? err.message : err}`), { name: 'Runtime.ImportModuleError', stack: err && err.stack });
  }
  const fn = mod[exportName] ?? mod.default?.[exportName];
  if (typeof fn !== 'function') throw Object.assign(new Error(`${base}.${exportName} is undefined or not exported`), { name: 'Runtime.HandlerNotFound' });
  return fn;
}

const ready = loadHandler();
ready.then(
  () => parentPort.postMessage({ type: 'ready' }),
  (err) => parentPort.postMessage({ type: 'init-error', error: errorOf(err) }),
);

parentPort.on('message', async (message) => {
  if (message.type !== 'invoke') return;
  const { id, event, requestId, deadline } = message;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: functionArn,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: requestId,
    logGroupName,
    logStreamName: `local/[$LATEST]${requestId.replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
  try {
    const fn = await ready;
    if (fn[STREAMING] === 'response') {
      let ended = false;
      const stream = {
        prelude(prelude) {
          parentPort.postMessage({ type: 'prelude', id, prelude });
        },
        write(chunk) {
          const data = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
          parentPort.postMessage({ type: 'chunk', id, data });
          return true;
        },
        end(chunk) {
          if (ended) return;
          if (chunk !== undefined) this.write(chunk);
          ended = true;
          // The response is complete for the client now; the invocation lasts until the handler returns.
          parentPort.postMessage({ type: 'end', id });
        },
        on() {
          return this;
        },
        once() {
          return this;
        },
      };
      await fn(event, stream, context);
      if (!ended) stream.end();
      parentPort.postMessage({ type: 'result', id, result: null, streamed: true });
    } else {
      const result = await fn(event, context);
      parentPort.postMessage({ type: 'result', id, result: result === undefined ? null : result });
    }
  } catch (err) {
    parentPort.postMessage({ type: 'error', id, error: errorOf(err) });
  }
});
