/**
 * Black-box: what a conversation is set up with (issue 25, points 7 and 8), through the HTTP API
 * against the real OpenAI-compatible adapter and a stand-in Chat Completions server:
 * - time: `contact.timezone`, `current_time_local` and `timezone` in the prompt, from the
 *   contact's zone, else the agent's working hours', else UTC; `check_availability` and
 *   `book_appointment` default to that zone;
 * - defaults that follow configuration: an agent created without `model` asks for LLM_MODEL;
 *   one that names a model keeps it;
 * - `ambient_sound` is one of a documented set.
 */
import { DateTime } from 'luxon';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';

let model: OpenAiStandIn;
let local: TestPlatform;

beforeAll(async () => {
  model = await startOpenAiStandIn();
  local = await startTestPlatform({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', LLM_MODEL: 'llama3.2:3b', LLM_TIMEOUT_MS: '4000' } });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  if (local) expectNoUnexpected5xx(local);
  await model?.close();
});

const PROMPT = 'Local {{current_time_local}} in {{timezone}}; contact zone "{{contact.timezone}}"; UTC {{current_time}}.';
const LOCAL_TIME = (offset: string) => new RegExp(`^Local \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d${offset.replace('+', '\\+')} in `);

async function agentWith(body: Record<string, unknown>) {
  const res = await local.api('POST', '/api/v1/agents', { body: { name: 'Front desk', prompt: PROMPT, begin_message: '', selected_tools: [{ type: 'check_availability' }, { type: 'book_appointment' }], ...body } });
  expect(res.status).toBe(200);
  return res.body.data;
}

/** A weekday at least a week ahead (YYYY-MM-DD), so a slot on it is in the future and in Monday–Friday hours. */
function nextWednesday(): string {
  let day = DateTime.utc().plus({ days: 8 });
  while (day.weekday !== 3) day = day.plus({ days: 1 });
  return day.toISODate()!;
}

it('an agent created without model has model "" and asks for LLM_MODEL; a named model is kept', async () => {
  const plain = await agentWith({});
  expect([plain.model, plain.s2s_model, plain.post_call_analysis_model]).toEqual(['', '', '']);
  const named = await agentWith({ model: 'gpt-test' });
  for (const [agent, expected] of [[plain, 'llama3.2:3b'], [named, 'gpt-test']] as const) {
    const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.id } })).body.data;
    model.script({ text: 'Hello.' });
    expect((await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Hi' } })).status).toBe(200);
    expect(model.requests.at(-1)!.body.model).toBe(expected);
  }
});

it('fills the contact\'s zone and checks availability in it when the model names none', async () => {
  const agent = await agentWith({});
  expect((await local.api('PUT', `/api/v1/scheduler/working-hours/${agent.id}`, { body: { days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00', timezone: 'Europe/Berlin' } })).status).toBe(200);
  const contact = (await local.api('POST', '/api/v1/contacts', { body: { first_name: 'Kenji', phone: '+14155550199', timezone: 'Asia/Tokyo' } })).body.data;
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.id, contact_id: contact.id } })).body.data;
  const day = nextWednesday();
  model.script({ toolCalls: [{ id: 'call_av', name: 'check_availability', arguments: { start_date: day } }] }, { text: 'Here are the slots.' });
  const turn = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'When are you free?' } });
  expect(turn.status).toBe(200);
  const [first] = model.requests.slice(-2);
  const system = first!.body.messages[0];
  expect(system.role).toBe('system');
  expect(system.content).toMatch(LOCAL_TIME('+09:00'));
  expect(system.content).toContain('in Asia/Tokyo; contact zone "Asia/Tokyo"; UTC ');
  const result = turn.body.data.messages.find((m: any) => m.role === 'tool_result').result;
  expect(result.timezone).toBe('Asia/Tokyo');
  // The day is read in the contact's zone: it opens at Tokyo's midnight (Tuesday 16:00 in Berlin, in
  // the agent's working hours), and every slot is said with Tokyo's offset.
  expect(result.slots[0].start).toMatch(new RegExp(`^${day}T00:00:00(\\.000)?\\+09:00$`));
  expect(result.slots.every((s: any) => s.start.startsWith(day) && s.start.endsWith('+09:00'))).toBe(true);
});

it('without a contact, uses the agent\'s working hours\' zone and books a time given without offset in it', async () => {
  const agent = await agentWith({});
  await local.api('PUT', `/api/v1/scheduler/working-hours/${agent.id}`, { body: { days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00', timezone: 'Europe/Berlin' } });
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.id } })).body.data;
  const day = nextWednesday();
  model.script({ toolCalls: [{ id: 'call_bk', name: 'book_appointment', arguments: { start_time: `${day}T10:00:00`, name: 'Ada', email: 'ada@example.com' } }] }, { text: 'Booked.' });
  const turn = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Book me at ten.' } });
  expect(turn.status).toBe(200);
  const system = model.requests.at(-2)!.body.messages[0].content as string;
  const berlinOffset = DateTime.now().setZone('Europe/Berlin').toFormat('ZZ');
  expect(system).toMatch(LOCAL_TIME(berlinOffset));
  expect(system).toContain('in Europe/Berlin; contact zone ""');
  const result = turn.body.data.messages.find((m: any) => m.role === 'tool_result').result;
  expect(result).toMatchObject({ booked: true });
  const booked = (await local.api('GET', `/api/v1/scheduler/appointments/${result.appointment_id}`)).body.data;
  expect(Date.parse(booked.start_time)).toBe(DateTime.fromISO(`${day}T10:00:00`, { zone: 'Europe/Berlin' }).toMillis());
  expect(booked.attendee_timezone).toBe('Europe/Berlin');
});

it('without a contact or working hours, the zone is UTC', async () => {
  const agent = await agentWith({});
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.id } })).body.data;
  model.script({ text: 'Hello.' });
  await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Hi' } });
  expect(model.requests.at(-1)!.body.messages[0].content).toMatch(/^Local \S+\+00:00 in UTC; contact zone ""; UTC \S+Z\.$/);
});

it('takes ambient_sound from its set and names the field otherwise', async () => {
  for (const sound of ['', 'office', 'cafe', 'call-center', 'static']) {
    const res = await local.api('POST', '/api/v1/agents', { body: { name: 'Sound', ambient_sound: sound, ambient_sound_volume: 0.2 } });
    expect([sound, res.status, res.body.data?.ambient_sound]).toEqual([sound, 200, sound]);
  }
  const bad = await local.api('POST', '/api/v1/agents', { body: { name: 'Sound', ambient_sound: 'jungle' } });
  expect([bad.status, bad.body.error.details.fields.map((f: any) => f.path)]).toEqual([400, ['ambient_sound']]);
  const agent = await agentWith({});
  const patched = await local.api('PATCH', `/api/v1/agents/${agent.id}`, { body: { ambient_sound: 'rain' } });
  expect([patched.status, patched.body.error.details.fields[0].path]).toEqual([400, 'ambient_sound']);
  const volume = await local.api('PATCH', `/api/v1/agents/${agent.id}`, { body: { ambient_sound_volume: 1.5 } });
  expect([volume.status, volume.body.error.details.fields[0].path]).toEqual([400, 'ambient_sound_volume']);
});
