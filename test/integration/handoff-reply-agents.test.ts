/**
 * Which agent answered (issue 42 item 7): each agent message of a chat carries `agent_id`, the
 * agent that produced it; after an agent-to-agent hand-off, the agent handed to. On the local
 * model (`LLM_PROVIDER=local`), whose trigger for a tool is a user message naming it with its
 * arguments as `key=value` (docs/api.md, "Hand-offs": the runnable example), as a new user tries it.
 */
import { usePlatform } from '../support/platform';

const local = usePlatform({ env: { LLM_PROVIDER: 'local' } } as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

async function agent(body: Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/api/v1/agents', { body: { voice_pipeline: 'realtime', ...body } });
  expect(res.status).toBe(200);
  return res.body.data.id;
}

describe('agent_id on agent messages', () => {
  it('a chat handed off from A to B: A\'s id on the replies before, B\'s after (the turn\'s answer, GET /chats/{id}, the handled_by filter)', async () => {
    const billing = await agent({ name: 'Billing', agent_name: 'Bea', prompt: 'You are {{agent_name}}, billing.' });
    const desk = await agent({
      name: 'Desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}, front desk.', begin_message: 'Hi, this is {{agent_name}}.',
      handoff_agents: [{ agent_id: billing, description: 'Billing: invoices and refunds' }],
    });
    const started = await api('POST', '/api/v1/chats', { body: { agent_id: desk } });
    expect(started.status).toBe(200);
    const chatId = started.body.data.id;
    expect(started.body.data.messages).toEqual([expect.objectContaining({ role: 'agent', content: 'Hi, this is Ava.', agent_id: desk })]);

    const before = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'What are your opening hours?' } });
    expect(before.status).toBe(200);
    expect(before.body.data.messages.map((m: any) => [m.role, m.agent_id])).toEqual([['user', null], ['agent', desk]]);

    const handoff = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: `Please handoff_to_agent agent_id=${billing} reason="an invoice question"` } });
    expect(handoff.status).toBe(200);
    expect(handoff.body.data.messages.map((m: any) => [m.role, m.name, m.agent_id])).toEqual([
      ['user', null, null],
      ['tool_call', 'handoff_to_agent', null],
      ['tool_result', 'handoff_to_agent', null],
      ['agent', null, billing],
    ]);
    expect(handoff.body.data.messages[2].result).toMatchObject({ handed_off_to: billing });

    const after = await api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'Is invoice 42 paid?' } });
    expect(after.status).toBe(200);
    expect(after.body.data.messages.map((m: any) => [m.role, m.agent_id])).toEqual([['user', null], ['agent', billing]]);

    const read = (await api('GET', `/api/v1/chats/${chatId}`)).body.data;
    expect(read).toMatchObject({ agent_id: desk, current_agent_id: billing });
    expect(read.messages.filter((m: any) => m.role === 'agent').map((m: any) => m.agent_id)).toEqual([desk, desk, billing, billing]);
    expect(read.messages.filter((m: any) => m.role !== 'agent').every((m: any) => m.agent_id === null)).toBe(true);
    const handled = await api('GET', `/api/v1/chats?handled_by=${billing}`);
    expect(handled.body.data.map((c: any) => c.id)).toEqual([chatId]);
  });
});
