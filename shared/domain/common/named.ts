import * as z from 'zod/mini';

/** What a named schema carries into the OpenAPI document. */
export interface SchemaName {
  /** The component name: `#/components/schemas/<id>`. */
  id: string;
  description?: string;
}

/**
 * The names of the API's schemas. The OpenAPI generator turns each named schema into one
 * component, referenced by `$ref` wherever it is used, so generated clients get real types.
 * Only the id and a description live here (a few bytes per bundle); examples live beside the
 * generator (shared/http/openapi-examples.ts).
 */
export const schemaNames = z.registry<SchemaName>();
const byId = new Map<string, z.ZodMiniType>();

/** Names a schema where it is declared: `export const Agent = named('Agent', z.object({...}))`. */
export function named<T extends z.ZodMiniType>(id: string, schema: T, description?: string): T {
  const existing = byId.get(id);
  if (existing && existing !== schema) throw new Error(`Two schemas are named ${id}`);
  byId.set(id, schema);
  schemaNames.add(schema, { id, ...(description ? { description } : {}) });
  return schema;
}

/** The schema named `id`, if any. */
export function namedSchema(id: string): z.ZodMiniType | undefined {
  return byId.get(id);
}
