import * as z from 'zod/mini';
import { TRACEPARENT_PATTERN } from '../../telemetry/tracing';
import { lazy } from './lazy';

/**
 * A UUID path, query or body id (v7 is what we issue; any RFC 9562 form is accepted on input).
 * UUIDs are case-insensitive, so an id in upper case is lowered here, before any lookup.
 */
export const uuid = () =>
  z.string().check(z.regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a UUID'), z.toLowerCase());

/**
 * The W3C trace context a carrier callback's URL carries when tracing is on (telemetry/tracing.ts
 * withTraceQuery): optional, and only ever read as a span's parent.
 */
export const traceparentQuery = () => z.optional(z.string().check(z.regex(TRACEPARENT_PATTERN, 'must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)')));

export const IdParams = /* @__PURE__ */ lazy(() => z.strictObject({ id: uuid() }));

/** Query integers arrive as strings. */
export const queryInt = (min: number, max: number, field: string) =>
  z.pipe(
    z.string().check(z.regex(/^\d+$/, `${field} must be a non-negative integer`)),
    z.pipe(z.transform((s: string) => Number(s)), z.number().check(z.minimum(min), z.maximum(max))),
  );

/** limit (1–100, default 20), offset (default 0) or cursor. */
export const pageQueryShape = /* @__PURE__ */ lazy(() => ({
  limit: z._default(queryInt(1, 100, 'limit'), 20),
  offset: z._default(queryInt(0, 1_000_000, 'offset'), 0),
  cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
}));
export const PageQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export const timestamp = () => z.string();

/** `meta` of a list response. */
export const ListMeta = /* @__PURE__ */ lazy(() => z.object({
  total: z.number(),
  limit: z.number(),
  offset: z.number(),
  next_cursor: z.nullable(z.string()),
}));

/**
 * The bounds of every free-form JSON object the API stores (contact and document `metadata`,
 * agent `ivr_options` and `integrations`, the extra members of a `selected_tools` item), decided
 * once so that no request reaches DynamoDB with an item it would reject. docs/api.md states them.
 */
export const FREE_FORM_LIMITS = {
  /** Levels of objects and arrays, the field itself being level 1 (DynamoDB allows 32 in an item). */
  maxDepth: 16,
  /** Serialized JSON bytes of the field (UTF-8). */
  maxBytes: 16_384,
  /** Characters of one key. */
  maxKeyLength: 256,
  /** DynamoDB numbers: magnitude at most 9.99…e125 and, unless zero, at least 1e-130. */
  maxNumber: 9.999999999999999e125,
  minNumber: 1e-130,
} as const;

type Path = (string | number)[];

/** Whether DynamoDB can store `n`: finite, magnitude 0 or within [1e-130, 9.99…e125]. */
export function isStorableNumber(n: number): boolean {
  const size = Math.abs(n);
  return Number.isFinite(n) && size <= FREE_FORM_LIMITS.maxNumber && (size === 0 || size >= FREE_FORM_LIMITS.minNumber);
}

const OUT_OF_RANGE = 'is a number out of range (its magnitude must be 0 or between 1e-130 and 9.99e125)';

/** A number the table can hold (an unbounded `z.number()` would let 1e130 reach DynamoDB). */
export const storableNumber = () => z.number().check(z.refine(isStorableNumber, OUT_OF_RANGE));

/** The first way `value` breaks the free-form bounds, with the path inside the field; undefined when it keeps them. */
export function freeFormProblem(value: unknown): { path: Path; message: string } | undefined {
  const { maxDepth, maxKeyLength } = FREE_FORM_LIMITS;
  // An explicit stack: a 1 MB body can nest far deeper than the call stack.
  const stack: { value: unknown; path: Path }[] = [{ value, path: [] }];
  while (stack.length) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'number') {
      if (!isStorableNumber(v)) return { path, message: OUT_OF_RANGE };
    } else if (v !== null && typeof v === 'object') {
      if (path.length >= maxDepth) return { path, message: `nests deeper than ${maxDepth} levels` };
      if (Array.isArray(v)) v.forEach((item, i) => stack.push({ value: item, path: [...path, i] }));
      else {
        for (const key of Object.keys(v)) {
          if (key === '') return { path, message: 'has an empty key' };
          if (key === '__proto__') return { path, message: 'has a key "__proto__", which is not allowed' };
          if (key.length > maxKeyLength) return { path, message: `has a key longer than ${maxKeyLength} characters` };
          stack.push({ value: (v as Record<string, unknown>)[key], path: [...path, key] });
        }
      }
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > FREE_FORM_LIMITS.maxBytes) return { path: [], message: `must be at most ${FREE_FORM_LIMITS.maxBytes} bytes of JSON (is ${bytes})` };
  return undefined;
}

/**
 * Runs the free-form bounds on the value as parsed from JSON, before `schema` copies it (zod
 * drops a `__proto__` key while copying, so it would vanish without a word otherwise).
 */
export const freeForm = <S extends z.ZodMiniType>(schema: S) =>
  z.pipe(
    z.transform((value: unknown, ctx) => {
      const problem = freeFormProblem(value);
      if (!problem) return value;
      ctx.issues.push({ code: 'custom', message: problem.message, input: value, path: problem.path });
      return z.NEVER;
    }),
    schema,
  );

/** What the OpenAPI document says of every free-form object. */
export const FREE_FORM_DESCRIPTION =
  `Free-form JSON: at most ${FREE_FORM_LIMITS.maxDepth} levels deep and ${FREE_FORM_LIMITS.maxBytes} bytes; keys non-empty, ` +
  `at most ${FREE_FORM_LIMITS.maxKeyLength} characters, never "__proto__"; numbers of magnitude 0 or 1e-130 to 9.99e125.`;

/** A free-form JSON object within `FREE_FORM_LIMITS`; keys such as `constructor` are kept as data. */
export const freeFormObject = () => freeForm(z.record(z.string(), z.unknown()).check(z.describe(FREE_FORM_DESCRIPTION)));

/** Refuses a `__proto__` key of a record before `schema` (a zod record) would drop it without a word. */
export const refuseProtoKey = <S extends z.ZodMiniType>(schema: S) =>
  z.pipe(
    z.transform((value: unknown, ctx) => {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, '__proto__')) return value;
      ctx.issues.push({ code: 'custom', message: 'has a key "__proto__", which is not allowed', input: value });
      return z.NEVER;
    }),
    schema,
  );

/** Most `dynamic_variables` of one call or chat, and the bounds of a name and a value. */
export const MAX_DYNAMIC_VARIABLES = 50;
const MAX_VARIABLE_NAME = 100;
const MAX_VARIABLE_VALUE = 2000;

/** `dynamic_variables`: strings filled into an agent's `{{name}}` placeholders (calls, chats, campaigns). */
export const DynamicVariables = /* @__PURE__ */ lazy(() => z.record(
  z.string().check(z.minLength(1), z.maxLength(MAX_VARIABLE_NAME), z.regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'must be a variable name (letters, digits, _ . -)')),
  z.string().check(z.maxLength(MAX_VARIABLE_VALUE)),
).check(z.refine((m) => Object.keys(m).length <= MAX_DYNAMIC_VARIABLES, `must have at most ${MAX_DYNAMIC_VARIABLES} variables`)));
