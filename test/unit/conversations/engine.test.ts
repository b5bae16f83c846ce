import type { LlmPort, LlmRequest, LlmResponse } from '../../../shared/adapters/llm/port';
import { LlmError } from '../../../shared/adapters/llm/port';
import { keptTurnOf, MAX_TOOL_ROUNDS, runTurn, toLlmMessages, TurnDeadlineError, type ConversationMessage, type TurnInput } from '../../../shared/domain/conversations/engine';
import type { RunnableTool } from '../../../shared/domain/conversations/tools/catalog';
import { conversationVariables, fillKnown, fillTemplate } from '../../../shared/domain/conversations/variables';

/** A model that answers from a script, one response per request, and keeps what it was asked. */
function scriptedModel(...replies: (Partial<LlmResponse> | Error)[]): LlmPort & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    name: 'local',
    requests,
    async complete(request) {
      // What was asked of the model, without the callbacks (functions are not cloned).
      const { onSent: _sent, ...asked } = request;
      requests.push(structuredClone(asked));
      const next = replies.shift() ?? { text: 'ok' };
      if (next instanceof Error) throw next;
      return { text: next.text ?? '', toolCalls: next.toolCalls ?? [], usage: next.usage ?? { promptTokens: 10, completionTokens: 5 } };
    },
  };
}

const fnTool: RunnableTool = {
  kind: 'function', toolId: 't1', name: 'lookup_order', description: 'Find an order',
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] }, selection: { tool_id: 't1' },
};
const endTool: RunnableTool = { kind: 'builtin', builtin: 'end_call', name: 'end_call', description: 'end', parameters: { type: 'object', properties: { reason: { type: 'string' } }, required: [] }, selection: { type: 'end_call' } };

function input(llm: LlmPort, over: Partial<TurnInput> = {}): TurnInput {
  return {
    llm, model: 'm', temperature: 0.2, system: 'You are helpful.', tools: [fnTool, endTool],
    conversation: { type: 'chat', id: 'c1', organization_id: 'o1', agent_id: 'a1', contact_id: null, dynamic_variables: {}, metadata: {} },
    history: [], userText: 'Hello', passages: [], deadlineMs: Date.now() + 10_000, ...over,
  };
}

describe('runTurn', () => {
  it('answers in text with the passages as sources, and sends the prompt, history and tools to the model', async () => {
    const llm = scriptedModel({ text: 'We open at 9.' });
    const passages = [{ doc_id: 'd1', url: 'https://example.com/hours', text: 'Open 9 to 5.', score: 2.5 }];
    const out = await runTurn(input(llm, { passages, history: [{ role: 'agent', content: 'Hi!' }], userText: 'When do you open?' }));
    expect(out.messages).toEqual([
      { role: 'user', content: 'When do you open?' },
      { role: 'agent', content: 'We open at 9.', sources: [{ doc_id: 'd1', url: 'https://example.com/hours', score: 2.5 }], agent_id: 'a1' },
    ]);
    expect(out.pending).toEqual([]);
    expect(out.usage).toEqual({ requests: 1, promptTokens: 10, completionTokens: 5 });
    const [req] = llm.requests;
    expect(req!.system).toBe('You are helpful.');
    expect(req!.passages).toEqual(passages);
    expect(req!.messages).toEqual([{ role: 'assistant', content: 'Hi!' }, { role: 'user', content: 'When do you open?' }]);
    expect(req!.tools.map((t) => t.name)).toEqual(['lookup_order', 'end_call']);
  });

  it('stops at a function tool with the call pending, then goes on with the result', async () => {
    const llm = scriptedModel({ toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"A7"}' }] }, { text: 'Your order shipped.' });
    const first = await runTurn(input(llm, { userText: 'Where is order A7?' }));
    expect(first.pending).toEqual([{ id: 'call_1', name: 'lookup_order', arguments: { order_id: 'A7' } }]);
    expect(first.messages.map((m) => m.role)).toEqual(['user', 'tool_call']);
    expect(first.roundsUsed).toBe(1);
    const second = await runTurn(input(llm, {
      history: first.messages, userText: undefined, roundsUsed: first.roundsUsed,
      toolResults: [{ tool_call_id: 'call_1', name: 'lookup_order', output: { status: 'shipped' } }],
    }));
    expect(second.messages).toEqual([
      { role: 'tool_result', content: '', tool_call_id: 'call_1', name: 'lookup_order', result: { status: 'shipped' } },
      { role: 'agent', content: 'Your order shipped.', sources: [], agent_id: 'a1' },
    ]);
    expect(llm.requests[1]!.messages).toEqual([
      { role: 'user', content: 'Where is order A7?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"A7"}' }] },
      { role: 'tool', toolCallId: 'call_1', name: 'lookup_order', content: '{"status":"shipped"}' },
    ]);
  });

  it('gives unknown tools and unparsable arguments back to the model as error results', async () => {
    const llm = scriptedModel(
      { toolCalls: [{ id: 'a', name: 'nope', arguments: '{}' }, { id: 'b', name: 'lookup_order', arguments: '{not json' }] },
      { text: 'Sorry.' },
    );
    const out = await runTurn(input(llm));
    const results = out.messages.filter((m) => m.role === 'tool_result');
    expect(results.map((r) => r.tool_call_id)).toEqual(['a', 'b']);
    expect((results[0]!.result as { error: string }).error).toMatch(/no tool named nope/);
    expect((results[1]!.result as { error: string }).error).toMatch(/invalid arguments/);
    expect(out.messages.at(-1)).toMatchObject({ role: 'agent', content: 'Sorry.' });
  });

  it('checks arguments against the tool\'s parameters (the one check of chats and calls): a function tool with invalid arguments is never handed to the caller', async () => {
    const llm = scriptedModel(
      { toolCalls: [{ id: 'c', name: 'lookup_order', arguments: '{"order_id": 42}' }, { id: 'd', name: 'lookup_order', arguments: '{}' }] },
      { text: 'Which order?' },
    );
    const out = await runTurn(input(llm));
    expect(out.pending).toEqual([]);
    const results = out.messages.filter((m) => m.role === 'tool_result');
    expect((results[0]!.result as { error: string }).error).toMatch(/invalid arguments: "order_id" must be a string/);
    expect((results[1]!.result as { error: string }).error).toMatch(/invalid arguments: "order_id" is required/);
    expect(out.messages.at(-1)).toMatchObject({ role: 'agent', content: 'Which order?' });
  });

  it('runs built-ins: end_call ends the conversation after the reply', async () => {
    const llm = scriptedModel({ toolCalls: [{ id: 'e', name: 'end_call', arguments: '{}' }] }, { text: 'Goodbye!' });
    const out = await runTurn(input(llm, { userText: 'bye' }));
    expect(out.effect).toEqual({ end: 'agent_ended' });
    expect(out.messages.at(-1)).toMatchObject({ role: 'agent', content: 'Goodbye!' });
    // After end_call the model is asked for its last words without tools.
    expect(llm.requests[1]!.tools).toEqual([]);
  });

  it(`calls tools for at most ${MAX_TOOL_ROUNDS} rounds, then asks for a reply without tools`, async () => {
    const loop = { toolCalls: [{ id: 'x', name: 'end_call', arguments: '{"reason":1}' }] };
    const llm = scriptedModel(...Array.from({ length: MAX_TOOL_ROUNDS }, () => loop), { text: 'Done.' });
    const out = await runTurn(input(llm));
    expect(llm.requests).toHaveLength(MAX_TOOL_ROUNDS + 1);
    expect(llm.requests.at(-1)!.tools).toEqual([]);
    expect(out.messages.at(-1)).toMatchObject({ role: 'agent', content: 'Done.' });
    // `reason` must be a string: every round's call was refused before it ran, so nothing ended.
    expect(out.effect).toEqual({});
  });

  it('lets a model failure through, keeping nothing', async () => {
    const llm = scriptedModel(new LlmError('timeout', 'slow', { provider: 'openai' }));
    await expect(runTurn(input(llm))).rejects.toBeInstanceOf(LlmError);
  });

  it('refuses a turn past its deadline', async () => {
    await expect(runTurn(input(scriptedModel(), { deadlineMs: Date.now() - 1 }))).rejects.toThrow(/ran out of time/);
  });
});

describe('toLlmMessages', () => {
  it('joins an agent reply and the tool calls after it into one assistant message', () => {
    expect(toLlmMessages([
      { role: 'agent', content: 'Let me check.' },
      { role: 'tool_call', content: '', tool_call_id: '1', name: 'a', arguments: { x: 1 } },
      { role: 'tool_call', content: '', tool_call_id: '2', name: 'b', arguments: {} },
      { role: 'tool_result', content: '', tool_call_id: '1', name: 'a', result: 'text answer' },
    ])).toEqual([
      { role: 'assistant', content: 'Let me check.', toolCalls: [{ id: '1', name: 'a', arguments: '{"x":1}' }, { id: '2', name: 'b', arguments: '{}' }] },
      { role: 'tool', toolCallId: '1', name: 'a', content: 'text answer' },
    ]);
  });
});

describe('variables', () => {
  it('fills contact fields, metadata, agent name and time; dynamic variables win; unknown ones become empty', () => {
    const vars = conversationVariables({
      agentName: 'Ava',
      contact: { first_name: 'Ada', last_name: 'L', email: 'a@x.io', phone: '+14155550100', company: 'ACME', metadata: { plan: 'gold', seats: 3 } },
      dynamicVariables: { 'contact.first_name': 'Countess' },
      now: new Date('2026-11-24T10:00:00.123Z'),
    });
    expect(fillTemplate('{{agent_name}} to {{contact.first_name}} ({{contact.metadata.plan}}, {{contact.metadata.seats}}) at {{current_time}}{{missing}}.', vars))
      .toBe('Ava to Countess (gold, 3) at 2026-11-24T10:00:00Z.');
    expect(fillKnown('Hi {{agent_name}} {{contact.first_name}}', { agent_name: 'Ava' })).toBe('Hi Ava {{contact.first_name}}');
  });

  it('carries what the turn did when the model fails after a platform tool ran (keptTurnOf)', async () => {
    // Prepare: end_call runs on the platform, then the model fails.
    const llm = scriptedModel({ toolCalls: [{ id: 'call_e', name: 'end_call', arguments: '{}' }] }, new LlmError('provider_error', 'down', { provider: 'openai', status: 500 }));
    // Act
    const err = await runTurn(input(llm, { userText: 'bye' })).catch((e) => e);
    // Assess
    expect(err).toBeInstanceOf(LlmError);
    const kept = keptTurnOf(err)!;
    expect(kept.toolsRan).toBe(1);
    expect(kept.roundsUsed).toBe(1);
    expect(kept.messages.map((m) => m.role)).toEqual(['user', 'tool_call', 'tool_result']);
    expect(kept.usage.requests).toBe(1);
  });

  it('says no platform tool ran when the model fails at once', async () => {
    const llm = scriptedModel(new LlmError('timeout', 'slow', { provider: 'openai' }));
    const err = await runTurn(input(llm)).catch((e) => e);
    expect(keptTurnOf(err)).toMatchObject({ toolsRan: 0, messages: [{ role: 'user', content: 'Hello' }] });
  });

  it('is out of time at the deadline, carrying the turn so far', async () => {
    const err = await runTurn(input(scriptedModel(), { deadlineMs: Date.now() - 1 })).catch((e) => e);
    expect(err).toBeInstanceOf(TurnDeadlineError);
    expect(keptTurnOf(err)?.toolsRan).toBe(0);
  });

  it('sends only the recent whole turns that fit the context budget, the new message always', async () => {
    // Prepare: 40 turns of ~1,000 estimated tokens each.
    const history: ConversationMessage[] = [];
    for (let i = 0; i < 40; i++) history.push({ role: 'user', content: `q${i} ${'w'.repeat(3_000)}` }, { role: 'agent', content: `a${i}` });
    const llm = scriptedModel({ text: 'ok' });
    // Act
    await runTurn(input(llm, { history, userText: 'latest', contextTokens: 8_000 }));
    // Assess
    const sent = llm.requests[0]!.messages;
    expect(sent.length).toBeLessThan(history.length);
    expect(sent[0]!.role).toBe('user');
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'latest' });
    expect(sent.at(-2)).toEqual({ role: 'assistant', content: 'a39' });
  });
});

describe('runTurn with a hand-off hook', () => {
  const handoffTool: RunnableTool = {
    kind: 'builtin', name: 'handoff_to_agent', description: 'hand off',
    parameters: { type: 'object', properties: { agent_id: { type: 'string', enum: ['b', 'c'] }, reason: { type: 'string' } }, required: ['agent_id'] }, selection: { type: 'handoff_to_agent' },
  };
  const segment = (agent_id: string, reason: string | null) => ({ agent_id, agent_version: null, started_at: '2026-01-01T00:00:00.000Z', reason });
  const billingTools: RunnableTool[] = [endTool];

  it('switches prompt, tools, model, temperature, passages and the conversation for the following requests of the same turn, and reports the switch', async () => {
    const llm = scriptedModel({ toolCalls: [{ id: 'h1', name: 'handoff_to_agent', arguments: '{"agent_id":"b","reason":"billing"}' }] }, { text: 'Billing here.' });
    const asked: [string, string | null][] = [];
    const passages = [{ doc_id: 'kb-b', url: null, text: 'Invoices are due monthly.', score: 1 }];
    const out = await runTurn(input(llm, {
      tools: [fnTool, handoffTool],
      handoff: async (agentId, reason) => {
        asked.push([agentId, reason]);
        return {
          system: 'You are billing.', tools: billingTools, model: 'm-billing', temperature: 0.9, passages,
          conversation: { type: 'chat', id: 'c1', organization_id: 'o1', agent_id: 'b', contact_id: null, dynamic_variables: {}, metadata: {} },
          result: { handed_off_to: 'b' }, from: { agent_id: 'a1', agent_version: null }, segment: segment('b', reason),
        };
      },
    }));
    expect(asked).toEqual([['b', 'billing']]);
    expect(out.messages.map((m) => [m.role, m.name ?? m.content])).toEqual([['user', 'Hello'], ['tool_call', 'handoff_to_agent'], ['tool_result', 'handoff_to_agent'], ['agent', 'Billing here.']]);
    expect(out.messages[2]!.result).toEqual({ handed_off_to: 'b' });
    expect(out.messages[3]!.sources).toEqual([{ doc_id: 'kb-b', url: null, score: 1 }]);
    // The reply after the switch is the agent handed to's (issue 42: `agent_id` on agent messages).
    expect(out.messages[3]!.agent_id).toBe('b');
    expect(out.handoffs.map((h) => h.segment.agent_id)).toEqual(['b']);
    const [first, second] = llm.requests;
    expect([first!.system, first!.model, first!.tools.map((t) => t.name)]).toEqual(['You are helpful.', 'm', ['lookup_order', 'handoff_to_agent']]);
    expect([second!.system, second!.model, second!.temperature, second!.tools.map((t) => t.name), second!.passages]).toEqual(['You are billing.', 'm-billing', 0.9, ['end_call'], passages]);
  });

  it('tells the model a refusal and goes on with the same agent; a second hand-off in one step is refused without asking the hook', async () => {
    const llm = scriptedModel(
      { toolCalls: [{ id: 'h1', name: 'handoff_to_agent', arguments: '{"agent_id":"b"}' }, { id: 'h2', name: 'handoff_to_agent', arguments: '{"agent_id":"c"}' }] },
      { text: 'Still me.' },
    );
    let calls = 0;
    const out = await runTurn(input(llm, { tools: [handoffTool], handoff: async () => (calls++, { refused: 'agent b already handled this conversation' }) }));
    expect(calls).toBe(1);
    const results = out.messages.filter((m) => m.role === 'tool_result').map((m) => m.result);
    expect(results).toEqual([{ error: 'agent b already handled this conversation' }, { error: 'only one hand-off per step: this one was not made' }]);
    expect(out.handoffs).toEqual([]);
    expect(llm.requests[1]!.system).toBe('You are helpful.');
  });
});
