import * as z from 'zod/mini';
import { en } from 'zod/locales';
import { ValidationError, type FieldIssue } from '../../errors';
import { httpState } from '../context';
import type { HttpMiddleware } from './types';

// Only the English messages: `z.locales` would bundle every language (~270 KB).
z.config(en());

type Location = 'path' | 'query' | 'body';

/** Turns zod issues into `error.details.fields`, one entry per offending field. */
export function fieldIssues(error: z.core.$ZodError, location: Location): (FieldIssue & { in: Location })[] {
  const out: (FieldIssue & { in: Location })[] = [];
  for (const issue of error.issues) {
    const base = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) out.push({ path: [...base, k].join('.'), message: 'is not a known field', in: location });
      continue;
    }
    // A union ("" or an E.164 number…) says only "Invalid input": name what the branch that
    // understood the value found wrong instead (a branch that refused its type or literal did not).
    const inner = issue.code === 'invalid_union' ? issue.errors.flat().find((i) => i.code !== 'invalid_value' && i.code !== 'invalid_type') : undefined;
    const chosen = inner ?? issue;
    const path = [...base, ...(inner ? inner.path.map(String) : [])].join('.') || location;
    const message = /received undefined$/.test(chosen.message) ? 'is required' : chosen.message;
    out.push({ path, message, in: location });
  }
  return out;
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
  issues.push(...fieldIssues(result.error, location));
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
