import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape, refuseProtoKey, storableNumber } from '../common/schemas';
import type { FieldIssue } from '../../errors';
import { lazy } from '../common/lazy';

export const TOOL_TYPES = ['function', 'webhook'] as const;
export type ToolType = (typeof TOOL_TYPES)[number];
export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** The JSON-Schema types a parameter may have. */
export const PARAMETER_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object'] as const;

const MAX_HEADERS = 20;
const MAX_PARAMETERS = 100;
/** Function and parameter names, as the model providers accept them. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** An HTTP header name (an RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** Headers the HTTP client sets itself; a tool may not override them. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

const text = (max: number) => z.string().check(z.maxLength(max));
const identifier = () => z.string().check(z.regex(NAME, 'must be 1–64 letters, digits, "_" or "-"'));
const enumValue = /* @__PURE__ */ lazy(() => z.union([z.string().check(z.maxLength(500)), storableNumber(), z.boolean()]));

type ParameterType = (typeof PARAMETER_TYPES)[number];
const scalarTests: Partial<Record<ParameterType, (v: unknown) => boolean>> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number',
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
};

/** `enum` only on scalar types, and every value of that type. */
const enumMatchesType = /* @__PURE__ */ lazy(() => z.superRefine((p: { type: ParameterType; enum?: unknown[] }, ctx) => {
  const matches = scalarTests[p.type];
  if (p.enum && !matches) ctx.issues.push({ code: 'custom', path: ['enum'], message: `is not allowed when type is "${p.type}"`, input: p.enum });
  else p.enum?.forEach((v, i) => {
    if (!matches!(v)) ctx.issues.push({ code: 'custom', path: ['enum', i], message: `must be of type ${p.type}`, input: v });
  });
}));

/** The schema of an array parameter's items (one level: scalars or plain objects). */
const ParameterItems = /* @__PURE__ */ lazy(() => z
  .strictObject({
    type: z.enum(PARAMETER_TYPES),
    description: z.optional(text(1000)),
    enum: z.optional(z.array(enumValue).check(z.minLength(1), z.maxLength(100))),
  })
  .check(enumMatchesType));

/** One parameter: a JSON-Schema property with a type and a description; `items` only on arrays. */
export const ToolParameter = /* @__PURE__ */ lazy(() => z
  .strictObject({
    type: z.enum(PARAMETER_TYPES),
    description: z._default(text(1000), ''),
    enum: z.optional(z.array(enumValue).check(z.minLength(1), z.maxLength(100))),
    items: z.optional(ParameterItems),
  })
  .check(
    enumMatchesType,
    z.superRefine((p, ctx) => {
      if (p.items && p.type !== 'array') ctx.issues.push({ code: 'custom', path: ['items'], message: 'is only allowed when type is "array"', input: p.items });
    }),
  ));

/** `definition.parameters`: a JSON-Schema object whose `required` names only its own properties. */
export const ToolParameters = /* @__PURE__ */ lazy(() => z
  .strictObject({
    type: z.literal('object'),
    properties: z._default(refuseProtoKey(z.record(z.string(), ToolParameter)), {}),
    required: z._default(z.array(z.string()).check(z.maxLength(MAX_PARAMETERS)), []),
  })
  .check(
    z.superRefine((p, ctx) => {
      const names = Object.keys(p.properties);
      if (names.length > MAX_PARAMETERS) ctx.issues.push({ code: 'custom', path: ['properties'], message: `must have at most ${MAX_PARAMETERS} parameters`, input: p.properties });
      for (const name of names) {
        if (!NAME.test(name)) ctx.issues.push({ code: 'custom', path: ['properties', name], message: 'parameter names must be 1–64 letters, digits, "_" or "-"', input: name });
      }
      const seen = new Set<string>();
      p.required.forEach((name, i) => {
        if (!Object.hasOwn(p.properties, name)) ctx.issues.push({ code: 'custom', path: ['required', i], message: `"${name}" is not a property of parameters`, input: name });
        else if (seen.has(name)) ctx.issues.push({ code: 'custom', path: ['required', i], message: `"${name}" is listed twice`, input: name });
        seen.add(name);
      });
    }),
  ));

/** What the model sees: a function name, what it does, and its parameters. */
export const ToolDefinition = /* @__PURE__ */ named('ToolDefinition', () => z.strictObject({
  name: identifier(),
  description: z._default(text(1000), ''),
  parameters: z._default(ToolParameters, { type: 'object', properties: {}, required: [] }),
}), 'What the model sees: a function name, what it does, and its parameters');

/** Outbound request headers of a webhook tool: at most 20, token names, single-line values. */
const WebhookHeaders = /* @__PURE__ */ lazy(() => refuseProtoKey(z.record(z.string(), z.string().check(z.maxLength(2048))).check(
  z.superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_HEADERS) ctx.issues.push({ code: 'custom', path: [], message: `must have at most ${MAX_HEADERS} headers`, input: headers });
    for (const name of names) {
      if (!HEADER_NAME.test(name)) ctx.issues.push({ code: 'custom', path: [name], message: 'is not a valid header name', input: name });
      else if (RESERVED_HEADERS.has(name.toLowerCase())) ctx.issues.push({ code: 'custom', path: [name], message: 'is set by the platform and cannot be overridden', input: name });
      if (/[\r\n\0]/.test(headers[name])) ctx.issues.push({ code: 'custom', path: [name], message: 'must be a single line', input: headers[name] });
    }
  }),
)));

/** Every writable tool field; the webhook ones are only valid on `webhook` tools (checked on the whole tool). */
export const toolFields = /* @__PURE__ */ lazy(() => ({
  name: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200)),
  description: text(2000),
  type: z.enum(TOOL_TYPES),
  definition: ToolDefinition,
  isActive: z.boolean(),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).check(z.maxLength(2048)),
  method: z.enum(WEBHOOK_METHODS),
  headers: WebhookHeaders,
  timeout_ms: z.int().check(z.minimum(1), z.maximum(30_000)),
}));

type Fields = typeof toolFields;
const optionalFields = /* @__PURE__ */ lazy(() => Object.fromEntries(Object.entries(toolFields).map(([k, v]) => [k, z.optional(v)])) as {
  [K in keyof Fields]: z.ZodMiniOptional<Fields[K]>;
});

/** Create: `name` and `definition` required. PATCH: any subset; `definition` is replaced as a whole. */
export const CreateToolBody = /* @__PURE__ */ named('CreateToolRequest', () => z.strictObject({ ...optionalFields, name: toolFields.name, definition: toolFields.definition }));
export const UpdateToolBody = /* @__PURE__ */ named('UpdateToolRequest', () => z.strictObject(optionalFields));
export const ToolListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export type CreateToolInput = z.output<typeof CreateToolBody>;
export type UpdateToolInput = z.output<typeof UpdateToolBody>;

export const Tool = /* @__PURE__ */ named('Tool', () => z.object({
  id: z.string(),
  organizationId: z.string(),
  name: toolFields.name,
  description: toolFields.description,
  type: toolFields.type,
  definition: toolFields.definition,
  isActive: toolFields.isActive,
  url: z.optional(toolFields.url),
  method: z.optional(toolFields.method),
  headers: z.optional(toolFields.headers),
  timeout_ms: z.optional(toolFields.timeout_ms),
  /** Webhook tools: while a rotated-out signing secret still signs (24 h after rotate-secret), when it stops; else null. */
  previous_secret_expires_at: z.optional(z.nullable(z.string())),
  createdAt: z.string(),
  updatedAt: z.string(),
}), 'A tool an agent can call: a function the model calls, or a webhook the platform calls');
export type Tool = z.output<typeof Tool>;

/** A tool with its signing secret, answered once: by create (webhook tools) and by rotate-secret. */
export const ToolWithSecret = /* @__PURE__ */ named('ToolWithSecret', () => z.object({
  ...Tool.shape,
  /** `whsec_…`: verify the platform's requests with it (Standard Webhooks). Shown only in this answer. */
  secret: z.optional(z.string()),
}), 'A tool and its signing secret, shown only once');

/**
 * What a tool is when the create body leaves a field out. docs/api.md lists these.
 * `webhookDefaults` apply only to `webhook` tools; a `function` tool carries none of those fields.
 */
export const toolDefaults = {
  description: '',
  type: 'function' as ToolType,
  isActive: true,
};
export const webhookDefaults = {
  method: 'POST' as const,
  headers: {} as Record<string, string>,
  timeout_ms: 10_000,
};
export const WEBHOOK_FIELDS = ['url', 'method', 'headers', 'timeout_ms'] as const;

/**
 * Rules that span fields, checked on the whole tool (a create body, or a PATCH merged over the
 * stored tool): a `webhook` tool needs a `url` (https unless running locally); a `function`
 * tool carries no webhook fields.
 */
export function toolIssues(tool: Partial<Tool>, opts: { requireHttps: boolean }): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (tool.type === 'function') {
    for (const field of WEBHOOK_FIELDS) if (tool[field] !== undefined) issues.push({ path: field, message: 'is only allowed on webhook tools' });
  } else if (tool.type === 'webhook') {
    if (!tool.url) issues.push({ path: 'url', message: 'is required for webhook tools' });
    else if (opts.requireHttps && !tool.url.toLowerCase().startsWith('https://')) issues.push({ path: 'url', message: 'must use https' });
  }
  return issues;
}
