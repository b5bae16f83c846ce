import type * as z from 'zod/mini';

/**
 * A value built on first use, standing in for it until then (a Proxy that forwards every
 * operation to the built value).
 *
 * Why: each function bundles its area's schema modules, and zod builds a schema when its
 * declaration runs, some 25 µs a field once warm. An area declares every operation's request
 * and response schemas; built eagerly, they were the largest part of a function's cold start
 * above the floor (`npm run bench`, section (b)). Declared through `lazy` (or `named`, which uses
 * it), a function builds only what its own operation validates, and builds that at load
 * (`materialize` in shared/http/handler.ts), so no work moves to the first request.
 *
 * `build` must return an object (a schema or a shape of schemas); it runs at most once.
 */
export function lazy<T extends object>(build: () => T): T {
  let value: T | undefined;
  const target = () => (value ??= build());
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(target(), key),
    set: (_, key, v) => Reflect.set(target(), key, v),
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    // Reported configurable: a Proxy may not report a non-configurable property its own
    // (empty) target lacks.
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      return descriptor && { ...descriptor, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
}

type Def = Record<string, unknown>;
const isSchema = (value: unknown): value is z.ZodMiniType => typeof value === 'object' && value !== null && '_zod' in value;

/** The schemas `schema` is made of: object members, array elements, wrapped, piped and united schemas. */
export function childSchemas(schema: z.ZodMiniType): z.ZodMiniType[] {
  const def = schema._zod.def as unknown as Def;
  const children: unknown[] = ['element', 'innerType', 'in', 'out', 'left', 'right', 'keyType', 'valueType', 'rest'].map((key) => def[key]);
  if (def.shape && typeof def.shape === 'object') children.push(...Object.values(def.shape));
  for (const key of ['options', 'items']) if (Array.isArray(def[key])) children.push(...(def[key] as unknown[]));
  return children.filter(isSchema);
}

/**
 * Builds now every lazily declared part of `schema` (reading a part's definition builds it). The
 * handler calls it at load for the operation's own params, query and body.
 */
export function materialize(schema: z.ZodMiniType | undefined, seen = new Set<unknown>()): void {
  if (!schema || seen.has(schema)) return;
  seen.add(schema);
  for (const child of childSchemas(schema)) materialize(child, seen);
}
