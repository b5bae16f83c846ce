import type { AnalysisField, AnalysisFieldType, DataError, FieldValue } from './port';

/**
 * Typed outcomes (an agent's `analysis_fields`): the JSON schema a model is asked to fill for
 * them, and the check every value passes before it is kept. A value not of its field's type is
 * kept as null and named in `data_errors`, never stored as given.
 */

/** The JSON schema of one field's value, for OpenAI strict structured output: every field is required and may be null. */
export function fieldSchema(field: AnalysisField): Record<string, unknown> {
  const description = field.description;
  switch (field.type) {
    case 'enum':
      // anyOf (supported below the root in strict mode) keeps the options apart from the null.
      return { anyOf: [{ type: 'string', enum: [...(field.options ?? [])] }, { type: 'null' }], description };
    case 'integer':
      return { type: ['integer', 'null'], description };
    case 'number':
      return { type: ['number', 'null'], description };
    case 'boolean':
      return { type: ['boolean', 'null'], description };
    default:
      return { type: ['string', 'null'], description };
  }
}

/** The `data` object's schema: closed, one required (nullable) property per field. */
export function dataSchema(fields: AnalysisField[]): Record<string, unknown> {
  return {
    type: 'object',
    description: 'One member per field: its value as the conversation showed it, or null when the conversation did not show it.',
    additionalProperties: false,
    required: fields.map((f) => f.name),
    properties: Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f)])),
  };
}

/** The longest string value kept (a longer one is refused as null). */
export const MAX_STRING_VALUE = 2000;

/** Why `value` is not of `field`'s type, or undefined when it is (null always is). */
export function fieldValueProblem(field: AnalysisField, value: unknown): string | undefined {
  if (value === null) return undefined;
  // Only the kind of value is named: the refused value itself is never stored, not even in the message.
  const got = Array.isArray(value) ? 'an array' : value === undefined ? 'nothing' : typeof value === 'object' ? 'an object' : typeof value === 'number' ? (Number.isFinite(value) ? 'a number' : 'a non-finite number') : `a ${typeof value}`;
  switch (field.type) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `must be true, false or null, got ${got}`;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : `must be a number or null, got ${got}`;
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value) ? undefined : `must be an integer or null, got ${typeof value === 'number' ? 'a number with a fraction or out of range' : got}`;
    case 'enum':
      return typeof value === 'string' && (field.options ?? []).includes(value) ? undefined : `must be one of ${(field.options ?? []).map((o) => JSON.stringify(o)).join(', ')} or null, got ${typeof value === 'string' ? 'a string that is none of them' : got}`;
    default:
      if (typeof value !== 'string') return `must be a string or null, got ${got}`;
      return value.length > MAX_STRING_VALUE ? `must be at most ${MAX_STRING_VALUE} characters, got ${value.length}` : undefined;
  }
}

/** `raw` checked field by field: each value of its type kept, any other (or a missing one) null with a data error. Members that are no field are dropped. */
export function checkedData(fields: AnalysisField[], raw: unknown): { data: Record<string, FieldValue>; data_errors: DataError[] } {
  const given = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const data: Record<string, FieldValue> = {};
  const data_errors: DataError[] = [];
  for (const field of fields) {
    if (!Object.hasOwn(given, field.name)) {
      data[field.name] = null;
      data_errors.push({ field: field.name, message: 'missing from the answer' });
      continue;
    }
    const value = given[field.name];
    const problem = fieldValueProblem(field, value);
    if (problem) {
      data[field.name] = null;
      data_errors.push({ field: field.name, message: problem });
    } else data[field.name] = value as FieldValue;
  }
  return { data, data_errors };
}

/** Every field null (an analyzer that cannot fill them). */
export const nullData = (fields: AnalysisField[]): Record<string, FieldValue> => Object.fromEntries(fields.map((f) => [f.name, null]));

export const dataTypes = (fields: AnalysisField[]): Record<string, AnalysisFieldType> => Object.fromEntries(fields.map((f) => [f.name, f.type]));
