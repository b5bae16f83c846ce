import * as z from 'zod/mini';
import { childSchemas, lazy, materialize } from '../../../shared/domain/common/lazy';
import type { Operation } from '../../../shared/http/operation';

/**
 * Schemas are declared lazily (shared/domain/common/lazy.ts) so that a function builds only what
 * its own operation validates: `npm run bench`, section (b), measures what that saves at cold
 * start; these tests prove the behaviour the saving rests on.
 */
describe('lazy()', () => {
  it('builds once, on first use, and behaves as the built value', () => {
    let builds = 0;
    const shape = lazy(() => {
      builds++;
      return { a: z.string(), b: z.optional(z.number()) };
    });
    const Thing = lazy(() => {
      builds++;
      return z.strictObject({ ...shape, c: z.boolean() });
    });
    expect(builds).toBe(0);

    expect(z.safeParse(Thing, { a: 'x', c: true }).success).toBe(true);
    expect(z.safeParse(Thing, { a: 'x', c: true, d: 1 }).success).toBe(false);
    expect(Thing).toBeInstanceOf(z.ZodMiniObject);
    expect(Object.keys(shape)).toEqual(['a', 'b']);
    expect(builds).toBe(2);
    z.safeParse(Thing, {});
    expect(builds).toBe(2);
  });

  it('materialize() builds every lazily declared part a schema reaches', () => {
    const built: string[] = [];
    const part = (name: string) => lazy(() => (built.push(name), z.string()));
    const Body = lazy(() => (built.push('body'), z.strictObject({
      list: z.array(part('element')),
      maybe: z.optional(part('inner')),
      either: z.union([part('option'), z.number()]),
      piped: z.pipe(part('in'), z.string()),
      map: z.record(z.string(), part('value')),
    })));
    const unused = part('unused');
    materialize(Body);
    expect(built.sort()).toEqual(['body', 'element', 'in', 'inner', 'option', 'value']);
    expect(unused).toBeDefined();
  });
});

/** Every named schema reachable from `schema`. */
function namesReachable(schema: z.ZodMiniType | undefined, registry: { get(s: z.ZodMiniType): { id?: string } | undefined }): string[] {
  const names = new Set<string>();
  const seen = new Set<unknown>();
  const walk = (s: z.ZodMiniType): void => {
    if (seen.has(s)) return;
    seen.add(s);
    const id = registry.get(s)?.id;
    if (id) names.add(id);
    childSchemas(s).forEach(walk);
  };
  if (schema) walk(schema);
  return [...names];
}

describe('what a function builds when it loads', () => {
  // One or more per area: reads, lists, writes with large bodies, phone and time-zone fields.
  const cases: { file: string; module: string; name: string }[] = [
    { file: 'functions/agents/get.ts', module: 'shared/domain/agents/operations', name: 'getAgent' },
    { file: 'functions/agents/create.ts', module: 'shared/domain/agents/operations', name: 'createAgent' },
    { file: 'functions/contacts/create.ts', module: 'shared/domain/contacts/operations', name: 'createContact' },
    { file: 'functions/campaigns/create.ts', module: 'shared/domain/campaigns/operations', name: 'createCampaign' },
    { file: 'functions/campaigns/list.ts', module: 'shared/domain/campaigns/operations', name: 'listCampaigns' },
    { file: 'functions/calls/get.ts', module: 'shared/domain/calls/operations', name: 'getCall' },
    { file: 'functions/tools/update.ts', module: 'shared/domain/tools/operations', name: 'updateTool' },
    { file: 'functions/rag/query.ts', module: 'shared/domain/rag/operations', name: 'queryKnowledgeBase' },
  ];

  it.each(cases)('$name builds the named schemas its request reaches, and no other', ({ file, module, name }) => {
    jest.isolateModules(() => {
      /* eslint-disable @typescript-eslint/no-require-imports */
      const { builtSchemaNames, schemaNames } = require('../../../shared/domain/common/named');
      require(`../../../${file}`);
      const built: string[] = builtSchemaNames();
      const op = require(`../../../${module}`)[name] as Operation;
      const expected = [op.params, op.query, op.body].flatMap((s) => namesReachable(s, schemaNames));
      expect(built.sort()).toEqual([...new Set(expected)].sort());
      // The response is for the OpenAPI document only: never built in the function.
      const responseName = op.response ? schemaNames.get(op.response)?.id : undefined;
      if (responseName && !expected.includes(responseName)) expect(built).not.toContain(responseName);
    });
  });

  it('at least one case builds a named request schema and leaves a named response unbuilt (or the test proves nothing)', () => {
    jest.isolateModules(() => {
      const { builtSchemaNames } = require('../../../shared/domain/common/named');
      require('../../../functions/agents/create.ts');
      expect(builtSchemaNames()).toContain('CreateAgentRequest');
      expect(builtSchemaNames()).not.toContain('Agent');
      expect(builtSchemaNames()).not.toContain('UpdateAgentRequest');
    });
  });
});
