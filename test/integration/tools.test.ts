import { v7 as uuidv7 } from 'uuid';
import { resetConfig } from '../../shared/config';
import { createAgent, getAgent, updateAgent } from '../../shared/domain/agents/service';
import { removeToolFromAgents } from '../../shared/domain/agents/tool-references';
import { CreateToolBody, UpdateToolBody, type CreateToolInput } from '../../shared/domain/tools/schemas';
import { createTool, deleteTool, getTool, getToolsByIds, listTools, updateTool } from '../../shared/domain/tools/service';
import { fieldIssues } from '../../shared/http/middleware/validate';
import { NotFoundError, ValidationError } from '../../shared/errors';
import { transact, updateExisting } from '../../shared/db/store';
import { keys } from '../../shared/db/keys';
import { rejection } from '../support/rejection';

const definition = (name = 'lookup_order') => ({
  name,
  description: 'Looks an order up',
  parameters: {
    type: 'object' as const,
    properties: { order_id: { type: 'string' as const, description: 'The order number' } },
    required: ['order_id'],
  },
});

/** A create body as the HTTP layer would hand it over (parsed, defaults applied). */
function body(over: Record<string, unknown> = {}): CreateToolInput {
  return CreateToolBody.parse({ name: 'Order lookup', definition: definition(), ...over });
}

/** The field paths a body fails validation on, as `error.details.fields` would name them. */
function invalidPaths(schema: typeof CreateToolBody | typeof UpdateToolBody, input: unknown): string[] {
  const result = schema.safeParse(input);
  return result.success ? [] : fieldIssues(result.error, 'body').map((i) => i.path);
}


function withRuntime(runtime: string | undefined) {
  if (runtime === undefined) delete process.env.RUNTIME;
  else process.env.RUNTIME = runtime;
  resetConfig();
}

describe('tools', () => {
  const originalRuntime = process.env.RUNTIME;
  afterEach(() => withRuntime(originalRuntime));

  it('creates a function tool with defaults and reads it back', async () => {
    // Prepare
    const org = uuidv7();
    // Act
    const created = await createTool(org, body());
    const read = await getTool(org, created.id);
    // Assess
    expect(read).toEqual(created);
    expect(created).toMatchObject({
      organizationId: org,
      name: 'Order lookup',
      description: '',
      type: 'function',
      isActive: true,
      definition: definition(),
    });
    expect(created).not.toHaveProperty('url');
    expect(created).not.toHaveProperty('method');
    expect(created.createdAt).toBe(created.updatedAt);
  });

  it('creates a webhook tool with the webhook defaults', async () => {
    const org = uuidv7();
    const created = await createTool(org, body({ type: 'webhook', url: 'https://hooks.example.com/order' }));
    expect(created).toMatchObject({ type: 'webhook', url: 'https://hooks.example.com/order', method: 'POST', headers: {}, timeout_ms: 10_000 });
    // The signing secret is answered by create only (test/integration/tool-runtime.test.ts checks it signs).
    const { secret, ...view } = created;
    expect(secret).toMatch(/^whsec_/);
    expect(await getTool(org, created.id)).toEqual(view);
  });

  it('lists with an exact total, by offset and by cursor', async () => {
    // Prepare
    const org = uuidv7();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createTool(org, body({ name: `Tool ${i}` }))).id);
    // Act
    const first = await listTools(org, { limit: 2, offset: 0 });
    const byOffset = await listTools(org, { limit: 2, offset: 2 });
    const byCursor = await listTools(org, { limit: 2, cursor: first.meta.next_cursor! });
    const last = await listTools(org, { limit: 2, offset: 4 });
    // Assess
    expect(first.meta).toMatchObject({ total: 5, limit: 2, offset: 0 });
    expect(first.items.map((t) => t.id)).toEqual(ids.slice(0, 2));
    expect(byOffset.items.map((t) => t.id)).toEqual(ids.slice(2, 4));
    expect(byCursor.items.map((t) => t.id)).toEqual(ids.slice(2, 4));
    expect(last.items.map((t) => t.id)).toEqual(ids.slice(4));
    expect(last.meta.next_cursor).toBeNull();
  });

  it('patches only the supplied fields', async () => {
    const org = uuidv7();
    const tool = await createTool(org, body({ description: 'Orders' }));
    const updated = await updateTool(org, tool.id, UpdateToolBody.parse({ isActive: false }));
    expect(updated).toMatchObject({ isActive: false, description: 'Orders', name: 'Order lookup', definition: definition() });
    expect(updated.updatedAt >= tool.updatedAt).toBe(true);
    expect(await getTool(org, tool.id)).toEqual(updated);
  });

  it('keeps both fields when two PATCHes race', async () => {
    const org = uuidv7();
    const tool = await createTool(org, body());
    await Promise.all([
      updateTool(org, tool.id, { description: 'new description' }),
      updateTool(org, tool.id, { name: 'New name' }),
      updateTool(org, tool.id, { isActive: false }),
    ]);
    expect(await getTool(org, tool.id)).toMatchObject({ description: 'new description', name: 'New name', isActive: false });
  });

  it('turns a function tool into a webhook only with a url, and back, dropping the webhook fields', async () => {
    // Prepare
    const org = uuidv7();
    const tool = await createTool(org, body());
    // Act
    const noUrl = await rejection(updateTool(org, tool.id, { type: 'webhook' }));
    const webhook = await updateTool(org, tool.id, UpdateToolBody.parse({ type: 'webhook', url: 'https://example.com/hook', timeout_ms: 5000 }));
    const methodOnFunction = await rejection(updateTool(org, tool.id, { type: 'function', method: 'GET' }));
    const back = await updateTool(org, tool.id, { type: 'function' });
    // Assess
    expect(noUrl).toBeInstanceOf(ValidationError);
    expect(noUrl.details.fields).toEqual([{ path: 'url', message: 'is required for webhook tools' }]);
    expect(webhook).toMatchObject({ type: 'webhook', url: 'https://example.com/hook', method: 'POST', headers: {}, timeout_ms: 5000 });
    expect(methodOnFunction.details.fields).toEqual([{ path: 'method', message: 'is only allowed on webhook tools' }]);
    expect(back.type).toBe('function');
    const stored = await getTool(org, tool.id);
    expect(stored).toEqual(back);
    for (const field of ['url', 'method', 'headers', 'timeout_ms']) expect(stored).not.toHaveProperty(field);
  });

  it('rejects webhook fields on a function tool and a webhook without url', async () => {
    const org = uuidv7();
    const onFunction = await rejection(createTool(org, body({ url: 'https://example.com', headers: { 'x-a': '1' } })));
    const noUrl = await rejection(createTool(org, body({ type: 'webhook' })));
    const patched = await createTool(org, body());
    const urlOnFunction = await rejection(updateTool(org, patched.id, { url: 'https://example.com' }));
    expect(onFunction.details.fields).toEqual([
      { path: 'url', message: 'is only allowed on webhook tools' },
      { path: 'headers', message: 'is only allowed on webhook tools' },
    ]);
    expect(noUrl.details.fields).toEqual([{ path: 'url', message: 'is required for webhook tools' }]);
    expect(urlOnFunction.statusCode).toBe(400);
    expect((await listTools(org, { limit: 10 })).meta.total).toBe(1);
  });

  it('requires https for webhooks unless running locally', async () => {
    const org = uuidv7();
    withRuntime('aws');
    const remote = await rejection(createTool(org, body({ type: 'webhook', url: 'http://example.com/hook' })));
    withRuntime('local');
    const local = await createTool(org, body({ type: 'webhook', url: 'http://localhost:4010/hook' }));
    expect(remote.details.fields).toEqual([{ path: 'url', message: 'must use https' }]);
    expect(local.url).toBe('http://localhost:4010/hook');
  });

  it('validates the definition and the webhook fields by shape', () => {
    const params = (p: Record<string, unknown>) => ({ name: 'T', definition: { name: 'fn', parameters: { type: 'object', ...p } } });
    expect(invalidPaths(CreateToolBody, params({ properties: { a: { type: 'string', description: 'A' } }, required: ['a', 'b'] }))).toEqual([
      'definition.parameters.required.1',
    ]);
    expect(invalidPaths(CreateToolBody, params({ properties: { a: { type: 'date' } } }))).toEqual(['definition.parameters.properties.a.type']);
    expect(invalidPaths(CreateToolBody, params({ properties: { 'bad name': { type: 'string' } } }))).toEqual(['definition.parameters.properties.bad name']);
    expect(invalidPaths(CreateToolBody, params({ properties: { a: { type: 'string', items: { type: 'string' } } } }))).toEqual([
      'definition.parameters.properties.a.items',
    ]);
    expect(invalidPaths(CreateToolBody, params({ properties: { a: { type: 'integer', enum: [1, 'two'] } } }))).toEqual([
      'definition.parameters.properties.a.enum.1',
    ]);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'has space' } })).toEqual(['definition.name']);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn', parameters: { type: 'array' } } })).toEqual(['definition.parameters.type']);
    expect(invalidPaths(CreateToolBody, { definition: { name: 'fn' } })).toEqual(['name']);
    expect(invalidPaths(CreateToolBody, { name: 'T' })).toEqual(['definition']);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn' }, unknown: 1 })).toEqual(['unknown']);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn' }, type: 'plugin' })).toEqual(['type']);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn' }, url: 'ftp://example.com' })).toEqual(['url']);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn' }, method: 'HEAD', timeout_ms: 30_001 })).toEqual(['method', 'timeout_ms']);
    const manyHeaders = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']));
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn' }, headers: manyHeaders })).toEqual(['headers']);
    expect(invalidPaths(CreateToolBody, { name: 'T', definition: { name: 'fn' }, headers: { 'bad header': 'v', host: 'x', ok: 'a\r\nb' } })).toEqual([
      'headers.bad header',
      'headers.host',
      'headers.ok',
    ]);
    expect(invalidPaths(CreateToolBody, params({ properties: { a: { type: 'array', items: { type: 'string' } } }, required: ['a'] }))).toEqual([]);
  });

  it('rejects an empty PATCH', async () => {
    const org = uuidv7();
    const tool = await createTool(org, body());
    expect(await rejection(updateTool(org, tool.id, {}))).toBeInstanceOf(ValidationError);
  });

  it('answers 404 for another organization\'s tool', async () => {
    const [owner, other] = [uuidv7(), uuidv7()];
    const tool = await createTool(owner, body());
    for (const attempt of [getTool(other, tool.id), updateTool(other, tool.id, { name: 'x' }), deleteTool(other, tool.id)]) {
      expect(await rejection(attempt)).toBeInstanceOf(NotFoundError);
    }
    expect((await listTools(other, { limit: 10 })).items).toEqual([]);
    expect(await getTool(owner, tool.id)).toEqual(tool);
  });

  it('reads many tools by id for the engine: live ones of the organization only, sealed secret kept', async () => {
    // Prepare
    const [org, other] = [uuidv7(), uuidv7()];
    const hook = await createTool(org, body({ name: 'Hook', type: 'webhook', url: 'https://example.com/hook' }));
    const fn = await createTool(org, body({ name: 'Fn', definition: definition('other_fn') }));
    const retiring = await createTool(org, body({ name: 'Retiring' }));
    const foreign = await createTool(other, body({ name: 'Foreign' }));
    await transact([updateExisting(keys.tool(org, retiring.id), { deleting_at: new Date().toISOString() })]);
    // Act
    const read = await getToolsByIds(org, [fn.id, hook.id, hook.id, retiring.id, foreign.id, uuidv7()]);
    // Assess
    expect(read.map((t) => t.id).sort()).toEqual([hook.id, fn.id].sort());
    expect(read.find((t) => t.id === hook.id)!.secret_sealed).toEqual(expect.any(String));
    expect(await getToolsByIds(org, [])).toEqual([]);
  });

  it('deletes a tool permanently and removes it from the agents that selected it', async () => {
    // Prepare
    const org = uuidv7();
    const [kept, removed] = [await createTool(org, body({ name: 'Kept' })), await createTool(org, body({ name: 'Removed' }))];
    const both = await createAgent(org, { name: 'Both', selected_tools: [{ tool_id: kept.id, note: 'x' }, { tool_id: removed.id }] });
    const onlyRemoved = await createAgent(org, { name: 'Only removed', selected_tools: [{ tool_id: removed.id }] });
    const unrelated = await createAgent(org, { name: 'Unrelated', selected_tools: [{ tool_id: kept.id }] });
    // Act
    await deleteTool(org, removed.id);
    // Assess
    expect(await rejection(getTool(org, removed.id))).toBeInstanceOf(NotFoundError);
    expect(await rejection(deleteTool(org, removed.id))).toBeInstanceOf(NotFoundError);
    expect((await getAgent(org, both.id)).selected_tools).toEqual([{ tool_id: kept.id, note: 'x' }]);
    expect((await getAgent(org, onlyRemoved.id)).selected_tools).toEqual([]);
    expect(await getAgent(org, unrelated.id)).toEqual(unrelated);
    const list = await listTools(org, { limit: 10 });
    expect(list.meta.total).toBe(1);
    expect(list.items.map((t) => t.id)).toEqual([kept.id]);
    // An agent can no longer select the deleted tool.
    const reselect = await rejection(updateAgent(org, both.id, { selected_tools: [{ tool_id: removed.id }] }));
    expect(reselect.details.fields).toEqual([{ path: 'selected_tools.0.tool_id', message: `tool ${removed.id} does not exist in this organization` }]);
  });

  it('finishes a delete that died after retiring the tool: no reader sees it, no agent can select it, the next DELETE cleans up', async () => {
    // Prepare: a delete that crashed after phase 1 (the tool is marked, the agents are not cleaned yet)
    const org = uuidv7();
    const tool = await createTool(org, body({ name: 'Half deleted' }));
    const agent = await createAgent(org, { name: 'Holder', selected_tools: [{ tool_id: tool.id }] });
    await transact([updateExisting(keys.tool(org, tool.id), { deleting_at: new Date().toISOString() })], [{ orgId: org, collection: 'tools', delta: -1 }]);
    // Assess: already gone for readers and for new references
    expect(await rejection(getTool(org, tool.id))).toBeInstanceOf(NotFoundError);
    expect((await listTools(org, { limit: 10 })).items).toEqual([]);
    expect(await rejection(updateTool(org, tool.id, { name: 'x' }))).toBeInstanceOf(NotFoundError);
    const other = await rejection(createAgent(org, { name: 'New', selected_tools: [{ tool_id: tool.id }] }));
    expect(other).toBeInstanceOf(ValidationError);
    // Act: the client retries the DELETE
    await deleteTool(org, tool.id);
    // Assess: the agent is cleaned, the item is gone, the count stayed exact
    expect((await getAgent(org, agent.id)).selected_tools).toEqual([]);
    expect(await rejection(deleteTool(org, tool.id))).toBeInstanceOf(NotFoundError);
    expect((await listTools(org, { limit: 10 })).meta.total).toBe(0);
  });

  it('cleans agents even when they change during the cleanup', async () => {
    const org = uuidv7();
    const [a, b] = [await createTool(org, body()), await createTool(org, body())];
    const agents = await Promise.all(Array.from({ length: 5 }, (_, i) => createAgent(org, { name: `Agent ${i}`, selected_tools: [{ tool_id: a.id }, { tool_id: b.id }] })));
    await deleteTool(org, a.id);
    // A second pass finds nothing left, even with concurrent unrelated patches.
    const [changed] = await Promise.all([removeToolFromAgents(org, b.id), ...agents.map((agent, i) => updateAgent(org, agent.id, { agent_name: `Renamed ${i}` }))]);
    expect(changed).toBe(5);
    for (const [i, agent] of agents.entries()) {
      expect(await getAgent(org, agent.id)).toMatchObject({ selected_tools: [], agent_name: `Renamed ${i}` });
    }
  });
});
