import * as z from 'zod/mini';
import type { Operation } from './operation';
import { namedSchema, schemaNames } from '../domain/common/named';
import { schemaExamples } from './openapi-examples';
import { DEFAULT_MESSAGES } from './middleware/success-envelope';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

const COMPONENTS = '#/components/schemas/';
const ref = (name: string) => ({ $ref: `${COMPONENTS}${name}` });

/** What each tag groups; a tag without a line here stops the build. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  Health: 'Liveness, readiness and this document. No API key.',
  'API keys': 'Issue, list and revoke the keys that authenticate every other call.',
  Agents: 'Voice AI agents: model, voice, call behaviour, tools and knowledge base.',
  'Agent versions and tests': 'Publishing an agent as immutable versions (optionally gated by its tests), and tests: simulated users, tool mocks, criteria and runs.',
  Tools: 'Functions the model may call, and webhooks the platform calls for it.',
  'Widget settings': 'How the embeddable web widget looks and which origins may load it.',
  Widget: 'What the embeddable widget itself reads (public, CORS-aware).',
  Contacts: 'People the agents talk to, with notes, timeline, call history and counters.',
  Appointments: 'Availability and bookings on the built-in calendar or through Cal.com.',
  'Scheduling integration': 'Connecting Cal.com, and the webhook Cal.com calls back.',
  'Knowledge base (RAG)': 'Knowledge bases, document ingestion (text, URLs, uploads) and passage search.',
  'Phone numbers': 'Numbers bought from the carrier or imported from your own trunk.',
  Billing: 'The ledger of charges.',
  Chats: 'Text conversations with an agent: its prompt, knowledge base and tools, one turn at a time.',
  'OpenAI-compatible': 'An agent as an OpenAI Chat Completions model: point any OpenAI SDK at {base}/api/v1/openai/v1 with an API key. Errors here are OpenAI-shaped.',
  Calls: 'Outbound call sessions: placing, status, transcript, recording link and post-call analysis.',
  Concurrency: 'How many calls the organization runs at once: its limit (up to the operator\'s ceiling), its live calls by kind and its calls waiting for a slot.',
  Telephony: 'Callbacks the carrier (Twilio) makes, verified with X-Twilio-Signature. No API key.',
  'Do-not-call list': 'Numbers no campaign may dial, kept per organization in E.164.',
  Campaigns: 'Outbound calling campaigns: contacts, schedule windows, retries, start, pause, cancel and a dry-run preview.',
  Webhooks: 'Endpoints that receive signed events (Standard Webhooks), their delivery attempts, tests and secret rotation.',
  Events: 'What happened in the organization (calls, campaigns, appointments), kept 30 days.',
  Analytics: 'Conversations counted per UTC day or week: ends by reason, successes, minutes, tokens, cost and typed outcomes per value, from counters kept with each end and analysis.',
};

// ---- JSON Schema from zod, with named schemas as components

function rawSchema(schema: z.ZodMiniType, io: Io): Json {
  const out = z.toJSONSchema(schema, { io, metadata: schemaNames, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out.$schema;
  return out;
}

function mapRefs(node: unknown, rename: (id: string) => string): unknown {
  if (Array.isArray(node)) return node.map((n) => mapRefs(n, rename));
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) =>
      k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')
        ? [k, `${COMPONENTS}${rename(decodeURIComponent(v.slice('#/$defs/'.length)))}`]
        : [k, mapRefs(v, rename)],
    ),
  );
}

/**
 * Converts zod schemas to JSON Schema, moving every named schema (`named()`) into
 * `components.schemas` and pointing at it with `$ref`. A schema used both as input and as
 * output whose two forms differ (defaults, transforms) gets a second component, `<name>Input`.
 */
class SchemaSet {
  readonly components: Record<string, Json> = {};
  /** Component name → the schema name its example is filed under. */
  readonly exampleKey = new Map<string, string>();
  private readonly inputNames = new Map<string, string>();

  constructor(usages: Array<[z.ZodMiniType, Io]>) {
    const used: Record<Io, Set<string>> = { input: new Set(), output: new Set() };
    for (const [schema, io] of usages) for (const id of Object.keys((rawSchema(schema, io).$defs as Json) ?? {})) used[io].add(id);
    for (const id of used.input) {
      const schema = namedSchema(id);
      if (!used.output.has(id) || !schema) continue;
      if (JSON.stringify(rawSchema(schema, 'input')) !== JSON.stringify(rawSchema(schema, 'output'))) this.inputNames.set(id, `${id}Input`);
    }
  }

  /** The JSON Schema of `schema`, its named parts registered as components. */
  convert(schema: z.ZodMiniType, io: Io): Json {
    const json = rawSchema(schema, io);
    const defs = (json.$defs as Record<string, Json>) ?? {};
    delete json.$defs;
    const rename = (id: string) => (io === 'input' ? (this.inputNames.get(id) ?? id) : id);
    for (const [id, def] of Object.entries(defs)) {
      const name = rename(id);
      const body = mapRefs(def, rename) as Json;
      const existing = this.components[name];
      if (existing && JSON.stringify(existing) !== JSON.stringify(body)) throw new Error(`Schema ${name} converts two ways; name the variants apart`);
      this.components[name] = body;
      this.exampleKey.set(name, id);
    }
    return mapRefs(json, rename) as Json;
  }
}

/** The component a converted schema stands for (`$ref`), or of its items (an array of one). */
function componentOf(json: Json): { name: string; array: boolean } | undefined {
  const direct = typeof json.$ref === 'string' ? json.$ref : undefined;
  const items = json.type === 'array' && typeof (json.items as Json)?.$ref === 'string' ? ((json.items as Json).$ref as string) : undefined;
  const target = direct ?? items;
  return target?.startsWith(COMPONENTS) ? { name: target.slice(COMPONENTS.length), array: !direct } : undefined;
}

// ---- Shared envelope, headers and error responses

const ERROR_CODES = ['VALIDATION_ERROR', 'UNAUTHORIZED', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNPROCESSABLE', 'RATE_LIMITED', 'CONCURRENCY_LIMIT', 'INTERNAL', 'BAD_GATEWAY', 'UNAVAILABLE'];

const envelopeSchemas: Record<string, Json> = {
  FieldIssue: {
    type: 'object',
    description: 'One offending field of a request',
    required: ['path', 'message'],
    properties: {
      path: { type: 'string', description: 'Dotted path of the field, such as `schedule.max_concurrent`' },
      message: { type: 'string', description: 'What is wrong with it' },
      in: { type: 'string', enum: ['path', 'query', 'body'], description: 'Where the field was' },
    },
  },
  ErrorEnvelope: {
    type: 'object',
    description: 'Every 4xx and 5xx answer',
    required: ['success', 'message', 'error'],
    properties: {
      success: { type: 'boolean', const: false },
      message: { type: 'string' },
      error: {
        type: 'object',
        required: ['code', 'message', 'details'],
        properties: {
          code: { type: 'string', enum: ERROR_CODES },
          message: { type: 'string' },
          details: {
            type: 'object',
            description: '`fields` on validation errors; otherwise facts about the failure (`allowed`, `retry_after_seconds`, `request_id`, `checks`, …)',
            properties: { fields: { type: 'array', items: ref('FieldIssue') } },
            additionalProperties: true,
          },
        },
      },
    },
  },
  OpenAiError: {
    type: 'object',
    description: 'Every 4xx and 5xx answer of the OpenAI-compatible paths (`/openai/v1/*`), shaped as OpenAI\'s so its SDKs raise their own error classes',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'param', 'code'],
        properties: {
          message: { type: 'string' },
          type: { type: 'string', description: '`invalid_request_error`, `rate_limit_exceeded` or `server_error`' },
          param: { type: ['string', 'null'], description: 'The request field at fault (`model`, `messages.0.content.1.type`, `n`, …)' },
          code: { type: ['string', 'null'], description: '`invalid_api_key`, `model_not_found`, `rate_limit_exceeded`, `model_unavailable`, `model_error`, …' },
        },
      },
    },
  },
  ListMeta: {
    type: 'object',
    description: 'Paging of a list answer',
    required: ['total', 'limit', 'offset', 'next_cursor'],
    properties: {
      total: { type: 'integer', minimum: 0, description: 'Exact number of items in the whole list' },
      limit: { type: 'integer', minimum: 1, maximum: 100 },
      offset: { type: 'integer', minimum: 0 },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page' },
    },
  },
  OpenApiDocument: {
    type: 'object',
    description: 'An OpenAPI 3.1 document (this one)',
    required: ['openapi', 'info', 'paths'],
    properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } },
  },
};

const integerHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });
const headers: Record<string, Json> = {
  XRequestId: { description: 'The request id (yours when you sent a valid `X-Request-Id`)', schema: { type: 'string' } },
  XRateLimitLimit: integerHeader('Requests per minute allowed for this API key'),
  XRateLimitRemaining: integerHeader('Requests left in the current allowance'),
  RetryAfter: integerHeader('Seconds to wait before retrying'),
  Allow: { description: 'The methods this path answers, such as `GET, POST`', schema: { type: 'string' } },
};
const HEADER_NAMES: Record<string, string> = {
  XRequestId: 'X-Request-Id',
  XRateLimitLimit: 'X-RateLimit-Limit',
  XRateLimitRemaining: 'X-RateLimit-Remaining',
  RetryAfter: 'Retry-After',
  Allow: 'Allow',
};
const headerRefs = (...names: string[]) => Object.fromEntries(names.map((n) => [HEADER_NAMES[n], { $ref: `#/components/headers/${n}` }]));

interface ErrorDoc {
  component: string;
  description: string;
  code: string;
  message: string;
  details: Json;
  headers?: string[];
}
const ERRORS: Record<number, ErrorDoc> = {
  400: { component: 'BadRequest', description: 'Invalid path, query, headers or body; `error.details.fields` names each field', code: 'VALIDATION_ERROR', message: 'Validation failed: name is required', details: { fields: [{ path: 'name', message: 'is required', in: 'body' }] } },
  401: { component: 'Unauthorized', description: 'Missing, unknown, revoked or expired API key', code: 'UNAUTHORIZED', message: 'Missing API key: send it in the X-Api-Key header', details: {} },
  404: { component: 'NotFound', description: 'No such resource in your organization (another organization\'s ids answer the same)', code: 'NOT_FOUND', message: 'Agent 01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90 not found', details: { resource: 'Agent', id: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90' } },
  405: { component: 'MethodNotAllowed', description: 'The path exists but not with this method; `Allow` lists the methods it answers', code: 'METHOD_NOT_ALLOWED', message: 'Method PUT is not allowed on /api/v1/agents', details: { allowed: ['GET', 'POST'] }, headers: ['Allow'] },
  409: { component: 'Conflict', description: 'Conflicts with the current state, the resource kept changing, or an `Idempotency-Key` was reused with another body or is still in progress', code: 'CONFLICT', message: 'Idempotency-Key was already used with a different request body', details: { idempotency_key: 'order-1042' } },
  413: { component: 'PayloadTooLarge', description: 'The body exceeds 1 MiB', code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 1048576 bytes', details: { limit_bytes: 1048576 } },
  422: { component: 'Unprocessable', description: 'Well formed, but cannot be carried out', code: 'UNPROCESSABLE', message: 'The slot is already taken for this agent', details: {} },
  429: { component: 'TooManyRequests', description: 'Over the API key\'s rate; retry after `Retry-After` seconds', code: 'RATE_LIMITED', message: 'Rate limit exceeded; retry after 3 s', details: { retry_after_seconds: 3 }, headers: ['RetryAfter', 'XRateLimitLimit', 'XRateLimitRemaining'] },
  500: { component: 'InternalError', description: 'A fault of ours; `error.details.request_id` names the request for support', code: 'INTERNAL', message: 'Internal server error', details: { request_id: '3f6c1d2e-8b7a-4c5d-9e0f-1a2b3c4d5e6f' } },
  502: { component: 'BadGateway', description: 'A provider the request depends on (the conversation model) refused it in a way retrying cannot cure; `error.details` has `reason` and `provider_message`', code: 'BAD_GATEWAY', message: 'The model provider refused the request (unknown_model): The model `gpt-5-typo` does not exist or you do not have access to it.', details: { reason: 'unknown_model', provider_status: 404, provider_message: 'The model `gpt-5-typo` does not exist or you do not have access to it.' } },
  503: { component: 'ServiceUnavailable', description: 'A dependency does not answer; retry later', code: 'UNAVAILABLE', message: 'Not ready: bucket unavailable', details: { checks: { table: 'ok', bucket: 'failed: TimeoutError' } } },
};

function errorResponse(status: number, description?: string): Json {
  const e = ERRORS[status];
  return {
    description: description ?? e.description,
    headers: headerRefs('XRequestId', ...(e.headers ?? [])),
    content: {
      'application/json': {
        schema: ref('ErrorEnvelope'),
        example: { success: false, message: e.message, error: { code: e.code, message: e.message, details: e.details } },
      },
    },
  };
}

/** The OpenAI-compatible paths' errors: OpenAI's error object, no envelope (shared/domain/openai-compat/errors.ts). */
const OPENAI_ERROR_EXAMPLES: Record<number, { message: string; type: string; param: string | null; code: string | null }> = {
  400: { message: 'n: only 1 choice is generated per request', type: 'invalid_request_error', param: 'n', code: null },
  401: { message: 'Invalid API key', type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
  404: { message: 'The model `01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90@7` does not exist or you do not have access to it', type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
  429: { message: 'Rate limit exceeded; retry after 3 s', type: 'rate_limit_exceeded', param: null, code: 'rate_limit_exceeded' },
  502: { message: 'The agent\'s model refused the request (unknown_model)', type: 'server_error', param: null, code: 'model_error' },
  503: { message: 'The agent\'s model did not answer; retry later', type: 'server_error', param: null, code: 'model_unavailable' },
};

function openAiErrorResponse(status: number, description?: string): Json {
  const e = ERRORS[status];
  const example = OPENAI_ERROR_EXAMPLES[status] ?? { message: e.message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: e.code.toLowerCase() };
  const permanent = status < 500 && ![408, 409, 429].includes(status) || status === 502;
  return {
    description: `${description ?? e.description}${permanent ? ' (`x-should-retry: false`: the SDKs do not retry it)' : ''}`,
    headers: headerRefs('XRequestId', ...(e.headers ?? [])),
    content: { 'application/json': { schema: ref('OpenAiError'), example: { error: example } } },
  };
}

// ---- Operations

/** The error statuses an operation answers, each with its description when it says more than the shared one. */
function errorStatuses(op: Operation): Map<number, string | undefined> {
  const out = new Map<number, string | undefined>([[400, undefined], [405, undefined], [500, undefined]]);
  if (op.auth) out.set(401, undefined).set(429, undefined);
  if (op.params) out.set(404, undefined);
  if (op.auth && ['POST', 'PUT', 'PATCH', 'DELETE'].includes(op.method)) out.set(409, undefined);
  if (op.body) out.set(413, undefined);
  // A write can meet DynamoDB's TransactionConflict past its retries, and a queued job SQS unavailable:
  // a 503 with Retry-After; retried with the same Idempotency-Key, the request finishes its work.
  if (op.access?.table === 'RW' || op.access?.queues?.length) out.set(503, undefined);
  for (const [status, text] of Object.entries(op.errors ?? {})) out.set(Number(status), text);
  return new Map([...out].sort(([a], [b]) => a - b));
}

const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  limit: 'Items per page (1–100)',
  offset: 'Items to skip (use `cursor` instead for deep pages)',
  cursor: '`meta.next_cursor` of the previous page of the same list',
};

/**
 * A query parameter given as digits and parsed to a number (limit, offset, minutes) is an
 * integer to the client: its type, bounds and default are the parsed number's.
 */
function queryParameterSchema(input: Json, output: Json | undefined): Json {
  if (input.type !== 'string' || input.pattern !== '^\\d+$' || !output || !['number', 'integer'].includes(output.type as string)) return input;
  const pick = (k: string) => (output[k] !== undefined ? { [k]: output[k] } : {});
  return { type: 'integer', ...pick('minimum'), ...pick('maximum'), ...pick('default') };
}

function parameters(op: Operation, set: SchemaSet): Json[] {
  const params: Json[] = [];
  for (const [location, schema] of [['path', op.params], ['query', op.query]] as const) {
    if (!schema) continue;
    const input = set.convert(schema, 'input');
    const output = set.convert(schema, 'output');
    const required = new Set((input.required as string[]) ?? []);
    for (const [name, s] of Object.entries((input.properties as Record<string, Json>) ?? {})) {
      const typed = location === 'query' ? queryParameterSchema(s, (output.properties as Record<string, Json>)?.[name]) : s;
      const description = PARAMETER_DESCRIPTIONS[name];
      params.push({ name, in: location, required: location === 'path' || required.has(name), ...(description ? { description } : {}), schema: typed });
    }
  }
  for (const h of op.headers ?? []) params.push({ name: h.name, in: 'header', required: h.required, description: h.description, schema: { type: 'string' } });
  if (op.auth && op.method === 'POST') params.push({ $ref: '#/components/parameters/IdempotencyKey' });
  return params;
}

/** The server-sent events a streaming operation (`streams: true`) answers instead (docs/api.md, "Streaming a turn" and "The agent as an OpenAI model"). */
const TURN_EVENTS =
  'With `Accept: text/event-stream`, a 200 answers the turn as server-sent events, each an `event:` name and one JSON `data:` line, written as produced: ' +
  '`message.delta` (`{ message_id, delta }`: a piece of the agent\'s reply), `tool_call` and `tool_result` (the message; not on the widget\'s routes), ' +
  '`message.completed` (the agent\'s message, whole), then `turn.completed` (the plain answer\'s `data`) or, when the turn fails after the stream began, `error` (the error envelope), always last. ' +
  'Refusals before the turn starts are the plain JSON answers below.';
const COMPLETION_EVENTS =
  'With `stream: true`, a 200 answers `text/event-stream`: `data:` lines of `chat.completion.chunk` objects (the role, the text in pieces, tool calls in fragments by `index`, ' +
  'the `finish_reason`, with `stream_options.include_usage` a last chunk with `usage`), ending `data: [DONE]`; a failure after the stream began is a `data: { "error": … }` chunk.';

/** The OpenAI-shaped answers of the OpenAI-compatible paths (no envelope: OpenAI's own objects). */
const OPENAI_ANSWERS: Record<string, Json> = {
  openAiChatCompletions: {
    schema: {
      type: 'object', required: ['id', 'object', 'created', 'model', 'choices'],
      description: 'A `chat.completion` object as OpenAI answers it: `choices[0].message` (`content`, `tool_calls` for the caller to answer), `finish_reason` (`stop` | `tool_calls` | `length`), `usage`.',
      properties: { id: { type: 'string' }, object: { type: 'string', const: 'chat.completion' }, created: { type: 'integer' }, model: { type: 'string' }, choices: { type: 'array', items: { type: 'object' } }, usage: { type: 'object' } },
    },
    example: {
      id: 'chatcmpl-01936f4e', object: 'chat.completion', created: 1767225600, model: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90',
      choices: [{ index: 0, message: { role: 'assistant', content: 'We open at 9 am on Saturdays.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 412, completion_tokens: 11, total_tokens: 423 },
    },
  },
  openAiListModels: {
    schema: {
      type: 'object', required: ['object', 'data'], description: 'The organization\'s active agents as OpenAI models.',
      properties: { object: { type: 'string', const: 'list' }, data: { type: 'array', items: { type: 'object', required: ['id', 'object', 'created', 'owned_by'], properties: { id: { type: 'string' }, object: { type: 'string', const: 'model' }, created: { type: 'integer' }, owned_by: { type: 'string' } } } } },
    },
    example: { object: 'list', data: [{ id: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90', object: 'model', created: 1767225600, owned_by: 'organization' }] },
  },
  openAiRetrieveModel: {
    schema: {
      type: 'object', required: ['id', 'object', 'created', 'owned_by'], description: 'One model: an active agent (`<agent id>`), a published version of it (`<agent id>@<version>`) or its draft (`<agent id>@draft`).',
      properties: { id: { type: 'string' }, object: { type: 'string', const: 'model' }, created: { type: 'integer' }, owned_by: { type: 'string' } },
    },
    example: { id: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90@3', object: 'model', created: 1767225600, owned_by: 'organization' },
  },
};

/** Whether the operation's 200 may be server-sent events (a preflight served by the streaming API too never is). */
const answersEvents = (op: Operation): boolean => !!op.streams && op.method !== 'OPTIONS';

function eventStreamContent(op: Operation): Json {
  if (op.openAiCompatible) {
    return {
      'text/event-stream': {
        schema: { type: 'string', description: COMPLETION_EVENTS },
        example:
          'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"agent_01","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n' +
          'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"agent_01","choices":[{"index":0,"delta":{"content":"We open "},"finish_reason":null}]}\n\n' +
          'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"agent_01","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' +
          'data: [DONE]\n\n',
      },
    };
  }
  return {
    'text/event-stream': {
      schema: { type: 'string', description: TURN_EVENTS },
      example:
        'event: message.delta\ndata: {"message_id":"msg_01","delta":"We open "}\n\n' +
        'event: message.delta\ndata: {"message_id":"msg_01","delta":"at 9 am."}\n\n' +
        'event: message.completed\ndata: {"id":"msg_01","role":"agent","content":"We open at 9 am.","created_at":"2026-01-01T09:00:00.000Z"}\n\n' +
        'event: turn.completed\ndata: {"chat":{"id":"chat_01","status":"active"},"messages":[]}\n\n',
    },
  };
}

function description(op: Operation): string {
  const paged = op.list && op.query && 'cursor' in ((op.query as unknown as { shape?: object }).shape ?? {});
  const notes = [
    op.auth ? 'Requires an API key (`X-Api-Key`).' : 'Public: no API key.',
    op.auth && op.method === 'POST' ? 'Accepts `Idempotency-Key`: a repeat within 24 hours replays the first answer.' : '',
    paged ? 'Paged with `limit` and `offset` or `cursor`; `meta.total` is exact.' : '',
    answersEvents(op) ? (op.openAiCompatible ? COMPLETION_EVENTS : TURN_EVENTS) : '',
  ].filter(Boolean);
  return `${op.summary}${/[.)]$/.test(op.summary) ? '' : '.'}\n\n${notes.join(' ')}`;
}

/** The OpenAPI 3.1 document, generated from the route registry. */
export function buildOpenApi(operations: Operation[], version: string): Json {
  const problems: string[] = [];
  const usages: Array<[z.ZodMiniType, Io]> = operations.flatMap((op) => [
    ...(op.body ? [[op.body, 'input'] as [z.ZodMiniType, Io]] : []),
    ...(op.response ? [[op.response, 'output'] as [z.ZodMiniType, Io]] : []),
  ]);
  const set = new SchemaSet(usages);
  const exampleOf = (json: Json, what: string, op: Operation): unknown => {
    const component = componentOf(json);
    if (!component) {
      problems.push(`${op.operationId}: its ${what} schema has no name (wrap it in named() where it is declared)`);
      return undefined;
    }
    const example = schemaExamples[set.exampleKey.get(component.name) ?? component.name];
    if (example === undefined) problems.push(`${op.operationId}: schema ${component.name} has no example in shared/http/openapi-examples.ts`);
    return component.array ? [example] : example;
  };

  const paths: Record<string, Json> = {};
  const tags = new Set<string>();
  for (const op of operations) {
    tags.add(op.tag);
    let success: Json;
    if (op.rawResponse) {
      success = { schema: ref('OpenApiDocument'), example: { openapi: '3.1.0', info: { title: 'Voice AI Agent Platform API', version }, paths: {} } };
    } else {
      const data = op.response ? set.convert(op.response, 'output') : undefined;
      const dataSchema = data && op.list ? { type: 'array', items: data } : data;
      const dataExample = data ? exampleOf(data, 'response', op) : undefined;
      success = {
        schema: {
          type: 'object',
          required: ['success', 'message', ...(data ? ['data'] : []), ...(op.list ? ['meta'] : [])],
          properties: {
            success: { type: 'boolean', const: true },
            message: { type: 'string' },
            ...(dataSchema ? { data: dataSchema } : {}),
            ...(op.list ? { meta: ref('ListMeta') } : {}),
          },
        },
        example: {
          success: true,
          message: op.successMessage ?? DEFAULT_MESSAGES[op.method],
          ...(data ? { data: op.list ? [dataExample] : dataExample } : {}),
          ...(op.list ? { meta: { total: 1, limit: 20, offset: 0, next_cursor: null } } : {}),
        },
      };
    }
    const responses: Json = {
      200: {
        description: answersEvents(op) ? (op.openAiCompatible ? 'Success (with `stream: true`, server-sent events)' : 'Success (with `Accept: text/event-stream`, server-sent events)') : 'Success',
        headers: headerRefs('XRequestId', ...(op.auth ? ['XRateLimitLimit', 'XRateLimitRemaining'] : [])),
        content: {
          ...(op.openAiCompatible && OPENAI_ANSWERS[op.operationId] ? { 'application/json': OPENAI_ANSWERS[op.operationId] } : op.rawContentType ? { [op.rawContentType]: { schema: { type: 'string' } } } : { 'application/json': success }),
          ...(answersEvents(op) ? eventStreamContent(op) : {}),
        },
      },
    };
    // An accepted request (a call that waits for a slot): the same envelope, its own status.
    if (op.accepted) {
      const example = success.example as Json;
      responses[202] = { ...(responses[200] as Json), description: op.accepted, content: { 'application/json': { ...success, example: { ...example, message: op.acceptedMessage ?? example.message } } } };
    }
    // A conditional GET answers 304 with no body when the client's copy is current.
    if (op.headers?.some((h) => h.name.toLowerCase() === 'if-none-match')) {
      responses[304] = { description: 'Not modified: the `ETag` sent in `If-None-Match` is current; no body', headers: headerRefs('XRequestId') };
    }
    for (const [status, text] of errorStatuses(op)) {
      if (op.openAiCompatible) responses[status] = openAiErrorResponse(status, text);
      else responses[status] = text === undefined ? { $ref: `#/components/responses/${ERRORS[status].component}` } : errorResponse(status, text);
    }
    let requestBody: Json | undefined;
    if (op.body) {
      const body = set.convert(op.body, 'input');
      requestBody = { required: !op.bodyOptional, content: { [op.bodyFormat === 'form' ? 'application/x-www-form-urlencoded' : 'application/json']: { schema: body, example: exampleOf(body, 'body', op) } } };
    }
    const parametersList = parameters(op, set);
    (paths[op.path] ??= {})[op.method.toLowerCase()] = {
      operationId: op.operationId,
      summary: op.summary,
      description: description(op),
      tags: [op.tag],
      security: op.auth ? [{ ApiKey: [] }] : [],
      ...(parametersList.length ? { parameters: parametersList } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
  }
  for (const tag of tags) if (!TAG_DESCRIPTIONS[tag]) problems.push(`tag "${tag}" has no description in shared/http/openapi.ts`);
  if (problems.length) throw new Error(`The OpenAPI document cannot be built:\n  - ${problems.join('\n  - ')}`);

  const document = JSON.stringify(paths);
  const usedResponses = Object.values(ERRORS).filter((e) => document.includes(`#/components/responses/${e.component}"`));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Voice AI Agent Platform API',
      version,
      description:
        'REST/JSON API for voice AI agents. Every response is a JSON envelope; every path answers with and without a trailing slash; POST accepts Idempotency-Key; responses carry X-Request-Id, and authenticated ones X-RateLimit-* headers. Conventions and decisions: docs/api.md.',
      contact: { name: 'Voice AI Agent Platform API maintainers' },
      license: { name: 'Apache 2.0', identifier: 'Apache-2.0' },
    },
    // Relative, so the document names whichever host serves it: the API Gateway stage URL, or
    // http://localhost:3000 under `npm start` (Redocly refuses localhost as a server).
    servers: [{ url: '/', description: 'The host serving this document' }],
    security: [{ ApiKey: [] }],
    tags: [...tags].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] })),
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'An API key of your organization (`vap_…`); it decides the organization of every call' },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Replays the first answer for 24 hours; 409 when reused with a different body or while the first is still running',
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
        },
      },
      headers,
      responses: Object.fromEntries(usedResponses.map((e) => [e.component, errorResponse(Number(Object.keys(ERRORS).find((s) => ERRORS[Number(s)] === e)))])),
      schemas: { ...envelopeSchemas, ...Object.fromEntries(Object.entries(set.components).sort(([a], [b]) => a.localeCompare(b))) },
    },
    paths,
  };
}
