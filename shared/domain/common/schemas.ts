import * as z from 'zod/mini';

/** A UUID path or body id (v7 is what we issue; any RFC 4122 form is accepted on input). */
export const uuid = () => z.string().check(z.regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID'));

export const IdParams = z.strictObject({ id: uuid() });

/** Query integers arrive as strings. */
const queryInt = (min: number, max: number, field: string) =>
  z.pipe(
    z.string().check(z.regex(/^\d+$/, `${field} must be a non-negative integer`)),
    z.pipe(z.transform((s: string) => Number(s)), z.number().check(z.minimum(min), z.maximum(max))),
  );

/** limit (1–100, default 20), offset (default 0) or cursor. */
export const pageQueryShape = {
  limit: z._default(queryInt(1, 100, 'limit'), 20),
  offset: z._default(queryInt(0, 1_000_000, 'offset'), 0),
  cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
};
export const PageQuery = z.strictObject(pageQueryShape);

export const timestamp = () => z.string();

/** `meta` of a list response. */
export const ListMeta = z.object({
  total: z.number(),
  limit: z.number(),
  offset: z.number(),
  next_cursor: z.nullable(z.string()),
});
