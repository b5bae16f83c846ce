import { installLocalQueue } from '../../shared/adapters/queue';
import { installLlm } from '../../shared/adapters/llm';
import { LlmError, type LlmPort, type LlmRequest, type LlmResponse } from '../../shared/adapters/llm/port';
import { installTimeSource } from '../../shared/clock';
import { keys } from '../../shared/db/keys';
import { deleteKeys, getItem, putNew, queryAll, transact, updateExisting } from '../../shared/db/store';
import { db } from '../../shared/db/client';
import { createAgent, updateAgent } from '../../shared/domain/agents/service';
import { CreateAgentBody, UpdateAgentBody } from '../../shared/domain/agents/schemas';
import { createContact } from '../../shared/domain/contacts/service';
import { listActivities } from '../../shared/domain/contacts/service';
import { createTool } from '../../shared/domain/tools/service';
import { CreateToolBody } from '../../shared/domain/tools/schemas';
import { endChat, getChat, IDLE_MS, listChats, startChat, sweepIdleChats } from '../../shared/domain/chats/service';
import { analyzeChat } from '../../shared/domain/chats/analysis';
import { sendMessage, submitToolResults } from '../../shared/domain/chats/turns';
import { BadGatewayError, ConflictError, UnavailableError, ValidationError } from '../../shared/errors';
import { logger } from '../../shared/logger';

logger.setLogLevel('SILENT');

/**
 * The chat service against DynamoDB Local, with a scripted model (the engine's own tests cover
 * its rules; these cover storage: all-or-nothing turns, the turn guard, requires_action, the
 * idle sweep, events and analysis).
 */
const sent: { queue: string; body: any }[] = [];
beforeAll(() => installLocalQueue({ send: async (queue, body) => void sent.push({ queue, body }) }));
afterAll(() => {
  installLocalQueue(undefined);
  installLlm(undefined);
  installTimeSource(undefined);
});

type Step = Partial<LlmResponse> | Error | ((req: LlmRequest) => Promise<Partial<LlmResponse>>);
function scripted(...steps: Step[]): LlmPort & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    name: 'local',
    requests,
    async complete(req) {
      requests.push(req);
      const step = steps.shift() ?? { text: 'ok' };
      if (step instanceof Error) throw step;
      const out = typeof step === 'function' ? await step(req) : step;
      return { text: out.text ?? '', toolCalls: out.toolCalls ?? [], usage: out.usage ?? { promptTokens: 3, completionTokens: 2 } };
    },
  };
}

let orgSeq = 0;
const newOrg = () => `00000000-0000-7000-8000-${String(++orgSeq).padStart(6, '0')}${Date.now().toString(16).slice(-6)}`;

async function agentIn(orgId: string, over: Record<string, unknown> = {}) {
  return createAgent(orgId, CreateAgentBody.parse({ name: 'Desk', agent_name: 'Ava', prompt: 'You help {{contact.first_name}} at {{company}}.', begin_message: 'Hi {{contact.first_name}}, I am {{agent_name}}.', ...over }));
}

const eventsOf = async (orgId: string) => {
  const out: { type: string; body: string }[] = [];
  for await (const e of queryAll<{ type: string; body: string }>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: 'EVENT#' }, undefined, true)) out.push(e);
  return out;
};

describe('chats', () => {
  it('starts with the filled begin message, records the contact timeline and chat.started, and answers a turn', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId);
    const contact = await createContact(orgId, { first_name: 'Ada', phone: '+14155550100' } as never);
    const chat = await startChat(orgId, { agent_id: agent.id, contact_id: contact.id, dynamic_variables: { company: 'ACME' } });
    expect(chat.status).toBe('active');
    expect(chat.channel).toBe('api');
    expect(chat.messages).toEqual([expect.objectContaining({ role: 'agent', content: 'Hi Ada, I am Ava.', sources: [] })]);
    const llm = scripted({ text: 'Sure.' });
    installLlm(llm);
    const turn = await sendMessage(orgId, chat.id, 'Can you help?');
    expect(turn.chat).toEqual({ id: chat.id, status: 'active', end_reason: null, pending_tool_calls: [] });
    expect(turn.messages.map((m) => [m.role, m.content])).toEqual([['user', 'Can you help?'], ['agent', 'Sure.']]);
    expect(llm.requests[0]!.system).toBe('You help Ada at ACME.');
    expect(llm.requests[0]!.messages.map((m) => m.role)).toEqual(['assistant', 'user']);
    const read = await getChat(orgId, chat.id);
    expect(read.messages).toHaveLength(3);
    expect(read.usage).toEqual({ llm_requests: 1, prompt_tokens: 3, completion_tokens: 2 });
    expect(read.user_messages).toBe(1);
    expect((await listActivities(orgId, contact.id)).map((a) => a.type)).toContain('chat');
    expect((await eventsOf(orgId)).map((e) => e.type)).toEqual(['chat.started']);
  });

  it('refuses an unknown or inactive agent and another organization\'s contact, naming the field', async () => {
    const orgId = newOrg();
    const other = newOrg();
    const agent = await agentIn(orgId);
    const inactive = await agentIn(orgId, { status: 'AGENT_STATUS_INACTIVE' });
    const foreign = await createContact(other, { first_name: 'Eve', phone: '+14155550101' } as never);
    const fieldOf = async (p: Promise<unknown>) => ((await p.catch((e) => e)) as ValidationError).details;
    expect(await fieldOf(startChat(orgId, { agent_id: '01900000-0000-7000-8000-000000000000' }))).toMatchObject({ fields: [{ path: 'agent_id' }] });
    expect(await fieldOf(startChat(orgId, { agent_id: inactive.id }))).toMatchObject({ fields: [{ path: 'agent_id' }] });
    expect(await fieldOf(startChat(orgId, { agent_id: agent.id, contact_id: foreign.id }))).toMatchObject({ fields: [{ path: 'contact_id' }] });
  });

  it('of two racing turns the first claims the chat; the other is a 409 before it reaches the model, and leaves nothing', async () => {
    const orgId = newOrg();
    // An agent with a tool: its turns claim the chat before anything runs.
    const agent = await agentIn(orgId, { begin_message: '', selected_tools: [{ type: 'check_availability' }] });
    const chat = await startChat(orgId, { agent_id: agent.id });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const atModel = new Promise<void>((r) => (reached = r));
    const llm = scripted(async () => {
      reached();
      await gate;
      return { text: 'answer' };
    });
    installLlm(llm);
    const first = sendMessage(orgId, chat.id, 'one');
    await atModel;
    const second = (await sendMessage(orgId, chat.id, 'two').catch((e) => e)) as ConflictError;
    expect(second).toBeInstanceOf(ConflictError);
    expect(second.message).toMatch(/Another turn of this chat is running/);
    release();
    expect((await first).messages.map((m) => m.content)).toEqual(['one', 'answer']);
    expect(llm.requests).toHaveLength(1);
    const read = await getChat(orgId, chat.id);
    expect(read.messages.map((m) => m.role)).toEqual(['user', 'agent']);
    expect(read.user_messages).toBe(1);
    // The claim was released with the turn: the next message lands.
    installLlm(scripted({ text: 'again' }));
    expect((await sendMessage(orgId, chat.id, 'three')).messages.map((m) => m.content)).toEqual(['three', 'again']);
  });

  it('frees a chat whose turn crashed once its claim lapses', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '', selected_tools: [{ type: 'check_availability' }] });
    const chat = await startChat(orgId, { agent_id: agent.id });
    await transact([updateExisting(keys.chat(orgId, chat.id), { turn_claim: 'crashed', turn_claim_until: Date.now() + 60_000 })]);
    const llm = scripted({ text: 'hi' });
    installLlm(llm);
    await expect(sendMessage(orgId, chat.id, 'hello')).rejects.toBeInstanceOf(ConflictError);
    expect(llm.requests).toHaveLength(0);
    await transact([updateExisting(keys.chat(orgId, chat.id), { turn_claim_until: Date.now() - 1 })]);
    expect((await sendMessage(orgId, chat.id, 'hello')).messages.map((m) => m.content)).toEqual(['hello', 'hi']);
    const item = await getItem<Record<string, unknown>>(keys.chat(orgId, chat.id));
    expect(item!.turn_claim).toBeUndefined();
  });

  it('a turn that can run no tool takes no claim: of two racing turns one lands, the other is a 409 that stores nothing', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let arrivals = 0;
    let bothReached!: () => void;
    const atModel = new Promise<void>((r) => (bothReached = r));
    const held = async () => {
      if (++arrivals === 2) bothReached();
      await gate;
      return { text: 'answer' };
    };
    installLlm(scripted(held, held));
    const first = sendMessage(orgId, chat.id, 'one');
    const second = sendMessage(orgId, chat.id, 'two');
    await atModel;
    const item = await getItem<Record<string, unknown>>(keys.chat(orgId, chat.id));
    expect(item!.turn_claim).toBeUndefined(); // no claim write for a turn without tools
    release();
    const settled = await Promise.allSettled([first, second]);
    const won = settled.filter((r) => r.status === 'fulfilled');
    const lost = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toBeInstanceOf(ConflictError);
    const read = await getChat(orgId, chat.id);
    expect(read.messages.map((m) => m.role)).toEqual(['user', 'agent']);
    expect(read.user_messages).toBe(1);
  });

  it('a turn without a claim of its own never lands while another turn holds a live claim', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    await transact([updateExisting(keys.chat(orgId, chat.id), { turn_claim: 'running', turn_claim_until: Date.now() + 60_000 })]);
    installLlm(scripted({ text: 'hi' }));
    await expect(sendMessage(orgId, chat.id, 'hello')).rejects.toBeInstanceOf(ConflictError);
    const read = await getChat(orgId, chat.id);
    expect(read.messages).toHaveLength(0);
    const item = await getItem<Record<string, unknown>>(keys.chat(orgId, chat.id));
    expect(item!.turn_claim).toBe('running'); // the other turn's claim stands
  });

  it('a chat on a draft reads the agent at every turn: an edit applies at the next turn, a deactivation refuses it', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '', prompt: 'First prompt.' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    const llm = scripted({ text: 'one' }, { text: 'two' }, { text: 'three' });
    installLlm(llm);
    await sendMessage(orgId, chat.id, 'hello');
    // From here the container knows the chat's agent and reads it beside the chat: still read, never remembered.
    await updateAgent(orgId, agent.id, UpdateAgentBody.parse({ prompt: 'Second prompt.' }));
    await sendMessage(orgId, chat.id, 'again');
    expect(llm.requests.map((r) => r.system)).toEqual([expect.stringContaining('First prompt.'), expect.stringContaining('Second prompt.')]);
    await updateAgent(orgId, agent.id, UpdateAgentBody.parse({ status: 'AGENT_STATUS_INACTIVE' }));
    await expect(sendMessage(orgId, chat.id, 'once more')).rejects.toThrow(/inactive/);
    expect(llm.requests).toHaveLength(2);
  });

  it('keeps a turn whose model fails after its tools ran; the same message continues it, another starts a new turn', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '', selected_tools: [{ type: 'check_availability' }] });
    const chat = await startChat(orgId, { agent_id: agent.id });
    const day = new Date(Date.now() + 9 * 86_400_000).toISOString().slice(0, 10);
    installLlm(scripted({ toolCalls: [{ id: 'call_av', name: 'check_availability', arguments: JSON.stringify({ start_date: day }) }] }, new LlmError('provider_error', 'HTTP 500', { provider: 'openai', status: 500 })));
    const failed = (await sendMessage(orgId, chat.id, 'When are you free?').catch((e) => e)) as UnavailableError;
    expect(failed).toBeInstanceOf(UnavailableError);
    expect(failed.details).toMatchObject({ kept: true });
    expect(failed.message).toMatch(/send the same message again to continue/);
    let read = await getChat(orgId, chat.id);
    expect(read.messages.map((m) => m.role)).toEqual(['user', 'tool_call', 'tool_result']);
    expect(read.user_messages).toBe(1);
    // Another message leaves the kept turn as it is and is a turn of its own.
    const llm = scripted({ text: 'Hello!' });
    installLlm(llm);
    await sendMessage(orgId, chat.id, 'Actually, hi');
    expect(llm.requests[0]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    read = await getChat(orgId, chat.id);
    expect(read.messages.map((m) => m.role)).toEqual(['user', 'tool_call', 'tool_result', 'user', 'agent']);
    // The kept turn can no longer be continued: the same text now is a new message.
    installLlm(scripted({ text: 'Free on Monday.' }));
    const again = await sendMessage(orgId, chat.id, 'When are you free?');
    expect(again.messages.map((m) => m.role)).toEqual(['user', 'agent']);
  });

  it('answers 502 with the reason, and no Retry-After, for what retrying cannot cure', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    installLlm(scripted(new LlmError('not_configured', 'LLM_PROVIDER=openai needs LLM_SECRET_ARN (deployed) or LLM_API_KEY (local).', { provider: 'openai' })));
    const err = (await sendMessage(orgId, chat.id, 'hello').catch((e) => e)) as BadGatewayError;
    expect(err).toBeInstanceOf(BadGatewayError);
    expect(err.statusCode).toBe(502);
    expect(err.details).toMatchObject({ reason: 'no_api_key', provider_message: expect.stringContaining('LLM_API_KEY'), kept: false });
    expect((err as unknown as { retryAfterSeconds?: number }).retryAfterSeconds).toBeUndefined();
    expect((await getChat(orgId, chat.id)).messages).toEqual([]);
  });

  it('keeps no trace of a turn whose model fails (503 with Retry-After)', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    installLlm(scripted(new LlmError('rate_limited', 'slow down', { provider: 'openai', status: 429, retryAfterSeconds: 7 })));
    const err = (await sendMessage(orgId, chat.id, 'hello').catch((e) => e)) as UnavailableError;
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.retryAfterSeconds).toBe(7);
    const read = await getChat(orgId, chat.id);
    expect(read.messages).toEqual([]);
    expect(read.user_messages).toBe(0);
    expect(read.usage.llm_requests).toBe(0);
    // Sending again is safe and lands.
    installLlm(scripted({ text: 'hi' }));
    await sendMessage(orgId, chat.id, 'hello');
    expect((await getChat(orgId, chat.id)).messages.map((m) => m.content)).toEqual(['hello', 'hi']);
  });

  it('stops at a function tool (requires_action), refuses messages and partial results, then goes on', async () => {
    const orgId = newOrg();
    const tool = await createTool(orgId, CreateToolBody.parse({ name: 'Orders', type: 'function', definition: { name: 'lookup_order', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } } }));
    const agent = await agentIn(orgId, { begin_message: '', selected_tools: [{ tool_id: tool.id }, { type: 'end_call' }] });
    const chat = await startChat(orgId, { agent_id: agent.id });
    const llm = scripted(
      { toolCalls: [{ id: 'call_a', name: 'lookup_order', arguments: '{"order_id":"A1"}' }, { id: 'call_b', name: 'lookup_order', arguments: '{"order_id":"B2"}' }] },
      { text: 'A1 shipped, B2 is late.' },
    );
    installLlm(llm);
    const first = await sendMessage(orgId, chat.id, 'Where are A1 and B2?');
    expect(first.chat.status).toBe('requires_action');
    expect(first.chat.pending_tool_calls.map((p) => p.id)).toEqual(['call_a', 'call_b']);
    await expect(sendMessage(orgId, chat.id, 'hello?')).rejects.toBeInstanceOf(ConflictError);
    const partial = (await submitToolResults(orgId, chat.id, [{ tool_call_id: 'call_a', output: 'x' }]).catch((e) => e)) as ValidationError;
    expect(partial).toBeInstanceOf(ValidationError);
    expect(JSON.stringify(partial.details)).toMatch(/call_b/);
    const unknown = (await submitToolResults(orgId, chat.id, [{ tool_call_id: 'call_a', output: 1 }, { tool_call_id: 'call_b', output: 2 }, { tool_call_id: 'zzz', output: 3 }]).catch((e) => e)) as ValidationError;
    expect(JSON.stringify(unknown.details)).toMatch(/zzz/);
    const second = await submitToolResults(orgId, chat.id, [{ tool_call_id: 'call_b', output: { late: true } }, { tool_call_id: 'call_a', output: { shipped: true } }]);
    expect(second.chat.status).toBe('active');
    expect(second.messages.map((m) => m.role)).toEqual(['tool_result', 'tool_result', 'agent']);
    const read = await getChat(orgId, chat.id);
    expect(read.pending_tool_calls).toEqual([]);
    expect(read.messages.map((m) => m.role)).toEqual(['user', 'tool_call', 'tool_call', 'tool_result', 'tool_result', 'agent']);
    await expect(submitToolResults(orgId, chat.id, [{ tool_call_id: 'call_a', output: 1 }])).rejects.toBeInstanceOf(ConflictError);
  });

  it('stores a plain turn in one write: its messages ride on the chat until they fill 2 KiB, then are filed as one page item', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    // The filed messages' numbers, and how many items hold them (the messages filed together are one page).
    let items = 0;
    const filed = async () => {
      const out: number[] = [];
      items = 0;
      for await (const m of queryAll<{ seq: number; messages?: { seq: number }[] }>({ pkName: 'pk', pkValue: keys.chatMessages(orgId, chat.id), skName: 'sk', skPrefix: 'MSG#' }, undefined, true)) {
        items++;
        out.push(...(m.messages ? m.messages.map((x) => x.seq) : [m.seq]));
      }
      return out;
    };
    const latest = async () => ((await getItem<Record<string, any>>(keys.chat(orgId, chat.id)))!.latest_messages ?? []).map((m: any) => m.seq);
    const contents = async () => (await getChat(orgId, chat.id)).messages.map((m) => m.content);
    const long = (c: string) => c.repeat(600);
    const llm = scripted({ text: 'one' }, { text: 'two' }, { text: long('w') }, { text: 'x'.repeat(3_900) });
    installLlm(llm);
    await sendMessage(orgId, chat.id, 'first');
    expect([await latest(), await filed()]).toEqual([[0, 1], []]);
    await sendMessage(orgId, chat.id, 'second');
    expect([await latest(), await filed()]).toEqual([[0, 1, 2, 3], []]);
    expect(await contents()).toEqual(['first', 'one', 'second', 'two']);
    // The model gets the whole history, merged from the chat.
    await sendMessage(orgId, chat.id, long('z'));
    expect(llm.requests[2]!.messages.map((m) => m.content)).toEqual(['first', 'one', 'second', 'two', long('z')]);
    // They no longer fit with the turn's own: the earlier ones are filed, the turn's ride on the chat.
    expect([await latest(), await filed()]).toEqual([[4, 5], [0, 1, 2, 3]]);
    expect(items).toBe(1); // one page
    expect(await contents()).toEqual(['first', 'one', 'second', 'two', long('z'), long('w')]);
    // A turn too large to ride on the chat is written in one transaction with its messages, after filing the chat's.
    await sendMessage(orgId, chat.id, 'y'.repeat(3_990));
    expect([await latest(), await filed()]).toEqual([[], [0, 1, 2, 3, 4, 5, 6, 7]]);
    expect(items).toBe(4); // the two pages, and the large turn's two messages as items of their own
    expect(await contents()).toEqual(['first', 'one', 'second', 'two', long('z'), long('w'), 'y'.repeat(3_990), 'x'.repeat(3_900)]);
  });

  it('reads the chat alone while this container holds its filed messages, and the messages again once another container filed more', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    installLlm(scripted({ text: 'one' }, { text: 'two' }, { text: 'three' }));
    await sendMessage(orgId, chat.id, 'first');
    await sendMessage(orgId, chat.id, 'second');
    const spy = jest.spyOn(db(), 'send');
    try {
      expect((await getChat(orgId, chat.id)).messages.map((m) => m.content)).toEqual(['first', 'one', 'second', 'two']);
      expect(spy.mock.calls.map(([command]) => command.constructor.name)).toEqual(['GetCommand']);
      // Another container's turn files the latest messages (a page) and moves filed_count: this one reads them.
      const item = (await getItem<Record<string, any>>(keys.chat(orgId, chat.id)))!;
      const latest = item.latest_messages as { pk: string; sk: string; seq: number }[];
      await transact([putNew({ pk: latest[0]!.pk, sk: latest[0]!.sk, entity: 'CHAT_MESSAGE_PAGE', seq: latest[0]!.seq, messages: latest })]);
      await transact([updateExisting(keys.chat(orgId, chat.id), { filed_count: item.message_count }, { remove: ['latest_messages'] })]);
      spy.mockClear();
      expect((await getChat(orgId, chat.id)).messages.map((m) => m.content)).toEqual(['first', 'one', 'second', 'two']);
      expect(spy.mock.calls.map(([command]) => command.constructor.name)).toEqual(['GetCommand', 'QueryCommand']);
    } finally {
      spy.mockRestore();
    }
    await sendMessage(orgId, chat.id, 'third');
    expect((await getChat(orgId, chat.id)).messages.map((m) => m.content)).toEqual(['first', 'one', 'second', 'two', 'third', 'three']);
  });

  it('never answers a history with a hole in it', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    installLlm(scripted({ text: 'one' }));
    await sendMessage(orgId, chat.id, 'first');
    // A message neither filed nor on the chat (no writer leaves this: the reads would be straddling a filing).
    await deleteKeys([keys.chatMessage(orgId, chat.id, 0)]);
    await transact([updateExisting(keys.chat(orgId, chat.id), {}, { remove: ['latest_messages'] })]);
    await expect(getChat(orgId, chat.id)).rejects.toThrow(/kept changing/);
    await deleteKeys([keys.chat(orgId, chat.id)]); // out of the other tests' sweeps
  });

  it('ends when the agent calls end_call, emits chat.ended, and is analysed once', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '', selected_tools: [{ type: 'end_call' }] });
    const chat = await startChat(orgId, { agent_id: agent.id });
    installLlm(scripted({ toolCalls: [{ id: 'e1', name: 'end_call', arguments: '{}' }] }, { text: 'Goodbye!' }));
    sent.length = 0;
    const turn = await sendMessage(orgId, chat.id, 'bye');
    expect(turn.chat).toMatchObject({ status: 'ended', end_reason: 'agent_ended' });
    await expect(sendMessage(orgId, chat.id, 'still there?')).rejects.toBeInstanceOf(ConflictError);
    expect(sent.filter((m) => m.queue === 'chat-analysis')).toEqual([{ queue: 'chat-analysis', body: { organization_id: orgId, chat_id: chat.id } }]);
    await analyzeChat(orgId, chat.id);
    await analyzeChat(orgId, chat.id);
    const read = await getChat(orgId, chat.id);
    expect(read.analysis).toEqual(expect.objectContaining({ summary: expect.any(String), sentiment: expect.any(String) }));
    const types = (await eventsOf(orgId)).map((e) => e.type);
    expect(types.filter((t) => t === 'chat.ended')).toHaveLength(1);
    expect(types.filter((t) => t === 'chat.analyzed')).toHaveLength(1);
    const ended = JSON.parse((await eventsOf(orgId)).find((e) => e.type === 'chat.ended')!.body);
    expect(ended.data.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'tool_call', 'tool_result', 'agent']);
    // Ending an ended chat answers it unchanged.
    expect((await endChat(orgId, chat.id)).end_reason).toBe('agent_ended');
  });

  it('ends at the 101st user message with max_turns', async () => {
    const orgId = newOrg();
    const agent = await agentIn(orgId, { begin_message: '' });
    const chat = await startChat(orgId, { agent_id: agent.id });
    await transact([updateExisting(keys.chat(orgId, chat.id), { user_messages: 100 })]);
    await expect(sendMessage(orgId, chat.id, 'one more')).rejects.toBeInstanceOf(ConflictError);
    const read = await getChat(orgId, chat.id);
    expect(read).toMatchObject({ status: 'ended', end_reason: 'max_turns', messages: [] });
  });

  it('ends idle chats after 30 minutes under a manual clock, and not before', async () => {
    const orgId = newOrg();
    let now = Date.parse('2030-01-01T10:00:00Z');
    installTimeSource({ now: () => now });
    try {
      const agent = await agentIn(orgId, { begin_message: '' });
      const idle = await startChat(orgId, { agent_id: agent.id });
      now += 20 * 60_000;
      const busy = await startChat(orgId, { agent_id: agent.id });
      now += IDLE_MS - 20 * 60_000 + 1000;
      await sweepIdleChats();
      expect((await getChat(orgId, idle.id)).end_reason).toBe('inactivity');
      expect((await getChat(orgId, busy.id)).status).toBe('active');
      const item = await getItem<Record<string, unknown>>(keys.chat(orgId, idle.id));
      expect(item!.gsi2pk).toBeUndefined();
    } finally {
      installTimeSource(undefined);
    }
  });

  it('lists newest first with filters and exact totals', async () => {
    const orgId = newOrg();
    const a = await agentIn(orgId, { begin_message: '' });
    const b = await agentIn(orgId, { begin_message: '' });
    const c1 = await startChat(orgId, { agent_id: a.id });
    const c2 = await startChat(orgId, { agent_id: b.id });
    const c3 = await startChat(orgId, { agent_id: a.id });
    await endChat(orgId, c3.id);
    const all = await listChats(orgId, { limit: 20 } as never);
    expect(all.items.map((c) => c.id)).toEqual([c3.id, c2.id, c1.id]);
    expect(all.meta.total).toBe(3);
    const ofA = await listChats(orgId, { limit: 20, agent_id: a.id } as never);
    expect(ofA.items.map((c) => c.id)).toEqual([c3.id, c1.id]);
    expect(ofA.meta.total).toBe(2);
    const ended = await listChats(orgId, { limit: 20, status: 'ended' } as never);
    expect(ended.items.map((c) => c.id)).toEqual([c3.id]);
    const other = await listChats(newOrg(), { limit: 20 } as never);
    expect(other.items).toEqual([]);
  });
});
