import * as z from 'zod/mini';
import type { Operation } from './operation';

type Json = Record<string, unknown>;

function schemaOf(schema: z.ZodMiniType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out.$schema;
  return out;
}

const errorEnvelope = {
  type: 'object',
  required: ['success', 'message', 'error'],
  properties: {
    success: { const: false },
    message: { type: 'string' },
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: {
          type: 'string',
          enum: ['VALIDATION_ERROR', 'UNAUTHORIZED', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNPROCESSABLE', 'RATE_LIMITED', 'INTERNAL', 'UNAVAILABLE'],
        },
        message: { type: 'string' },
        details: {
          type: 'object',
          properties: {
            fields: {
              type: 'array',
              items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' }, in: { type: 'string' } } },
            },
          },
        },
      },
    },
  },
};

const meta = {
  type: 'object',
  required: ['total', 'limit', 'offset', 'next_cursor'],
  properties: {
    total: { type: 'integer' },
    limit: { type: 'integer' },
    offset: { type: 'integer' },
    next_cursor: { type: ['string', 'null'] },
  },
};

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } });

function parameters(op: Operation): Json[] {
  const params: Json[] = [];
  for (const [location, schema] of [['path', op.params], ['query', op.query]] as const) {
    if (!schema) continue;
    const json = schemaOf(schema, 'input');
    const required = new Set((json.required as string[]) ?? []);
    for (const [name, s] of Object.entries((json.properties as Record<string, Json>) ?? {})) {
      params.push({ name, in: location, required: location === 'path' || required.has(name), schema: s });
    }
  }
  return params;
}

/** The OpenAPI 3.1 document, generated from the route registry. */
export function buildOpenApi(operations: Operation[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const op of operations) {
    const data = op.response ? schemaOf(op.response, 'output') : undefined;
    const success = op.rawResponse
      ? { type: 'object' }
      : {
          type: 'object',
          required: ['success', 'message'],
          properties: {
            success: { const: true },
            message: { type: 'string' },
            ...(data ? { data: op.list ? { type: 'array', items: data } : data } : {}),
            ...(op.list ? { meta } : {}),
          },
        };
    const responses: Json = {
      200: { description: 'Success', content: { [op.rawContentType ?? 'application/json']: { schema: op.rawContentType ? { type: 'string' } : success } } },
      400: errorResponse('Invalid parameters, body or headers; `error.details.fields` names each one'),
      404: errorResponse('Not found (also for another organization\'s ids)'),
      500: errorResponse('Internal error; names the request id'),
    };
    if (op.auth) {
      responses[401] = errorResponse('Missing, invalid or revoked API key');
      responses[429] = errorResponse('Rate limit exceeded; see Retry-After');
    }
    if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(op.method)) {
      responses[409] = errorResponse('Conflict with the current state (or an Idempotency-Key reused with another body)');
      responses[422] = errorResponse('Well formed but cannot be carried out');
    }
    if (op.body) responses[413] = errorResponse('Body too large');
    const parametersList = parameters(op);
    if (op.auth && op.method === 'POST') {
      parametersList.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 }, description: 'Replays the first answer for 24 h; 409 when reused with a different body' });
    }
    (paths[op.path] ??= {})[op.method.toLowerCase()] = {
      operationId: op.operationId,
      summary: op.summary,
      tags: [op.tag],
      ...(op.auth ? {} : { security: [] }),
      ...(parametersList.length ? { parameters: parametersList } : {}),
      ...(op.body ? { requestBody: { required: true, content: { [op.bodyFormat === 'form' ? 'application/x-www-form-urlencoded' : 'application/json']: { schema: schemaOf(op.body, 'input') } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Voice AI Agent Platform API',
      version,
      description:
        'REST/JSON API for voice AI agents. Every response is a JSON envelope; every path answers with and without a trailing slash; POST accepts Idempotency-Key; responses carry X-Request-Id and X-RateLimit-* headers.',
    },
    servers: [{ url: '/' }],
    security: [{ ApiKey: [] }],
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' } },
      schemas: { ErrorEnvelope: errorEnvelope },
    },
    paths,
  };
}
