import * as z from 'zod/mini';
import { lazy } from './lazy';

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
const built = new Set<string>();

/**
 * Names a schema where it is declared, built on first use (shared/domain/common/lazy.ts):
 * `export const Agent = named('Agent', () => z.object({...}))`. A function builds only the
 * schemas its own operation validates; another operation's request or any response schema
 * (used by the OpenAPI generator only) is never built in it.
 */
export function named<T extends z.ZodMiniType>(id: string, build: () => T, description?: string): T {
  if (byId.has(id)) throw new Error(`Two schemas are named ${id}`);
  const schema = lazy(() => {
    built.add(id);
    const real = build();
    // A schema derived from this one later (`.check()`, `z.extend`) links to the built object as
    // its parent, and the registry inherits the description (never the id) through that link.
    if (description) schemaNames.add(real, { description } as SchemaName);
    return real;
  });
  byId.set(id, schema);
  schemaNames.add(schema, { id, ...(description ? { description } : {}) });
  return schema;
}

/** The schema named `id`, if any. */
export function namedSchema(id: string): z.ZodMiniType | undefined {
  return byId.get(id);
}

/** The names of the schemas built so far in this process (tests prove what a function builds at load). */
export function builtSchemaNames(): string[] {
  return [...built];
}
