/**
 * Agent-to-agent hand-off (issue 37 item 2; operations.md "Agent-to-agent hand-off"): over HTTP
 * against the local runtime (simulated carrier) with a stand-in Chat Completions model that
 * records every request, so each test can see which agent's prompt and tools the model was given.
 * Chats (API and widget) handed from one agent to another and back, a refused loop, the cap of
 * five, 400s and tenant isolation, the OpenAI-compatible endpoint, agent tests' `handed_off_to`,
 * and a simulated call. The relay's hand-off is in handoff-relay.test.ts (it needs Twilio's stand-in).
 */
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { usePlatform } from '../support/platform';
import { uniquePhone } from '../support/numbers';
import { until } from '../support/until';

const keyA = `vap_test_handoff_a_${Date.now().toString(36)}_0123456789`;
const keyB = `vap_test_handoff_b_${Date.now().toString(36)}_0123456789`;
let model: OpenAiStandIn;
const ready = startOpenAiStandIn().then((m) => (model = m));
beforeAll(() => ready);
afterAll(() => model?.close());

const local = usePlatform({
  apiKeys: [keyA, keyB],
  get env() {
    return { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model', SIMULATED_CALL_SECONDS: '2' };
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

/** The system prompt and the tool names (with handoff_to_agent's agent enum) of a recorded model request. */
const systemOf = (body: any): string => body.messages.find((m: any) => m.role === 'system')?.content ?? '';
const toolsOf = (body: any): string[] => (body.tools ?? []).map((t: any) => t.function.name);
const handoffEnum = (body: any): string[] => (body.tools ?? []).find((t: any) => t.function.name === 'handoff_to_agent')?.function.parameters.properties.agent_id.enum ?? [];
const handOff = (agentId: string, reason?: string) => ({ toolCalls: [{ name: 'handoff_to_agent', arguments: { agent_id: agentId, ...(reason ? { reason } : {}) } }] });
/** What the model was told by the last tool message of a request. */
const lastToolResult = (body: any) => JSON.parse(([...body.messages].reverse().find((m: any) => m.role === 'tool')?.content ?? '').match(/<tool_result>\n([\s\S]*)\n<\/tool_result>/)?.[1] ?? 'null');

async function agent(body: Record<string, unknown>, key?: string): Promise<string> {
  const res = await api('POST', '/api/v1/agents', { body: { voice_pipeline: 'realtime', ...body }, ...(key ? { key } : {}) });
  expect(res.status).toBe(200);
  return res.body.data.id;
}
const listing = (agentId: string, description = `Agent ${agentId.slice(-4)}`, extra: Record<string, unknown> = {}) => ({ agent_id: agentId, description, ...extra });
async function lists(agentId: string, ...entries: Record<string, unknown>[]) {
  const res = await api('PATCH', `/api/v1/agents/${agentId}`, { body: { handoff_agents: entries } });
  expect(res.status).toBe(200);
  return res;
}
const handedOffEvents = async (chatOrCallId: string) => {
  const res = await api('GET', '/api/v1/events?type=conversation.handed_off&limit=100');
  return res.body.data.filter((e: any) => e.data.conversation.id === chatOrCallId).reverse();
};

/** Front desk (A) hands to billing (B), which lists A back; B has end_call and its own prompt. */
async function deskAndBilling() {
  const billing = await agent({ name: 'Billing', agent_name: 'Bea', prompt: 'You are {{agent_name}}, billing, for {{company}}.', selected_tools: [{ type: 'end_call' }] });
  const desk = await agent({ name: 'Desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}, front desk, for {{company}}.', handoff_agents: [listing(billing, 'Billing: invoices and refunds')] });
  await lists(billing, listing(desk, 'Front desk: anything that is not billing'));
  return { desk, billing };
}

describe('a chat handed off', () => {
  it('goes from A to B within one turn (B answers from its own prompt and tools), stays with B, and back to A (B lists A): segments, events, list filters', async () => {
    const { desk, billing } = await deskAndBilling();
    const chat = await api('POST', '/api/v1/chats', { body: { agent_id: desk, dynamic_variables: { company: 'Acme' } } });
    expect(chat.status).toBe(200);
    expect(chat.body.data).toMatchObject({ agent_id: desk, current_agent_id: desk, segments: [{ agent_id: desk, agent_version: null, reason: null }] });
    const chatId = chat.body.data.id;
    model.reset();
    model.script(handOff(billing, 'invoice question'), { text: 'Bea here, billing. Which invoice?' });

    const first = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'I have a question about my invoice.' } });
    expect(first.status).toBe(200);
    expect(first.body.data.messages.map((m: any) => [m.role, m.name ?? m.content])).toEqual([
      ['user', 'I have a question about my invoice.'],
      ['tool_call', 'handoff_to_agent'],
      ['tool_result', 'handoff_to_agent'],
      ['agent', 'Bea here, billing. Which invoice?'],
    ]);
    expect(first.body.data.messages[2].result).toEqual({ handed_off_to: billing, agent_name: 'Bea', reason: 'invoice question' });
    // The first request was A's (its prompt, handoff_to_agent listing B); the second, in the same turn, B's.
    const [asked, answered] = model.requests.map((r) => r.body);
    expect(systemOf(asked)).toBe('You are Ava, front desk, for Acme.');
    expect(toolsOf(asked)).toEqual(['handoff_to_agent']);
    expect(handoffEnum(asked)).toEqual([billing]);
    expect(systemOf(answered)).toBe('You are Bea, billing, for Acme.');
    expect(toolsOf(answered)).toEqual(['end_call', 'handoff_to_agent']);
    expect(handoffEnum(answered)).toEqual([desk]);
    // The history is kept: B sees the user's words and the hand-off.
    expect(answered.messages.some((m: any) => m.role === 'user' && m.content === 'I have a question about my invoice.')).toBe(true);

    const read = await api('GET', `/api/v1/chats/${chatId}`);
    expect(read.body.data).toMatchObject({ agent_id: desk, agent_version: null, current_agent_id: billing, current_agent_version: null });
    expect(read.body.data.segments).toEqual([
      { agent_id: desk, agent_version: null, started_at: chat.body.data.started_at, reason: null },
      { agent_id: billing, agent_version: null, started_at: expect.any(String), reason: 'invoice question' },
    ]);

    // The next turn is B's from its start.
    model.reset();
    model.script({ text: 'Invoice 42 is paid.' });
    const second = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'Invoice 42.' } });
    expect(second.body.data.messages.at(-1).content).toBe('Invoice 42 is paid.');
    expect(systemOf(model.requests[0]!.body)).toBe('You are Bea, billing, for Acme.');

    // Back to A: A is in the chain, but B's own list names A, so A takes it back.
    model.reset();
    model.script(handOff(desk, 'not billing'), { text: 'Ava again. How else can I help?' });
    const third = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'And my opening hours question?' } });
    expect(third.body.data.messages.at(-1).content).toBe('Ava again. How else can I help?');
    expect(systemOf(model.requests[1]!.body)).toBe('You are Ava, front desk, for Acme.');
    const back = (await api('GET', `/api/v1/chats/${chatId}`)).body.data;
    expect(back.current_agent_id).toBe(desk);
    expect(back.segments.map((s: any) => [s.agent_id, s.reason])).toEqual([[desk, null], [billing, 'invoice question'], [desk, 'not billing']]);

    const events = await handedOffEvents(chatId);
    expect(events.map((e: any) => [e.data.from.agent_id, e.data.to.agent_id, e.data.reason])).toEqual([[desk, billing, 'invoice question'], [billing, desk, 'not billing']]);
    expect(events[0].data.conversation).toMatchObject({ type: 'chat', id: chatId, channel: 'api', agent_id: desk, current_agent_id: billing });
    expect(events[1].data.conversation.segments).toHaveLength(3);

    // Lists: agent_id is the agent the chat started with; handled_by any agent that handled it.
    const byStart = await api('GET', `/api/v1/chats?agent_id=${billing}`);
    expect(byStart.body.data.map((c: any) => c.id)).not.toContain(chatId);
    const byHandler = await api('GET', `/api/v1/chats?handled_by=${billing}`);
    expect(byHandler.body.data.map((c: any) => c.id)).toContain(chatId);
    expect(byHandler.body.meta.total).toBe(byHandler.body.data.length);

    // Ended: the analysis takes the final agent's settings; the chat still says who handled what.
    const ended = await api('POST', `/api/v1/chats/${chatId}/end`);
    expect(ended.body.data.segments).toHaveLength(3);
  });

  it('refuses a hand-off back to an agent already in the chain that does not list the current one ("already handled"), and an agent not listed', async () => {
    const field = (name: string) => [{ name, type: 'string', description: `What ${name} says` }];
    const c = await agent({ name: 'C', prompt: 'You are C.', analysis_fields: field('c_outcome') });
    const b = await agent({ name: 'B', prompt: 'You are B.', handoff_agents: [listing(c)] });
    const a = await agent({ name: 'A', prompt: 'You are A.', handoff_agents: [listing(b)], analysis_fields: field('a_outcome') });
    await lists(c, listing(a));
    const chatId = (await api('POST', '/api/v1/chats', { body: { agent_id: a } })).body.data.id;
    model.reset();
    model.script(handOff(b), handOff(c), handOff(a, 'loop'), (body) => ({ text: `C goes on: ${JSON.stringify(lastToolResult(body))}` }));
    const turn = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'Go around.' } });
    expect(turn.status).toBe(200);
    const results = turn.body.data.messages.filter((m: any) => m.role === 'tool_result').map((m: any) => m.result);
    expect(results[0]).toMatchObject({ handed_off_to: b });
    expect(results[1]).toMatchObject({ handed_off_to: c });
    expect(results[2].error).toMatch(/already handled this conversation/);
    // C (who asked) answered on: the refusal is what the model heard.
    expect(systemOf(model.requests[3]!.body)).toBe('You are C.');
    const read = (await api('GET', `/api/v1/chats/${chatId}`)).body.data;
    expect(read.segments.map((s: any) => s.agent_id)).toEqual([a, b, c]);
    expect(await handedOffEvents(chatId)).toHaveLength(2);

    // An agent C does not list (B): the model is told, nothing changes.
    model.reset();
    model.script(handOff(b), { text: 'Still C.' });
    const next = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'Once more.' } });
    expect(next.body.data.messages.find((m: any) => m.role === 'tool_result').result.error).toMatch(/must be one of|not one of the agents/);
    expect((await api('GET', `/api/v1/chats/${chatId}`)).body.data.segments).toHaveLength(3);

    // The analysis fills the fields of the agent that finished the chat (C), not of the one it started with.
    await api('POST', `/api/v1/chats/${chatId}/end`);
    const analyzed = await until(async () => (await api('GET', `/api/v1/chats/${chatId}`)).body.data, (x) => !!x.analysis, 'the analysis');
    expect(Object.keys(analyzed.analysis.data)).toEqual(['c_outcome']);
  });

  it('makes at most five hand-offs per conversation', async () => {
    const y = await agent({ name: 'Y', prompt: 'You are Y.' });
    const x = await agent({ name: 'X', prompt: 'You are X.', handoff_agents: [listing(y)] });
    await lists(y, listing(x));
    const chatId = (await api('POST', '/api/v1/chats', { body: { agent_id: x } })).body.data.id;
    model.reset();
    // Five rounds in one turn (the most a turn has), each a hand-off to the other one.
    model.script(handOff(y), handOff(x), handOff(y), handOff(x), handOff(y), { text: 'Y here.' });
    const turn = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'Ping-pong.' } });
    expect(turn.body.data.messages.at(-1).content).toBe('Y here.');
    expect((await api('GET', `/api/v1/chats/${chatId}`)).body.data.segments).toHaveLength(6);
    model.reset();
    model.script(handOff(x), (body) => ({ text: `Refused: ${lastToolResult(body).error}` }));
    const sixth = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'Once more.' } });
    expect(sixth.body.data.messages.at(-1).content).toMatch(/^Refused: .*handed off 5 times/);
    const read = (await api('GET', `/api/v1/chats/${chatId}`)).body.data;
    expect(read.segments).toHaveLength(6);
    expect(read.current_agent_id).toBe(y);
    expect(await handedOffEvents(chatId)).toHaveLength(5);
  });
});

describe('handoff_agents', () => {
  it('is validated: 400s name the path; another organization\'s agent is refused; the version snapshot keeps it', async () => {
    const other = await agent({ name: 'Other org' }, keyB);
    const b = await agent({ name: 'B' });
    const bad = async (entries: unknown, path: string, message?: RegExp) => {
      const res = await api('POST', '/api/v1/agents', { body: { name: 'Bad', handoff_agents: entries } });
      expect(res.status).toBe(400);
      const fields = res.body.error.details.fields.map((f: any) => f.path);
      expect(fields).toContain(path);
      if (message) expect(JSON.stringify(res.body.error)).toMatch(message);
    };
    await bad([{ agent_id: b }], 'handoff_agents.0.description');
    await bad([{ agent_id: b, description: '  ' }], 'handoff_agents.0.description');
    await bad([listing(b), listing(b)], 'handoff_agents.1.agent_id', /listed twice/);
    await bad(Array.from({ length: 11 }, () => listing(b)), 'handoff_agents');
    await bad([{ agent_id: 'not-a-uuid', description: 'x' }], 'handoff_agents.0.agent_id');
    await bad([listing(b, 'x', { agent_version: 0 })], 'handoff_agents.0.agent_version');
    await bad([listing(b, 'x', { agent_version: 3 })], 'handoff_agents.0.agent_version', /has no version 3/);
    await bad([listing(other)], 'handoff_agents.0.agent_id', /does not exist in this organization/);
    await bad([listing('01936f4e-0000-7000-8000-000000000000')], 'handoff_agents.0.agent_id');
    const self = await agent({ name: 'Self' });
    const selfish = await api('PATCH', `/api/v1/agents/${self}`, { body: { handoff_agents: [listing(self)] } });
    expect(selfish.status).toBe(400);
    expect(selfish.body.error.details.fields[0].path).toBe('handoff_agents.0.agent_id');
    // Kept, and frozen in a version.
    const a = await agent({ name: 'A', handoff_agents: [listing(b, 'Billing')] });
    expect((await api('GET', `/api/v1/agents/${a}`)).body.data.handoff_agents).toEqual([{ agent_id: b, description: 'Billing' }]);
    const version = await api('POST', `/api/v1/agents/${a}/versions`, { body: {} });
    expect(version.status).toBe(200);
    expect(version.body.data.config.handoff_agents).toEqual([{ agent_id: b, description: 'Billing' }]);
    expect((await api('GET', '/api/v1/agents?limit=100')).body.data.find((x: any) => x.id === b).handoff_agents).toEqual([]);
    // A deleted agent leaves the lists of the agents that handed off to it (the agent-cleanup job); the version keeps what it froze.
    const c = await agent({ name: 'C' });
    expect((await api('PATCH', `/api/v1/agents/${a}`, { body: { handoff_agents: [listing(b, 'Billing'), listing(c, 'C')] } })).status).toBe(200);
    expect((await api('DELETE', `/api/v1/agents/${b}`)).status).toBe(200);
    await until(async () => (await api('GET', `/api/v1/agents/${a}`)).body.data.handoff_agents, (list) => list.length === 1, 'the deleted agent leaving the list');
    expect((await api('GET', `/api/v1/agents/${a}`)).body.data.handoff_agents).toEqual([{ agent_id: c, description: 'C' }]);
  });

  it('follows the listed agent\'s published version at the moment of the hand-off, or the pinned one', async () => {
    const b = await agent({ name: 'B', prompt: 'B draft one.' });
    expect((await api('POST', `/api/v1/agents/${b}/versions`, { body: {} })).status).toBe(200);
    await api('PATCH', `/api/v1/agents/${b}`, { body: { prompt: 'B draft two.' } });
    const a = await agent({ name: 'A', handoff_agents: [listing(b)] });
    const pinned = await agent({ name: 'P', handoff_agents: [listing(b, 'B v1', { agent_version: 1 })] });
    /** A chat of `start` handed to B: the prompt B answered with, and the segment it opened. */
    const handToB = async (start: string) => {
      const chatId = (await api('POST', '/api/v1/chats', { body: { agent_id: start } })).body.data.id;
      model.reset();
      model.script(handOff(b), { text: 'B.' });
      await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'To B.' } });
      return { prompt: systemOf(model.requests[1]!.body), segment: (await api('GET', `/api/v1/chats/${chatId}`)).body.data.segments[1] };
    };
    expect(await handToB(a)).toEqual({ prompt: 'B draft one.', segment: expect.objectContaining({ agent_id: b, agent_version: 1 }) });
    expect(await handToB(pinned)).toEqual({ prompt: 'B draft one.', segment: expect.objectContaining({ agent_id: b, agent_version: 1 }) });
    // No published version: the draft (agent_version null); the pinned entry keeps version 1.
    await api('PATCH', `/api/v1/agents/${b}`, { body: { published_version: null } });
    expect(await handToB(a)).toEqual({ prompt: 'B draft two.', segment: expect.objectContaining({ agent_id: b, agent_version: null }) });
    expect(await handToB(pinned)).toEqual({ prompt: 'B draft one.', segment: expect.objectContaining({ agent_id: b, agent_version: 1 }) });
  });
});

describe('other channels', () => {
  it('hands a widget chat off', async () => {
    const { desk, billing } = await deskAndBilling();
    const widget = await api('POST', '/api/v1/widget-settings', { body: { name: 'Shop', allowed_origins: ['https://shop.example'] } });
    expect(widget.status).toBe(200);
    const widgetId = widget.body.data.id;
    expect((await api('PATCH', `/api/v1/agents/${desk}`, { body: { widget_settings_id: widgetId } })).status).toBe(200);
    const origin = 'https://shop.example';
    const started = await api('POST', `/api/v1/widget/${widgetId}/chats`, { key: null, headers: { origin }, body: {} });
    expect(started.status).toBe(200);
    const { id: chatId, token } = started.body.data;
    model.reset();
    model.script(handOff(billing, 'refund'), { text: 'Billing here.' });
    const turn = await api('POST', `/api/v1/widget/${widgetId}/chats/${chatId}/messages`, { key: null, headers: { origin, authorization: `Bearer ${token}` }, body: { content: 'A refund, please.' } });
    expect(turn.status).toBe(200);
    expect(systemOf(model.requests[1]!.body)).toMatch(/^You are Bea, billing/);
    const read = (await api('GET', `/api/v1/chats/${chatId}`)).body.data;
    expect(read).toMatchObject({ channel: 'widget', agent_id: desk, current_agent_id: billing });
    expect((await handedOffEvents(chatId))[0].data.conversation.channel).toBe('widget');
  });

  it('the OpenAI-compatible endpoint hands off within the request\'s tool loop and says so in agent_handoffs; model stays the requested one', async () => {
    const { desk, billing } = await deskAndBilling();
    model.reset();
    model.script(handOff(billing, 'billing'), { text: 'Bea: paid.' });
    const res = await api('POST', '/api/v1/openai/v1/chat/completions', { body: { model: desk, messages: [{ role: 'user', content: 'Is invoice 42 paid?' }] } });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe(`${desk}@draft`);
    expect(res.body.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'Bea: paid.' }, finish_reason: 'stop' });
    expect(res.body.agent_handoffs).toEqual([{ from: { agent_id: desk, agent_version: null }, to: { agent_id: billing, agent_version: null }, reason: 'billing' }]);
    expect(systemOf(model.requests[1]!.body)).toMatch(/^You are Bea, billing/);
    // Stateless: the next request starts with the requested agent again; no event for a request.
    model.reset();
    model.script({ text: 'Ava.' });
    const next = await api('POST', '/api/v1/openai/v1/chat/completions', { body: { model: desk, messages: [{ role: 'user', content: 'Hi' }] } });
    expect(next.body.agent_handoffs).toBeUndefined();
    expect(systemOf(model.requests[0]!.body)).toMatch(/^You are Ava, front desk/);
    // A caller's tool may not take the built-in's name.
    const clash = await api('POST', '/api/v1/openai/v1/chat/completions', { body: { model: desk, messages: [{ role: 'user', content: 'Hi' }], tools: [{ type: 'function', function: { name: 'handoff_to_agent' } }] } });
    expect(clash.status).toBe(400);
  });

  it('agent tests judge handed_off_to', async () => {
    const { desk, billing } = await deskAndBilling();
    const test = await api('POST', `/api/v1/agents/${desk}/tests`, {
      body: { name: 'Billing goes to billing', user: { turns: ['My invoice is wrong.', 'Thanks.'] }, criteria: [{ type: 'handed_off_to', agent_id: billing }, { type: 'reply_contains', text: 'Bea', turn: 1 }] },
    });
    expect(test.status).toBe(200);
    const failing = await api('POST', `/api/v1/agents/${desk}/tests`, {
      body: { name: 'Not to the desk', user: { turns: ['Hi.'] }, criteria: [{ type: 'handed_off_to', agent_id: desk }] },
    });
    model.reset();
    // The two tests run at once: every answer is chosen from the request, not from the order.
    const lastUser = (body: any) => [...body.messages].reverse().find((m: any) => m.role === 'user')?.content ?? '';
    const step = (body: any) => {
      if (systemOf(body).startsWith('You are Bea')) return { text: 'Bea here.' };
      return body.messages.at(-1).role === 'user' && lastUser(body).includes('My invoice is wrong.') ? handOff(billing, 'invoice') : { text: 'Hello.' };
    };
    model.script(...Array.from({ length: 8 }, () => step));
    const started = await api('POST', `/api/v1/agents/${desk}/test-runs`, { body: { test_ids: [test.body.data.id, failing.body.data.id] } });
    expect(started.status).toBe(200);
    const run = await until(async () => (await api('GET', `/api/v1/agents/${desk}/test-runs/${started.body.data.id}`)).body.data, (r) => r?.status === 'completed', 'the run');
    const byTest = new Map(run.results.map((r: any) => [r.test_id, r]));
    const passed: any = byTest.get(test.body.data.id);
    expect(passed.criteria.map((c: any) => [c.type, c.verdict])).toEqual([['handed_off_to', 'passed'], ['reply_contains', 'passed']]);
    expect(passed.tool_calls[0]).toMatchObject({ name: 'handoff_to_agent', answered_by: 'platform', result: { handed_off_to: billing } });
    const failed: any = byTest.get(failing.body.data.id);
    expect(failed.criteria[0]).toMatchObject({ type: 'handed_off_to', verdict: 'failed' });
    const bad = await api('POST', `/api/v1/agents/${desk}/tests`, { body: { name: 'x', user: { turns: ['Hi'] }, criteria: [{ type: 'handed_off_to' }] } });
    expect(bad.status).toBe(400);
  });

  it('a simulated call is handed off and back: segments on the call, events, the transcript from both agents', async () => {
    const { desk, billing } = await deskAndBilling();
    const number = await api('POST', '/api/v1/phone-numbers/import', { body: { phone: uniquePhone(), type: 'pstn' } });
    expect(number.status).toBe(200);
    model.reset();
    // Each answer chosen from the request (whose prompt, what was said last), not from the order.
    const step = (body: any) => {
      const bea = systemOf(body).startsWith('You are Bea');
      if (body.messages.at(-1).role === 'tool') return { text: bea ? 'Bea, billing.' : 'Ava again.' };
      const said = body.messages.at(-1).content;
      if (said === 'My invoice.' && !bea) return handOff(billing, 'invoice');
      if (said === 'Back to the desk, please.' && bea) return handOff(desk, 'done with billing');
      return { text: `Unexpected: ${said}` };
    };
    model.script(...Array.from({ length: 6 }, () => step));
    const placed = await api('POST', '/api/v1/calls', {
      // The simulated carrier answers a number ending in 0-5 (6-9: voicemail, no answer, busy, failure).
      body: { agent_id: desk, from_phone_number: number.body.data.phone_number, to_phone_number: `${uniquePhone().slice(0, -1)}0`, dynamic_variables: { company: 'Acme' }, metadata: { simulated_caller: ['My invoice.', 'Back to the desk, please.'] } },
    });
    expect(placed.status).toBe(200);
    const callId = placed.body.data.id;
    const call = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended', 'the call ends');
    expect(call.transcript.map((t: any) => t.text)).toEqual(expect.arrayContaining(['My invoice.', 'Bea, billing.', 'Back to the desk, please.', 'Ava again.']));
    // Each agent line says which agent spoke it (issue 42): the desk, billing after the hand-off, the desk again after the hand-back.
    expect(call.transcript.filter((t: any) => t.role === 'agent' && ['Bea, billing.', 'Ava again.'].includes(t.text)).map((t: any) => [t.text, t.agent_id])).toEqual([['Bea, billing.', billing], ['Ava again.', desk]]);
    expect(call.transcript.filter((t: any) => t.role === 'user').every((t: any) => t.agent_id === undefined)).toBe(true);
    expect(call.agent_id).toBe(desk);
    expect(call.segments.map((s: any) => [s.agent_id, s.reason])).toEqual([[desk, null], [billing, 'invoice'], [desk, 'done with billing']]);
    const events = await handedOffEvents(callId);
    expect(events.map((e: any) => [e.data.conversation.type, e.data.from.agent_id, e.data.to.agent_id])).toEqual([['call', desk, billing], ['call', billing, desk]]);
  });
});
