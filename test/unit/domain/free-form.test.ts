import * as z from 'zod/mini';
import { marshall } from '@aws-sdk/util-dynamodb';
import { FREE_FORM_LIMITS, freeFormObject, freeFormProblem } from '../../../shared/domain/common/schemas';
import { shieldOwnConstructors } from '../../../shared/db/client';

const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) });

describe('free-form JSON objects', () => {
  it('accepts 16 levels and refuses 17, naming where', () => {
    expect(freeFormProblem(nested(16))).toBeUndefined();
    expect(freeFormProblem(nested(17))).toEqual({ path: Array(16).fill('a'), message: 'nests deeper than 16 levels' });
  });

  it('walks a body nested far deeper than the call stack without overflowing', () => {
    const deep = JSON.parse('['.repeat(200_000) + ']'.repeat(200_000));
    expect(freeFormProblem({ deep })?.message).toBe('nests deeper than 16 levels');
  });

  it.each([
    ['an empty key', { a: { '': 1 } }, ['a'], 'has an empty key'],
    ['a __proto__ key', JSON.parse('{"a":{"__proto__":{"x":1}}}'), ['a'], 'has a key "__proto__", which is not allowed'],
    ['a very long key', { ['k'.repeat(257)]: 1 }, [], 'has a key longer than 256 characters'],
    ['1e130', { n: [1e130] }, ['n', 0], expect.stringMatching(/out of range/)],
    ['1e-140', { n: -1e-140 }, ['n'], expect.stringMatching(/out of range/)],
    ['too many bytes', { s: 'é'.repeat(8200) }, [], expect.stringMatching(/at most 16384 bytes/)],
  ])('refuses %s', (_what, value, path, message) => {
    expect(freeFormProblem(value)).toEqual({ path, message });
  });

  it('keeps numbers DynamoDB can hold, zero and the largest included', () => {
    expect(freeFormProblem({ a: 0, b: -0, c: FREE_FORM_LIMITS.maxNumber, d: 1e-130, e: 2 ** 60 })).toBeUndefined();
  });

  it('is a zod schema that keeps constructor-like keys and refuses __proto__ by its path', () => {
    const schema = z.strictObject({ metadata: freeFormObject() });
    expect(schema.parse({ metadata: { constructor: 'x', toString: 1 } })).toEqual({ metadata: { constructor: 'x', toString: 1 } });
    const bad = schema.safeParse(JSON.parse('{"metadata":{"x":{"__proto__":1}}}'));
    expect(bad.error?.issues[0]).toMatchObject({ path: ['metadata', 'x'], message: expect.stringContaining('__proto__') });
  });
});

describe('shieldOwnConstructors', () => {
  it('lets the marshaller store objects with their own constructor key as maps of their entries', () => {
    const item = { pk: 'p', meta: { constructor: { name: 'Set' }, list: [{ constructor: 'Map', n: 1 }], plain: { a: 1 } } };
    expect(() => marshall(item)).toThrow();
    expect(marshall(shieldOwnConstructors(item) as Record<string, unknown>)).toEqual({
      pk: { S: 'p' },
      meta: {
        M: {
          constructor: { M: { name: { S: 'Set' } } },
          list: { L: [{ M: { constructor: { S: 'Map' }, n: { N: '1' } } }] },
          plain: { M: { a: { N: '1' } } },
        },
      },
    });
  });

  it('passes everything else through as the same references', () => {
    const input = { TableName: 't', Item: { pk: 'p', tags: ['a'], data: Buffer.from('x') } };
    expect(shieldOwnConstructors(input)).toBe(input);
  });
});
