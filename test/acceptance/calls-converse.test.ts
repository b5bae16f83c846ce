/**
 * Black-box: an answered simulated call is a conversation run by the engine (issue 19, "Calls that
 * converse"): the simulated caller's lines from `metadata.simulated_caller`, the knowledge base
 * answering, a webhook tool the platform runs (signed), `end_call` ending the conversation, the
 * transcript and `tool_calls` on the call; and `transfer_call` ends a call `transferred`.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const local = usePlatform();
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let site: Server;
let base = '';
const toolRequests: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  site = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      toolRequests.push({ headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'confirmed', slot: 'Tuesday 10:00' }));
    });
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => site.close(() => r())));

async function ended(id: string) {
  return (await until(() => api('GET', `/api/v1/calls/${id}`), (r) => r.body.data?.status === 'ended', `call ${id} ending`)).body.data;
}

it('runs the caller\'s lines through the engine: knowledge base, a signed webhook tool, end_call; transcript and tool_calls on the call', async () => {
  const kb = (await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Clinic' } })).body.data.id;
  const ingest = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kb, title: 'Hours', text: 'The clinic opens at 8 am on weekdays. Parking is free in the garage on Elm Street.' } });
  const docId = ingest.body.data.documents[0].doc_id;
  const org = local().platform.keys[0]!.organizationId;
  await until(() => api('GET', `/api/v1/rag/document?org_id=${org}&doc_id=${encodeURIComponent(docId)}`), (r) => r.body.data?.status === 'indexed', 'indexing');
  const tool = (await api('POST', '/api/v1/tools', { body: { name: 'Confirm', type: 'webhook', url: `${base}/confirm`, definition: { name: 'confirm_visit', parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] } } } })).body.data;
  const agent = (await api('POST', '/api/v1/agents', {
    body: { name: 'Clinic caller', agent_name: 'Ava', begin_message: 'Hi {{first_name}}, this is {{agent_name}} from the clinic.', knowledge_base: kb, selected_tools: [{ tool_id: tool.id }, { type: 'end_call' }] },
  })).body.data;
  const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
  expect((await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } })).status).toBe(200);
  const placed = await api('POST', '/api/v1/calls', {
    body: {
      agent_id: agent.id, from_phone_number: choice.phone_number, to_phone_number: '+14155550121', dynamic_variables: { first_name: 'Dana' },
      metadata: { simulated_caller: ['When does the clinic open?', 'Please confirm_visit day=Tuesday', 'Thanks, goodbye', 'this line is never reached'] },
    },
  });
  expect(placed.status).toBe(200);
  const call = await ended(placed.body.data.id);
  expect(call.disconnection_reason).toBe('completed');
  const said = call.transcript.map((t: { role: string; text: string }) => [t.role, t.text]);
  expect(said[0]).toEqual(['agent', 'Hi Dana, this is Ava from the clinic.']);
  expect(said[1]).toEqual(['user', 'When does the clinic open?']);
  expect(said[2][0]).toBe('agent');
  expect(said[2][1]).toMatch(/8 am/);
  expect(said.map((s: string[]) => s[1])).not.toContain('this line is never reached');
  expect(call.tool_calls.map((t: { name: string }) => t.name)).toEqual(['confirm_visit', 'end_call']);
  expect(call.tool_calls[0]).toMatchObject({ arguments: { day: 'Tuesday' }, result: { status: 'confirmed', slot: 'Tuesday 10:00' } });
  const times = [...call.transcript.map((t: { time_sec: number }) => t.time_sec)];
  expect(times).toEqual([...times].sort((a, b) => a - b));
  const request = toolRequests.at(-1)!;
  const verified = new Webhook(tool.secret).verify(request.body, request.headers as Record<string, string>) as Record<string, any>;
  expect(verified.conversation).toMatchObject({ type: 'call', id: call.id, agent_id: agent.id });
});

it('ends a call `transferred` when the agent hands the caller on, and never offers function tools on calls', async () => {
  const fn = (await api('POST', '/api/v1/tools', { body: { name: 'Client side', type: 'function', definition: { name: 'client_only' } } })).body.data;
  const agent = (await api('POST', '/api/v1/agents', {
    body: { name: 'Transfer', begin_message: '', selected_tools: [{ tool_id: fn.id }, { type: 'transfer_call', phone_number: '+14155550199' }] },
  })).body.data;
  const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=415&limit=1')).body.data;
  expect((await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } })).status).toBe(200);
  const placed = await api('POST', '/api/v1/calls', {
    body: { agent_id: agent.id, from_phone_number: choice.phone_number, to_phone_number: '+14155550122', metadata: { simulated_caller: ['client_only now', 'transfer_call please'] } },
  });
  const call = await ended(placed.body.data.id);
  expect(call.disconnection_reason).toBe('transferred');
  expect(call.tool_calls).toEqual([expect.objectContaining({ name: 'transfer_call', result: { transferring_to: '+14155550199', mode: 'cold' } })]);
});
