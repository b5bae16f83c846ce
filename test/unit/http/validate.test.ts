import * as z from 'zod/mini';
import { jsonBody } from '../../../shared/http/middleware/json-body';
import { validate } from '../../../shared/http/middleware/validate';
import { stateOf } from '../../../shared/http/context';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('validate', () => {
  const operation = op({
    params: z.strictObject({ id: z.string().check(z.regex(/^\d+$/)) }),
    query: z.strictObject({ q: z.optional(z.string()) }),
    body: z.strictObject({ name: z.string(), schedule: z.optional(z.strictObject({ max_concurrent: z.int().check(z.minimum(1)) })) }),
  });
  const h = stack(operation, (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
  it('names every offending field, unknown ones included', async () => {
    const r = parsed(await h(apiEvent({
      pathParameters: { id: 'abc' }, query: { q: 'x', extra: '1' },
      headers: { 'content-type': 'application/json' }, body: { schedule: { max_concurrent: 0 }, bogus: true },
    }), lambdaContext));
    expect(r.status).toBe(400);
    const paths = r.body.error.details.fields.map((f: any) => `${f.in}:${f.path}`).sort();
    expect(paths).toEqual(['body:bogus', 'body:name', 'body:schedule.max_concurrent', 'path:id', 'query:extra']);
    expect(r.body.error.details.fields.find((f: any) => f.path === 'name').message).toBe('is required');
  });
  it('passes parsed input on', async () => {
    const r = parsed(await h(apiEvent({ pathParameters: { id: '7' }, headers: { 'content-type': 'application/json' }, body: { name: 'n' } }), lambdaContext));
    expect(r.body).toEqual({ params: { id: '7' }, query: {}, body: { name: 'n' } });
  });
  it('requires a declared body, unless the operation marks it optional (then none reads as {})', async () => {
    const options = z.strictObject({ assumed: z.optional(z.int()) });
    const required = stack(op({ body: options }), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
    const optional = stack(op({ body: options, bodyOptional: true }), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
    const none = await required(apiEvent({}), lambdaContext);
    expect(parsed(none).status).toBe(400);
    expect(parsed(none).body.error.details.fields).toEqual([expect.objectContaining({ path: 'body', message: 'is required' })]);
    const r = parsed(await optional(apiEvent({}), lambdaContext));
    expect(r.status).toBe(200);
    expect(r.body.body).toEqual({});
  });
});

/**
 * Issue 36.4: every message names what is wrong and what is expected — never only "Invalid input",
 * and never a field the value did not get wrong (the real request schemas).
 */
describe('validation messages of the real request schemas', () => {
  // Imported here so the generic tests above do not depend on the domain.
  const { StartChatBody } = require('../../../shared/domain/chats/schemas') as typeof import('../../../shared/domain/chats/schemas');
  const { CreateAgentTestBody, StartTestRunBody } = require('../../../shared/domain/agent-tests/schemas') as typeof import('../../../shared/domain/agent-tests/schemas');
  const { CreateAgentBody } = require('../../../shared/domain/agents/schemas') as typeof import('../../../shared/domain/agents/schemas');
  const { fieldIssues } = require('../../../shared/http/middleware/validate') as typeof import('../../../shared/http/middleware/validate');
  const fields = (schema: z.ZodMiniType, value: unknown) => {
    const r = schema.safeParse(value);
    if (r.success) throw new Error('accepted');
    return fieldIssues(r.error, 'body').map((f) => [f.path, f.message]);
  };
  const criteria = [{ type: 'reply_contains', text: 'hours' }];
  const agentId = '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90';

  it('says what a version is, on chats and test runs ("latest")', () => {
    expect(fields(StartChatBody, { agent_id: agentId, agent_version: 'latest' })).toEqual([['agent_version', 'must be a number or "draft"']]);
    expect(fields(StartTestRunBody, { agent_version: 'latest' })).toEqual([['agent_version', 'must be a number or "draft"']]);
  });

  it('names the fields each kind of test user needs when given none', () => {
    expect(fields(CreateAgentTestBody, { name: 't', user: {}, criteria })).toEqual([['user', 'needs `turns`, or `persona` and `goal`']]);
  });

  it('names the wrong field of the user it understood, not a key another kind of user lacks', () => {
    expect(fields(CreateAgentTestBody, { name: 't', user: { turns: 'hello' }, criteria })).toEqual([['user.turns', 'must be an array (got a string)']]);
    expect(fields(CreateAgentTestBody, { name: 't', user: { persona: 'A busy parent' }, criteria })).toEqual([['user.goal', 'is required']]);
  });

  it('says which replies a criterion may read ("first")', () => {
    expect(fields(CreateAgentTestBody, { name: 't', user: { turns: ['hi'] }, criteria: [{ type: 'reply_contains', text: 'x', turn: 'first' }] }))
      .toEqual([['criteria.0.turn', 'must be a number, "any" or "last"']]);
  });

  it('tells a repeated analysis_fields name together with the other mistakes, not after they are fixed', () => {
    const field = { name: 'outcome', type: 'string', description: 'What happened' };
    expect(fields(CreateAgentBody, { name: 'a', analysis_fields: [field, field, { name: 'score', type: 'percent', description: 'x' }] })).toEqual([
      ['analysis_fields.2.type', 'must be "string", "number", "integer", "boolean" or "enum"'],
      ['analysis_fields.1.name', '"outcome" is the name of an earlier field'],
    ]);
  });
});

/**
 * Issue 42.7: one style everywhere — what the field must be or have — never zod's own phrasing
 * ("Too small: expected number to be >=0", "Invalid option: expected one of …").
 */
describe('validation messages in one style', () => {
  const { fieldIssues } = require('../../../shared/http/middleware/validate') as typeof import('../../../shared/http/middleware/validate');
  const messages = (schema: z.ZodMiniType, value: unknown) => {
    const r = schema.safeParse(value);
    if (r.success) throw new Error('accepted');
    return Object.fromEntries(fieldIssues(r.error, 'body').map((f) => [f.path, f.message]));
  };
  it('says what is allowed for each kind of check', () => {
    const schema = z.strictObject({
      min: z.number().check(z.minimum(0)), pos: z.number().check(z.positive()), max: z.int().check(z.maximum(10)), lt: z.number().check(z.lt(5)),
      mode: z.enum(['cold', 'warm']), short: z.string().check(z.maxLength(3)), empty: z.string().check(z.minLength(1)), few: z.array(z.string()).check(z.minLength(2)),
      mail: z.email(), when: z.iso.datetime(), int: z.int(), step: z.number().check(z.multipleOf(5)), own: z.string().check(z.regex(/^x/, { error: 'must start with x' })),
    });
    expect(messages(schema, { min: -1, pos: 0, max: 11, lt: 5, mode: 'hot', short: 'abcd', empty: '', few: ['a'], mail: 'no', when: 'soon', int: 1.5, step: 7, own: 'y' })).toEqual({
      min: 'must be at least 0', pos: 'must be greater than 0', max: 'must be at most 10', lt: 'must be less than 5',
      mode: 'must be "cold" or "warm"', short: 'must have at most 3 characters', empty: 'must not be empty', few: 'must have at least 2 items',
      mail: 'must be an email address', when: 'must be an ISO 8601 date-time, such as 2026-01-31T09:00:00Z', int: 'must be an integer (got a number)',
      step: 'must be a multiple of 5', own: 'must start with x',
    });
  });
  it('the real request schemas answer no zod default message', () => {
    const { CreateAgentBody } = require('../../../shared/domain/agents/schemas') as typeof import('../../../shared/domain/agents/schemas');
    const found = Object.values(messages(CreateAgentBody, {
      name: '', temperature: -3, max_call_duration_ms: -1, interruption_sensitivity: 7, voice_speed: 'fast', ring_duration_ms: 1.5,
      analysis_fields: [{ name: 'x', type: 'percent', description: '' }], tools: [{ type: 'transfer_call', mode: 'lukewarm', phone_number: '+14155550123' }],
    }));
    expect(found.length).toBeGreaterThan(4);
    for (const m of found) expect(m).not.toMatch(/^(Too small|Too big|Invalid|expected)|>=|<=|\|/);
  });
});
