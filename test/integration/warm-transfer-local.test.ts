/**
 * Warm transfer on the simulated carrier (issue 42, item 6; docs/api.md "Warm transfer", "On the
 * simulated carrier"): a simulated call whose agent transfers warm goes through the same code as a
 * Twilio call's (calls/warm-transfer.ts): the person's call is decided by the destination's last
 * digit (0–4 accepted, 5 declined, 6 a machine, 7 no answer, 8 busy, 9 a failure), the transfer is
 * on the call with its briefing (the template, on the local model) and outcome, with its events;
 * accepted, the call ends `transferred`; otherwise the agent says what became of it and the
 * conversation goes on. Through the HTTP API on the local runtime, under a manual clock.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keys } from '../../shared/db/keys';
import { getItem } from '../../shared/db/store';
import { simulatedConversation } from '../../shared/domain/calls/conversation';
import type { CallItem } from '../../shared/domain/calls/service';
import { ManualClock } from '../../shared/local/clock';
import { runBash } from '../support/bash';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';

const clock = new ManualClock(Date.now());
const local = usePlatform({ clock, queueTimeScale: 1, env: { SIMULATED_CALL_SECONDS: '20' } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

/** Runs the queues, the clock moving `ms` in steps of a second (the simulated carrier's events are seconds apart). */
async function pass(ms: number): Promise<void> {
  const queue = local().platform.queue;
  await queue.drain();
  for (let at = 0; at < ms; at += 1_000) {
    clock.advance(1_000);
    await queue.drain();
  }
}

const getCall = async (callId: string) => (await api('GET', `/api/v1/calls/${callId}`)).body.data;
const eventsOf = async (type: string, callId: string) => (await api('GET', `/api/v1/events?type=${type}&limit=100`)).body.data.filter((e: any) => e.data?.id === callId).reverse();
const destination = (digit: number) => `+1415555017${digit}`;
const CALLER = ['Hi, I was charged twice.', 'transfer_call reason="double charge"', 'Please take a message then.', 'Goodbye.'];

/**
 * A number bought from the simulated carrier's pool (CA 416 is this file's area; test/support/numbers.ts), so it has
 * prices: the person's minutes are charged at its outbound price, 0.014 USD.
 */
async function boughtNumber(): Promise<string> {
  const listed = await api('GET', '/api/v1/phone-numbers/available?country=CA&area_code=416&limit=40');
  for (const n of listed.body.data.sort(() => Math.random() - 0.5)) {
    const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: n.phone_number, price: n.price } });
    if (bought.status === 200) return bought.body.data.phone_number;
  }
  throw new Error('CA 416 is sold out');
}

/** A simulated call of an agent that transfers warm to `to` when the caller names the tool; it ends (20 s connected). */
async function transferredCall(to: string) {
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Warm desk', begin_message: 'Acme, how can I help?', selected_tools: [{ type: 'transfer_call', mode: 'warm', phone_number: to }, { type: 'end_call' }] },
  });
  expect(agent.status).toBe(200);
  const from = await boughtNumber();
  const callee = `${uniquePhone().slice(0, -1)}0`; // answered
  const placed = await api('POST', '/api/v1/calls', { body: { agent_id: agent.body.data.id, from_phone_number: from, to_phone_number: callee, metadata: { simulated_caller: CALLER } } });
  expect(placed.status).toBe(200);
  const callId = placed.body.data.id as string;
  await pass(25_000);
  const call = await getCall(callId);
  expect(call.status).toBe('ended');
  return { call, callId, callee, agentId: agent.body.data.id as string };
}

const briefing = (callee: string) => `Incoming transfer from the AI agent. Caller: ${callee}. Reason: double charge. What was done: the agent spoke with them for 2 turns. Still needed: a person to take over the call.`;
const TOOL_REPLY = (to: string) => `The transfer_call tool answered: {"transferring_to":"${to}","mode":"warm"}`;
const texts = (call: any) => call.transcript.map((t: any) => [t.role, t.text]);

it('a destination ending 0–4 accepts: the call ends `transferred`, the transfer connected with its briefing, call.transfer_started and call.transferred, the person\'s minutes charged', async () => {
  const to = destination(1);
  const { call, callId, callee } = await transferredCall(to);
  expect(call.disconnection_reason).toBe('transferred');
  expect(call.transfers).toEqual([{ phone_number: to, mode: 'warm', started_at: expect.any(String), outcome: 'connected', briefing: briefing(callee) }]);
  expect(texts(call)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', CALLER[0]],
    ['agent', "I'm sorry, I don't have information about that."],
    ['user', CALLER[1]],
    ['agent', TOOL_REPLY(to)],
    ['system', `Warm transfer to ${to}: briefing: ${briefing(callee)}`],
    ['system', `Warm transfer to ${to}: connected: the person accepted; the caller is connected to them and the agent left the call`],
  ]);
  // The agent left: the caller's later lines were never said to it.
  const times = call.transcript.map((t: any) => t.time_sec);
  expect(times).toEqual([...times].sort((a: number, b: number) => a - b));
  expect((await eventsOf('call.transfer_started', callId)).map((e: any) => e.data.transfer)).toEqual([expect.objectContaining({ index: 0, phone_number: to, mode: 'warm', outcome: null, briefing: '' })]);
  expect((await eventsOf('call.transferred', callId)).map((e: any) => [e.data.transfer.outcome, e.data.transfer.briefing])).toEqual([['connected', briefing(callee)]]);
  expect(await eventsOf('call.transfer_failed', callId)).toEqual([]);
  const ended = await eventsOf('call.ended', callId);
  expect(ended.map((e: any) => [e.data.disconnection_reason, e.data.transfers.map((t: any) => t.outcome)])).toEqual([['transferred', ['connected']]]);
  // The person talked for the simulated call's 20 s: one minute at the organization's outbound price.
  const charges = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === callId);
  expect(charges.map((c: any) => c.description)).toContainEqual(`Warm transfer to ${to} (call ${callId}): 1 min at 0.014 USD/min`);
});

const FAILED: [number, string, string][] = [
  [5, 'declined', 'the person I called could not take your call just now'],
  [6, 'machine', 'I reached a voicemail rather than the person'],
  [7, 'no_answer', 'the person I called did not answer'],
  [8, 'no_answer', 'the person I called did not answer'],
  [9, 'failed', 'I could not reach the person I called'],
];

it.each(FAILED)('a destination ending %i: `%s`; call.transfer_failed, the caller back with the agent, which says so and goes on', async (digit, outcome, said) => {
  const to = destination(digit);
  const { call, callId, callee } = await transferredCall(to);
  expect(call.transfers).toEqual([{ phone_number: to, mode: 'warm', started_at: expect.any(String), outcome, briefing: briefing(callee) }]);
  const back = {
    declined: 'the person declined the call; the caller is back with the agent',
    machine: 'a voicemail answered; the caller is back with the agent',
    no_answer: 'nobody answered; the caller is back with the agent',
    failed: 'the call to the person failed; the caller is back with the agent',
  }[outcome];
  expect(texts(call)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', CALLER[0]],
    ['agent', "I'm sorry, I don't have information about that."],
    ['user', CALLER[1]],
    ['agent', TOOL_REPLY(to)],
    ['system', `Warm transfer to ${to}: briefing: ${briefing(callee)}`],
    ['system', `Warm transfer to ${to}: ${outcome}: ${back}`],
    ['agent', `I'm sorry, ${said}. I can take a message or arrange a callback. Which would you prefer?`],
    ['user', CALLER[2]],
    ['agent', "I'm sorry, I don't have information about that."],
    ['user', CALLER[3]],
    ['agent', 'Thank you for talking with me. Goodbye!'],
  ]);
  // The agent ended the call itself at the goodbye (end_call): not transferred.
  expect(call.disconnection_reason).toBe('completed');
  expect(call.tool_calls.map((t: any) => t.name)).toEqual(['transfer_call', 'end_call']);
  expect((await eventsOf('call.transfer_started', callId)).map((e: any) => e.data.transfer.phone_number)).toEqual([to]);
  expect((await eventsOf('call.transfer_failed', callId)).map((e: any) => [e.data.transfer.outcome, e.data.transfer.briefing])).toEqual([[outcome, briefing(callee)]]);
  expect(await eventsOf('call.transferred', callId)).toEqual([]);
  // Declined, the person answered and heard the briefing: their seconds are charged; otherwise they never connected.
  const legs = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === callId && c.description.startsWith('Warm transfer'));
  expect(legs.length).toBe(outcome === 'declined' ? 1 : 0);
});

it('a redelivered end runs the conversation again: the transfer it made is read, not dialed again, and its events are not sent twice', async () => {
  const to = destination(5);
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Warm desk', begin_message: 'Acme, how can I help?', selected_tools: [{ type: 'transfer_call', mode: 'warm', phone_number: to }, { type: 'end_call' }] } });
  const from = await boughtNumber();
  const placed = await api('POST', '/api/v1/calls', { body: { agent_id: agent.body.data.id, from_phone_number: from, to_phone_number: `${uniquePhone().slice(0, -1)}0`, metadata: { simulated_caller: CALLER } } });
  const callId = placed.body.data.id as string;
  await pass(2_000); // answered, not over (20 s)
  const live = (await getItem<CallItem>(keys.call(local().platform.keys[0]!.organizationId, callId)))!;
  expect(live.status).toBe('in_progress');
  // The conversation the end runs, as a first delivery that failed before the end was written would have run it.
  const first = await simulatedConversation({ ...live }, 20);
  expect(first.transcript.filter((t) => t.role === 'system')).toHaveLength(2);
  await pass(20_000); // the end: the conversation runs again
  const call = await getCall(callId);
  expect(call.status).toBe('ended');
  expect(call.transfers).toEqual([expect.objectContaining({ phone_number: to, outcome: 'declined' })]);
  expect(call.transcript.filter((t: any) => t.role === 'system').map((t: any) => t.text)).toEqual(first.transcript.filter((t) => t.role === 'system').map((t) => t.text));
  expect(await eventsOf('call.transfer_started', callId)).toHaveLength(1);
  expect(await eventsOf('call.transfer_failed', callId)).toHaveLength(1);
  const legs = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === callId && c.description.startsWith('Warm transfer'));
  expect(legs).toHaveLength(1);
});

/** README's setup: everything of its first API example before its first request (as test/acceptance/api-doc-examples.test.ts takes it). */
function readmeSetup(url: string, key: string): string {
  const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
  const first = [...readme.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).find((b) => b.includes('$BASE_URL'))!;
  return first.slice(0, first.indexOf('\ncurl ')).replace(/^export BASE_URL=http:\/\/localhost:3000 .*$/m, `export BASE_URL=${url}`).replace(/^KEY=\$\(cat \.data\/local-api-key\).*$/m, `KEY='${key}'`);
}

it('runs "Try a warm transfer locally" as written: declined, the transfer and the agent\'s return are on the call', async () => {
  const { url, key } = local();
  const docs = readFileSync(join(__dirname, '../../docs/api.md'), 'utf8');
  const at = docs.indexOf('\n#### Try a warm transfer locally\n');
  expect(at).toBeGreaterThan(0);
  const example = /^```bash\n([\s\S]*?)^```$/m.exec(docs.slice(at))![1]!;
  const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body "$@"; }', readmeSetup(url, key), example, 'echo "--- ran" >&2'].join('\n');
  // The example waits for the call's end in real time; the platform's clock moves a second at a time meanwhile.
  let finished = false;
  const running = runBash(script, __dirname, 120_000).finally(() => (finished = true));
  while (!finished) {
    await pass(1_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const result = await running;
  const report = `exit ${result.code}\n--- stderr\n${result.stderr.slice(-4000)}\n--- stdout\n${result.stdout.slice(-4000)}`;
  expect([result.code, report]).toEqual([0, expect.stringContaining('--- ran')]);
  // What the example's comments say it shows.
  const lines = result.stdout.trim().split('\n');
  expect(lines[0]).toBe(`declined: ${briefing('+14155550140')}`);
  expect(lines.slice(1, 5)).toEqual([
    `agent: ${TOOL_REPLY('+14155550175')}`,
    `system: Warm transfer to +14155550175: briefing: ${briefing('+14155550140')}`,
    'system: Warm transfer to +14155550175: declined: the person declined the call; the caller is back with the agent',
    "agent: I'm sorry, the person I called could not take your call just now. I can take a message or arrange a callback. Which would you prefer?",
  ]);
  expect(lines.at(-1)).toBe('declined');
}, 150_000);
