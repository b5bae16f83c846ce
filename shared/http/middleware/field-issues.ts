import type * as z from 'zod/mini';
import { en } from 'zod/locales';
import type { FieldIssue } from '../../errors';

/**
 * How zod's issues become `error.details.fields` in the API's one style (docs/api.md, "Errors").
 * Only a request that fails validation needs this: the validation middleware imports it then
 * (a chunk of its own in a bundle, not read at cold start).
 */

export type Location = 'path' | 'query' | 'body';

// The locale the validation middleware configures zod with (validate.ts).
const english = en();
/** zod's own message for an issue, to tell it from a message a schema gave (described()). */
const zodDefault = (issue: z.core.$ZodIssue): string | undefined => (english.localeError as (i: unknown) => string | undefined)(issue);

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
        add(path, described(issue));
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
  if (issue.code === 'invalid_value') return orList(issue.values.map((v) => JSON.stringify(v)));
  if (issue.code === 'invalid_type') return TYPE_WORDS[issue.expected] ?? (/^[aeiou]/.test(issue.expected) ? `an ${issue.expected}` : `a ${issue.expected}`);
  return described(issue);
}

const TYPE_WORDS: Record<string, string> = { int: 'an integer', bigint: 'an integer', array: 'an array', object: 'an object', date: 'a date', boolean: 'true or false' };

/** What a string format is, in words ("must be …"). */
const FORMAT_WORDS: Record<string, string> = {
  email: 'an email address', url: 'a URL', uuid: 'a UUID', guid: 'a UUID', datetime: 'an ISO 8601 date-time, such as 2026-01-31T09:00:00Z',
  date: 'an ISO 8601 date, such as 2026-01-31', time: 'a time, such as 09:00', duration: 'an ISO 8601 duration', e164: 'E.164, such as +14155550123',
  ipv4: 'an IPv4 address', ipv6: 'an IPv6 address', base64: 'base64', base64url: 'base64url', jwt: 'a JWT', ulid: 'a ULID', cuid: 'a CUID', emoji: 'an emoji',
};

const UNIT: Record<string, [string, string]> = { string: ['character', 'characters'], array: ['item', 'items'], set: ['item', 'items'], file: ['byte', 'bytes'] };
const count = (n: number | bigint, origin: string) => {
  const [one, many] = UNIT[origin] ?? ['', ''];
  return `${n} ${Number(n) === 1 ? one : many}`;
};

/**
 * A zod issue in the API's one style (docs/api.md, "Errors"): what the field must be or have,
 * never zod's own phrasing ("Too small: expected number to be >=0", "Invalid option: …"). Our
 * own checks' messages (`custom`) are written in that style already and pass as they are.
 */
export function described(issue: z.core.$ZodIssue): string {
  // A check given its own message (`{ error: '…' }`) keeps it: only zod's defaults are reworded.
  if (issue.code !== 'invalid_type' && issue.message !== zodDefault(issue)) return issue.message;
  switch (issue.code) {
    case 'too_small': {
      const n = issue.minimum;
      if (issue.origin in UNIT) {
        if (Number(n) === 1 && issue.inclusive !== false && !issue.exact) return issue.origin === 'string' ? 'must not be empty' : 'must have at least 1 item';
        return `must have ${issue.exact ? 'exactly' : 'at least'} ${count(issue.inclusive === false ? Number(n) + 1 : n, issue.origin)}`;
      }
      if (issue.origin === 'date') return `must be ${issue.inclusive === false ? 'after' : 'on or after'} ${new Date(Number(n)).toISOString()}`;
      return `must be ${issue.inclusive === false ? 'greater than' : 'at least'} ${n}`;
    }
    case 'too_big': {
      const n = issue.maximum;
      if (issue.origin in UNIT) return `must have ${issue.exact ? 'exactly' : 'at most'} ${count(issue.inclusive === false ? Number(n) - 1 : n, issue.origin)}`;
      if (issue.origin === 'date') return `must be ${issue.inclusive === false ? 'before' : 'on or before'} ${new Date(Number(n)).toISOString()}`;
      return `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${n}`;
    }
    case 'invalid_value':
      return `must be ${expectation(issue)}`;
    case 'invalid_type':
      return `must be ${expectation(issue)}`;
    case 'invalid_format': {
      const { format } = issue;
      if (format === 'regex') return issue.pattern ? `must match the pattern ${issue.pattern}` : 'is not in the expected format';
      if (format === 'starts_with') return `must start with "${(issue as { prefix?: string }).prefix ?? ''}"`;
      if (format === 'ends_with') return `must end with "${(issue as { suffix?: string }).suffix ?? ''}"`;
      if (format === 'includes') return `must include "${(issue as { includes?: string }).includes ?? ''}"`;
      if (format === 'lowercase' || format === 'uppercase') return `must be ${format}`;
      return `must be ${FORMAT_WORDS[format] ?? `a valid ${format}`}`;
    }
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'invalid_key':
      return `has a key that is not allowed: ${issue.issues.map(described).join('; ')}`;
    case 'invalid_element':
      return `has an element that is not allowed (${String(issue.key)}): ${issue.issues.map(described).join('; ')}`;
    case 'invalid_union':
      return 'is not any of the forms this field takes';
    default:
      return issue.message;
  }
}

const orList = (items: string[], last = ' or ') => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')}${last}${items.at(-1)}`);
