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
  const add = (path: string[], message: string) => out.push({ path: path.join('.') || location, message, in: location });
  const walk = (issues: readonly z.core.$ZodIssue[], base: string[]) => {
    for (const issue of issues) {
      const path = [...base, ...issue.path.map(String)];
      if (issue.code === 'unrecognized_keys') {
        for (const k of issue.keys) add([...path, k], 'is not a known field');
      } else if (issue.code === 'invalid_union' && issue.errors.length) {
        const told = unionIssue(issue.errors);
        if ('branch' in told) walk(told.branch, path);
        else add(path, told.message);
      } else if (issue.code === 'invalid_type') {
        const received = /received (\w+)$/.exec(issue.message)?.[1];
        add(path, received === 'undefined' ? 'is required' : `must be ${expectation(issue)}${received ? ` (got ${received === 'null' ? 'null' : `${received === 'array' || received === 'object' ? 'an' : 'a'} ${received}`})` : ''}`);
      } else {
        add(path, issue.message);
      }
    }
  };
  walk(error.issues, []);
  return out;
}

const isMissing = (i: z.core.$ZodIssue) => i.code === 'invalid_type' && /received undefined$/.test(i.message);
/** A branch that refused the value itself (its type or literal), rather than something inside it. */
const refusedWhole = (branch: readonly z.core.$ZodIssue[]) => branch.every((i) => i.path.length === 0 && (i.code === 'invalid_type' || i.code === 'invalid_value'));

/**
 * What a union ("a number or "draft"", "`turns`, or `persona` and `goal`") tells of a value none of
 * its branches took, instead of zod's bare "Invalid input": the problems of the branch that
 * understood the value best (fields of its own, fewest problems, no fields it does not know); the
 * fields each alternative needs, when the value has none of them; or what each alternative
 * expects, when none took the value's type.
 */
function unionIssue(branches: readonly (readonly z.core.$ZodIssue[])[]): { branch: readonly z.core.$ZodIssue[] } | { message: string } {
  const understood = branches.filter((b) => !refusedWhole(b));
  if (!understood.length) {
    const expected = [...new Set(branches.flatMap((b) => b.map(expectation)))];
    return { message: `must be ${orList(expected)}` };
  }
  if (understood.every((b) => b.every(isMissing)) && understood.length > 1) {
    const needs = understood.map((b) => b.map((i) => `\`${i.path.map(String).join('.')}\``).join(' and '));
    return { message: `needs ${orList(needs, ', or ')}` };
  }
  // Fields a branch does not know weigh most: they say the value was meant for another branch.
  const weight = (b: readonly z.core.$ZodIssue[]) => b.reduce((n, i) => n + (i.code === 'unrecognized_keys' ? 100 * i.keys.length : 1), 0);
  return { branch: [...understood].sort((a, b) => weight(a) - weight(b))[0]! };
}

/** One alternative's expectation in words: `a number`, `"draft"`. */
function expectation(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_value') return issue.values.map((v) => JSON.stringify(v)).join(' or ');
  if (issue.code === 'invalid_type') return issue.expected === 'array' || issue.expected === 'object' ? `an ${issue.expected}` : `a ${issue.expected}`;
  return issue.message;
}

const orList = (items: string[], last = ' or ') => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')}${last}${items.at(-1)}`);

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
