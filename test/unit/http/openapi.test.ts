import * as z from 'zod/mini';
import { operations } from '../../../shared/http/registry';
import { buildOpenApi } from '../../../shared/http/openapi';
import { schemaExamples } from '../../../shared/http/openapi-examples';
import { named, namedSchema } from '../../../shared/domain/common/named';
import { defineOperation, type Operation } from '../../../shared/http/operation';

type Json = Record<string, any>;
const doc = buildOpenApi(operations, '0.0.0-test') as Json;
const ops = Object.entries(doc.paths as Json).flatMap(([path, methods]) =>
  Object.entries(methods as Json).map(([method, op]) => ({ path, method, op: op as Json })),
);
/** Operations answering JSON (the carrier's TwiML endpoint answers XML). */
const jsonOps = ops.filter(({ op }) => op.responses[200]?.content?.['application/json']);
/** Twilio's callbacks take form bodies; the carrier's TwiML endpoint answers XML, so they are checked apart. */
const twilioOps = ops.filter(({ op }) => op.requestBody?.content?.['application/x-www-form-urlencoded']);
const resolve = (node: Json): Json => {
  if (!node?.$ref) return node;
  const [, , section, name] = (node.$ref as string).split('/');
  return doc.components[section][name];
};
const schemaRef = (name: string) => `#/components/schemas/${name}`;

describe('OpenAPI document: named schemas and examples', () => {
  it('answers every resource with a named component referenced by $ref', () => {
    const byOperation = Object.fromEntries(jsonOps.map(({ op }) => [op.operationId, op.responses[200].content['application/json'].schema.properties?.data]));
    expect(byOperation.createAgent).toEqual({ $ref: schemaRef('Agent') });
    expect(byOperation.listTools).toEqual({ type: 'array', items: { $ref: schemaRef('Tool') } });
    expect(byOperation.listContactActivities).toEqual({ type: 'array', items: { $ref: schemaRef('Activity') } });
    for (const name of ['Agent', 'Tool', 'WidgetSettings', 'ApiKey', 'PhoneNumber', 'AvailableNumber', 'Charge', 'Contact', 'Note', 'Activity', 'Appointment', 'KnowledgeBase', 'Document']) {
      expect(doc.components.schemas[name]).toMatchObject({ type: 'object' });
    }
  });

  it('gives every operation with a body a named request schema and an example', () => {
    const withBody = ops.filter(({ op }) => op.requestBody?.content?.['application/json']);
    expect(twilioOps.map(({ op }) => op.operationId).sort()).toEqual(['getTwilioCallInstructions', 'getTwilioHoldInstructions', 'receiveTwilioInboundCall', 'receiveTwilioRecording', 'receiveTwilioRelayAction', 'receiveTwilioStatus', 'receiveTwilioTransferAnswer', 'receiveTwilioTransferConference', 'receiveTwilioTransferGather', 'receiveTwilioTransferStatus']);
    expect(withBody.length).toBeGreaterThan(20);
    for (const { op } of withBody) {
      const media = op.requestBody.content['application/json'];
      expect({ id: op.operationId, ref: media.schema.$ref?.startsWith('#/components/schemas/') }).toEqual({ id: op.operationId, ref: true });
      expect({ id: op.operationId, example: media.example !== undefined }).toEqual({ id: op.operationId, example: true });
    }
  });

  it('gives every operation a success example whose data is the named schema\'s example', () => {
    for (const { op } of jsonOps) {
      const media = op.responses[200].content['application/json'];
      expect({ id: op.operationId, example: media.example !== undefined }).toEqual({ id: op.operationId, example: true });
    }
    const getAgent = ops.find(({ op }) => op.operationId === 'getAgent')!.op;
    expect(getAgent.responses[200].content['application/json'].example).toEqual({ success: true, message: 'Retrieved successfully', data: schemaExamples.Agent });
  });

  it('has examples that the zod schemas accept', () => {
    const rejected = Object.entries(schemaExamples).flatMap(([name, example]) => {
      const schema = namedSchema(name);
      if (!schema) return [`${name}: no schema has this name`];
      const result = schema.safeParse(example);
      return result.success ? [] : [`${name}: ${result.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`];
    });
    expect(rejected).toEqual([]);
  });

  it('refuses to build when a response schema has no name or a named schema has no example', () => {
    const base = { method: 'GET', tag: 'Agents', summary: 'A test operation', entry: 'x.ts', auth: true, access: {} } as const;
    const unnamed = defineOperation({ ...base, path: '/api/v1/unnamed', operationId: 'unnamedThing', response: z.object({ a: z.string() }) });
    const noExample = defineOperation({ ...base, path: '/api/v1/no-example', operationId: 'noExample', response: named('ThingWithoutExample', () => z.object({ b: z.string() })) });
    expect(() => buildOpenApi([...operations, unnamed as Operation], '0')).toThrow(/unnamedThing: its response schema has no name/);
    expect(() => buildOpenApi([...operations, noExample as Operation], '0')).toThrow(/noExample: schema ThingWithoutExample has no example/);
    expect(() => buildOpenApi([{ ...operations[0], tag: 'Nowhere' }], '0')).toThrow(/tag "Nowhere" has no description/);
  });
});

describe('OpenAPI document: envelopes, paging and responses', () => {
  it('requires data, success and message on success answers that carry data, and meta on lists', () => {
    // The OpenAI-compatible paths answer OpenAI's own objects, not the envelope.
    for (const { op } of jsonOps.filter(({ op }) => !op.operationId.startsWith('getOpenApi') && !op.operationId.startsWith('openAi'))) {
      const schema = op.responses[200].content['application/json'].schema;
      const expected = ['success', 'message', ...(schema.properties.data ? ['data'] : []), ...(schema.properties.meta ? ['meta'] : [])];
      expect({ id: op.operationId, required: schema.required }).toEqual({ id: op.operationId, required: expected });
    }
    const listAgents = ops.find(({ op }) => op.operationId === 'listAgents')!.op;
    expect(listAgents.responses[200].content['application/json'].schema.required).toEqual(['success', 'message', 'data', 'meta']);
    expect(doc.components.schemas.ListMeta.properties.next_cursor.type).toEqual(['string', 'null']);
  });

  it('documents the error envelope with its codes and {path, message} fields', () => {
    const envelope = doc.components.schemas.ErrorEnvelope;
    expect(envelope.required).toEqual(['success', 'message', 'error']);
    expect(envelope.properties.error.properties.code.enum).toEqual(expect.arrayContaining(['VALIDATION_ERROR', 'METHOD_NOT_ALLOWED', 'RATE_LIMITED', 'UNAVAILABLE']));
    expect(envelope.properties.error.properties.details.properties.fields.items).toEqual({ $ref: schemaRef('FieldIssue') });
    expect(doc.components.schemas.FieldIssue.required).toEqual(['path', 'message']);
  });

  it('types limit and offset as bounded integers with defaults, and cursor as a string', () => {
    const listContacts = ops.find(({ op }) => op.operationId === 'listContacts')!.op;
    const param = (name: string) => listContacts.parameters.find((p: Json) => p.name === name).schema;
    expect(param('limit')).toEqual({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    expect(param('offset')).toMatchObject({ type: 'integer', minimum: 0, default: 0 });
    expect(param('cursor')).toMatchObject({ type: 'string' });
  });

  it('documents 405 with Allow on every operation, 400 and 500 everywhere, and 401/429 where a key is needed (429 elsewhere only where the operation limits its public callers)', () => {
    for (const { op } of ops) {
      const statuses = Object.keys(op.responses);
      expect({ id: op.operationId, has: ['400', '405', '500'].every((s) => statuses.includes(s)) }).toEqual({ id: op.operationId, has: true });
      const authenticated = op.security.length > 0;
      const declared = operations.find((o) => o.operationId === op.operationId)?.errors?.[429] !== undefined;
      expect({ id: op.operationId, has: statuses.includes('429') }).toEqual({ id: op.operationId, has: authenticated || declared });
      if (authenticated) expect(statuses).toContain('401');
      if (op.requestBody) expect(statuses).toContain('413');
    }
    expect(Object.keys(resolve(doc.components.responses.MethodNotAllowed).headers)).toContain('Allow');
    expect(Object.keys(doc.components.responses.TooManyRequests.headers)).toEqual(['X-Request-Id', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining']);
  });

  it('documents the readiness 503, and the Cal.com webhook\'s signature header and 401', () => {
    const ready = ops.find(({ op }) => op.operationId === 'getReadiness')!.op;
    expect(ready.responses[503].content['application/json'].schema).toEqual({ $ref: schemaRef('ErrorEnvelope') });
    const webhook = ops.find(({ op }) => op.operationId === 'receiveCalcomWebhook')!.op;
    expect(webhook.security).toEqual([]);
    expect(webhook.responses[401].description).toMatch(/X-Cal-Signature-256/);
    expect(webhook.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'X-Cal-Signature-256', in: 'header', required: true })]));
  });

  it('names the API key scheme on authenticated operations and no scheme on public ones', () => {
    expect(doc.components.securitySchemes.ApiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Api-Key' });
    const publicIds = ops.filter(({ op }) => op.security.length === 0).map(({ op }) => op.operationId).sort();
    expect(publicIds).toEqual(operations.filter((o) => !o.auth).map((o) => o.operationId).sort());
    expect(doc.info.license).toMatchObject({ name: expect.any(String) });
  });
});
