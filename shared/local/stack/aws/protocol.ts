/**
 * What every service of the local AWS endpoint shares: the request it is handed (caller, body,
 * authorization), the answers in AWS's wire forms (JSON 1.0/1.1 and REST-JSON errors, S3's XML
 * errors), IAM's access-denied message, and a byte-exact proxy to DynamoDB Local and the S3
 * emulator. It mirrors AWS's error shapes; it computes no signatures (see aws-endpoint.ts).
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Decision, RequestContext } from '../iam';

/** One refused call, as the runner reports it. */
export interface AwsDenial {
  roleName: string;
  action: string;
  resource: string;
  service: string;
  decision?: Exclude<Decision, 'Allowed'>;
  /** IAM's message, as the caller received it. */
  message?: string;
}

/** A signed request from a known principal, handed to a service. */
export interface AwsCall {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** The signing name in the credential scope (`dynamodb`, `s3`, `execute-api`, …). */
  service: string;
  roleName: string;
  /** The caller as IAM names it: arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION. */
  callerArn: string;
  region: string;
  accountId: string;
  requestId: string;
  /** The whole body (read once, then cached); S3 streams bodies instead. */
  body(): Promise<Buffer>;
  /** Evaluates the caller's statements; a denial is recorded, reported and returned for the service to answer. */
  authorize(action: string, resource: string, context?: RequestContext): AwsDenial | undefined;
  log(line: string): void;
}

/** IAM's access-denied message; S3 quotes the resource (`on resource: "arn:aws:s3:::b/k"`). */
export function deniedMessage(callerArn: string, denial: AwsDenial, options: { quoteResource?: boolean; action?: string } = {}): string {
  const action = options.action ?? denial.action;
  const resource = options.quoteResource ? `"${denial.resource}"` : denial.resource;
  const why = denial.decision === 'ExplicitDeny' ? 'with an explicit deny in an identity-based policy' : `because no identity-based policy allows the ${action} action`;
  return `User: ${callerArn} is not authorized to perform: ${action} on resource: ${resource} ${why}`;
}

/** Reads a request (or response) stream to its end. */
export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

export interface JsonAnswer {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A JSON answer with the request id headers every AWS JSON service sends. */
export function sendJson(call: Pick<AwsCall, 'res' | 'requestId'>, { status = 200, body, headers = {} }: JsonAnswer, contentType = 'application/x-amz-json-1.0'): void {
  const payload = Buffer.from(JSON.stringify(body ?? {}));
  call.res.writeHead(status, {
    'content-type': contentType,
    'content-length': String(payload.length),
    'x-amzn-requestid': call.requestId,
    ...headers,
  });
  call.res.end(payload);
}

export interface JsonError {
  status: number;
  /** The error's shape name (`AccessDeniedException`); prefixed by `namespace` in `__type` when given. */
  code: string;
  message: string;
  namespace?: string;
  /** `message` (most services) or `Message` (DynamoDB's AccessDenied, API Gateway's). */
  messageField?: 'message' | 'Message';
  /** awsQueryCompatible services (SQS): the query-protocol code and fault, sent as x-amzn-query-error. */
  queryError?: [code: string, fault: 'Sender' | 'Receiver'];
}

/** An error in the JSON 1.0/1.1 protocols (`__type` names it). */
export function sendJsonError(call: Pick<AwsCall, 'res' | 'requestId'>, error: JsonError, contentType?: string): void {
  const headers: Record<string, string> = {};
  if (error.queryError) headers['x-amzn-query-error'] = error.queryError.join(';');
  const type = error.namespace ? `${error.namespace}#${error.code}` : error.code;
  sendJson(call, { status: error.status, body: { __type: type, [error.messageField ?? 'message']: error.message }, headers }, contentType);
}

/** An error in the REST-JSON protocol (API Gateway, X-Ray): named by the x-amzn-ErrorType header. */
export function sendRestJsonError(call: Pick<AwsCall, 'res' | 'requestId'>, status: number, code: string, message: string, messageField: 'message' | 'Message' = 'message'): void {
  sendJson(call, { status, body: { [messageField]: message }, headers: { 'x-amzn-errortype': code } }, 'application/json');
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
/** Escapes text for an XML element or attribute. */
export const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);

/** S3's XML error (`<Error><Code>…`); a HEAD answer carries no body, as S3's does not. */
export function sendS3Error(call: Pick<AwsCall, 'res' | 'requestId' | 'req'>, status: number, code: string, message: string, extra: Record<string, string> = {}): void {
  const fields = Object.entries({ Code: code, Message: message, ...extra, RequestId: call.requestId, HostId: call.requestId })
    .map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`)
    .join('');
  const payload = Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<Error>${fields}</Error>`);
  call.res.writeHead(status, { 'content-type': 'application/xml', 'x-amz-request-id': call.requestId, 'content-length': String(call.req.method === 'HEAD' ? 0 : payload.length) });
  call.res.end(call.req.method === 'HEAD' ? undefined : payload);
}

/** Hop-by-hop headers a proxy must not pass on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host']);

export interface ProxyTarget {
  /** Base URL of the server (http://127.0.0.1:port). */
  endpoint: string;
  method: string;
  /** Path and query to request on it. */
  path: string;
  headers: IncomingHttpHeaders;
  /** A buffered body, or the request stream itself (S3 uploads stream through). */
  body: Buffer | Readable;
}

/** Sends a request to a local server and streams its answer back unchanged (status, headers, bytes). */
export function proxy(res: ServerResponse, target: ProxyTarget): Promise<void> {
  const base = new URL(target.endpoint);
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(target.headers)) if (!HOP_BY_HOP.has(name) && value !== undefined) headers[name] = value;
  if (Buffer.isBuffer(target.body)) {
    headers['content-length'] = String(target.body.length);
  } else if (target.headers['transfer-encoding']) {
    headers['transfer-encoding'] = target.headers['transfer-encoding'];
  }
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: base.hostname, port: base.port, method: target.method, path: target.path, headers }, (answer) => {
      const back: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && (!HOP_BY_HOP.has(name) || name === 'transfer-encoding')) back[name] = value;
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
      answer.on('end', resolve);
      answer.on('error', reject);
    });
    outgoing.on('error', reject);
    if (Buffer.isBuffer(target.body)) outgoing.end(target.body);
    else target.body.pipe(outgoing);
  });
}

/** A request id in AWS's form. */
export const newRequestId = () => randomUUID();

/** A client error a JSON service answers in its own form (`__type`, status, SQS's query code). */
export class AwsServiceError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly options: { status?: number; namespace?: string; queryError?: JsonError['queryError']; messageField?: JsonError['messageField'] } = {},
  ) {
    super(message);
  }
}

export interface JsonRpcSpec {
  /** The X-Amz-Target prefix (`TrentService`, `secretsmanager`, `AmazonSQS`). */
  targetPrefix: string;
  /** The service's name in messages. */
  label: string;
  contentType: 'application/x-amz-json-1.0' | 'application/x-amz-json-1.1';
  operations: Record<string, (call: AwsCall, input: Record<string, unknown>) => unknown>;
  /** Extra error fields for UnknownOperationException (SQS's query code). */
  unknownOperation?: Partial<JsonError>;
}

/** A JSON 1.0/1.1 service: dispatch on X-Amz-Target, answer AwsServiceErrors in the protocol's form. */
export function jsonRpcService(spec: JsonRpcSpec) {
  return async (call: AwsCall): Promise<void> => {
    const target = String(call.req.headers['x-amz-target'] ?? '');
    const name = target.startsWith(`${spec.targetPrefix}.`) ? target.slice(spec.targetPrefix.length + 1) : '';
    const operation = Object.hasOwn(spec.operations, name) ? spec.operations[name] : undefined;
    try {
      if (!operation) {
        const message = `The local AWS endpoint does not serve ${spec.label} operation "${target}".`;
        call.log(`UnknownOperationException: ${message}`);
        throw new AwsServiceError('UnknownOperationException', message, spec.unknownOperation);
      }
      let input: Record<string, unknown>;
      try {
        input = JSON.parse((await call.body()).toString('utf8') || '{}');
      } catch {
        throw new AwsServiceError('SerializationException', 'Start of structure or map found where not expected.');
      }
      sendJson(call, { body: await operation(call, input) }, spec.contentType);
    } catch (err) {
      if (!(err instanceof AwsServiceError)) throw err;
      const { status = 400, ...rest } = err.options;
      sendJsonError(call, { status, code: err.code, message: err.message, ...rest }, spec.contentType);
    }
  };
}
