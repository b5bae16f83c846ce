/**
 * Tool arguments checked against a tool's `definition.parameters` before the tool runs (the
 * JSON-Schema subset tools declare: an object of typed properties with `enum`, array `items`
 * and `required`). Invalid arguments go back to the model as an error result, never to the tool.
 */

type Schema = { type?: string; enum?: unknown[]; items?: Schema; properties?: Record<string, Schema>; required?: string[] };

const typeOk: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
  array: (v) => Array.isArray(v),
  object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
};

const article = (type: string) => (/^[aeiou]/.test(type) ? 'an' : 'a');

function check(schema: Schema, value: unknown, path: string, issues: string[]): void {
  if (schema.type && typeOk[schema.type] && !typeOk[schema.type]!(value)) {
    issues.push(`"${path}" must be ${article(schema.type)} ${schema.type}`);
    return;
  }
  if (schema.enum && !schema.enum.some((e) => e === value)) {
    issues.push(`"${path}" must be one of ${schema.enum.map((e) => String(e)).join(', ')}`);
    return;
  }
  if (schema.type === 'array' && schema.items && Array.isArray(value)) value.forEach((v, i) => check(schema.items!, v, `${path}[${i}]`, issues));
}

/** Readable issues with `args` against `parameters` (empty when they are valid). */
export function argumentIssues(parameters: Record<string, unknown> | undefined, args: unknown): string[] {
  const schema = (parameters ?? {}) as Schema;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return ['the arguments must be a JSON object'];
  const issues: string[] = [];
  const given = args as Record<string, unknown>;
  for (const name of schema.required ?? []) if (given[name] === undefined || given[name] === null) issues.push(`"${name}" is required`);
  for (const [name, value] of Object.entries(given)) {
    const property = schema.properties?.[name];
    if (!property) continue; // extra arguments are passed on: models add them, tools ignore them
    if (value === undefined || value === null) continue;
    check(property, value, name, issues);
  }
  return issues;
}

/** The model's arguments text as an object; an empty text is `{}`. */
export function parseArguments(text: string): { args?: Record<string, unknown>; error?: string } {
  if (!text.trim()) return { args: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { error: 'the arguments are not valid JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { error: 'the arguments must be a JSON object' };
  return { args: parsed as Record<string, unknown> };
}

/**
 * The one check of a tool call's arguments, for chats and calls alike: the model's text parsed as
 * a JSON object and validated against the tool's `parameters`. An error is what the model hears
 * (`invalid arguments: …`); the tool never runs with `{}` in place of arguments it could not read.
 */
export function checkToolArguments(parameters: Record<string, unknown> | undefined, text: string | undefined): { args: Record<string, unknown>; error?: undefined } | { args?: undefined; error: string } {
  const parsed = parseArguments(text ?? '');
  if (parsed.error !== undefined) return { error: `invalid arguments: ${parsed.error}` };
  const issues = argumentIssues(parameters, parsed.args);
  if (issues.length) return { error: `invalid arguments: ${issues.join('; ')}` };
  return { args: parsed.args! };
}
