import * as z from 'zod/mini';
import { en } from 'zod/locales';
import { ValidationError, type FieldIssue } from '../../errors';
import { httpState } from '../context';
import type { Location } from './field-issues';
import type { HttpMiddleware } from './types';

// Only the English messages: `z.locales` would bundle every language (~270 KB).
z.config(en());

type IssueRules = typeof import('./field-issues');
/** How issues are worded (field-issues.ts): loaded with the first request that fails validation, not at cold start. */
let issueRules: IssueRules | undefined;
const loadIssueRules = async (): Promise<IssueRules> => (issueRules ??= await import('./field-issues'));

/**
 * Turns zod issues into `error.details.fields`, one entry per offending field (field-issues.ts).
 * Synchronous where nothing is bundled (tests, scripts: the rules are required on first use);
 * the middleware itself awaits them, so in a bundle (lib/bundle.ts defines VAP_LAZY_MODULES and
 * esbuild drops the require() as dead code) they stay a chunk of their own.
 */
export function fieldIssues(error: z.core.$ZodError, location: Location): ReturnType<IssueRules['fieldIssues']> {
  if (!issueRules && process.env.VAP_LAZY_MODULES !== 'true') issueRules = require('./field-issues') as IssueRules;
  if (!issueRules) throw new Error('fieldIssues: in a bundle the rules load with the first request that fails validation');
  return issueRules.fieldIssues(error, location);
}

async function parsePart(schema: z.ZodMiniType | undefined, value: unknown, location: Location, issues: FieldIssue[]): Promise<unknown> {
  if (!schema) {
    const present = value && typeof value === 'object' ? Object.keys(value) : value === undefined ? [] : [location];
    if (location === 'path') return {};
    for (const k of present) issues.push({ path: k, message: location === 'body' ? 'this operation takes no body' : 'is not a known parameter', in: location } as FieldIssue);
    return undefined;
  }
  // Asynchronous: some checks load their rules on first use (phone numbers, shared/domain/common/phone-field.ts).
  const result = await schema.safeParseAsync(value);
  if (result.success) return result.data;
  issues.push(...(await loadIssueRules()).fieldIssues(result.error, location));
  return undefined;
}

/**
 * Validates path, query and body against the operation's zod schemas. Unknown fields are
 * rejected, and every offending field is named in one 400, not only the first.
 */
export function validate(): HttpMiddleware {
  return {
    name: 'validate',
    before: async (request) => {
      const state = httpState(request);
      const op = state.operation;
      const issues: FieldIssue[] = [];
      const params = await parsePart(op.params, request.event.pathParameters ?? {}, 'path', issues);
      const query = await parsePart(op.query, request.event.queryStringParameters ?? (op.query ? {} : undefined), 'query', issues);
      // An operation that takes a body needs one, `{}` at least: an empty request is a mistake, not an empty resource.
      const missing = op.body !== undefined && state.body === undefined && !op.bodyOptional;
      if (missing) issues.push({ path: 'body', message: 'is required', in: 'body' } as FieldIssue);
      const raw = state.body === undefined && op.bodyOptional ? {} : state.body;
      const body = missing ? undefined : await parsePart(op.body, raw, 'body', issues);
      if (issues.length) {
        const summary = issues.slice(0, 3).map((i) => `${i.path} ${i.message}`).join('; ');
        throw new ValidationError(`Validation failed: ${summary}${issues.length > 3 ? '; …' : ''}`, issues);
      }
      state.input = { params, query, body };
    },
  };
}
