/**
 * Web calls (issue 27, point 3) over real WebSockets on the local runtime: POST /web-calls over
 * HTTP, a browser client speaking the documented JSON protocol to the voice runtime's `/web`, and
 * a scripted Realtime stand-in in the format the browser chose (PCM16 24 kHz or μ-law 8 kHz).
 */
import { clockMs } from '../../shared/clock';
import { mulawRecording } from '../support/twilio-media-client';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';
import { pcm16Tone, WebCallClient } from '../support/web-call-client';

const { local, api, model, scripts, advanceClock, callOf, chargesOf, eventsOf } = useVoiceCallWiring();

async function agent(body: Record<string, unknown>): Promise<string> {
  const created = await api('POST', '/api/v1/agents', { body: { name: 'Web', agent_name: 'Ava', reminder_trigger_ms: 0, ...body } });
  expect(created.status).toBe(200);
  return created.body.data.id;
}

async function webCall(agentId: string, extra: Record<string, unknown> = {}) {
  const res = await api('POST', '/api/v1/web-calls', { body: { agent_id: agentId, ...extra } });
  expect(res.status).toBe(200);
  return res.body.data as { call: any; url: string; token: string; token_expires_at: string };
}

/** A refused connection: an `error` naming why, then close 1008. */
async function refused(client: WebCallClient): Promise<{ code: number; reason: string; error: string }> {
  const closed = await Promise.race([client.closed, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the browser was admitted')), 5000).unref())]);
  return { ...closed, error: client.of('error')[0]?.message };
}

it('a PCM16 web call: greeting, audio both ways byte-exact, barge-in clears the browser, the browser hangs up; the call ends with its transcript, channel web, call.ended, no charge', async () => {
  const greeting = pcm16Tone(0.3, 300);
  const long = pcm16Tone(3, 500);
  let truncate: any;
  scripts.set('web-pcm', async (m) => {
    const update = await m.next('session.update');
    expect(update.session.audio.input.format).toEqual({ type: 'audio/pcm', rate: 24000 });
    expect(update.session.audio.output.format).toEqual({ type: 'audio/pcm', rate: 24000 });
    const greet = await m.next('response.create');
    expect(greet.response.instructions).toContain('Hello from the web.');
    m.speak({ responseId: 'r1', itemId: 'i1', audio: greeting, transcript: 'Hello from the web.', chunkBytes: 4800 });
    // The browser's words, then an answer it cuts off.
    await m.until(() => m.inputAudio().length >= 48_000, 'the browser audio');
    m.userSays('u1', 'Tell me about your hours.');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: long, chunkBytes: 4800, open: true });
    m.speechStarted('u2');
    truncate = await m.next('conversation.item.truncate');
    m.finish({ responseId: 'r2', itemId: 'i2', transcript: 'We open at nine and close at five every weekday.', status: 'cancelled' });
    m.send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: 2000, item_id: 'u2' });
    m.send({ type: 'conversation.item.input_audio_transcription.completed', item_id: 'u2', content_index: 0, transcript: 'Thanks, bye.' });
    await m.closed;
  });
  const agentId = await agent({ s2s_model: 'web-pcm', begin_message: 'Hello from the web.' });
  const started = await webCall(agentId);
  expect(started.call).toMatchObject({ channel: 'web', status: 'ringing', direction: 'inbound', from_phone_number: null, to_phone_number: null, agent_id: agentId });
  expect(started.url).toBe(`${local().platform.voice!.url.replace(/\/stream$/, '')}/web`);
  expect(Date.parse(started.token_expires_at) - clockMs()).toBeLessThanOrEqual(60_000);

  const browser = await WebCallClient.start(started.url, started.token, 'pcm16');
  await browser.until(() => browser.of('started').length > 0, 'started');
  expect(browser.of('started')[0]).toEqual({ type: 'started', call_id: started.call.id, format: 'pcm16', sample_rate: 24000 });
  await browser.until(() => browser.audio().length >= greeting.length, 'the greeting');
  expect(browser.audio().subarray(0, greeting.length).equals(greeting)).toBe(true);
  expect((await callOf(started.call.id)).status).toBe('in_progress');
  expect(await eventsOf('call.started', started.call.id)).toHaveLength(1);

  // The greeting has played (by the runtime's clock) before the browser speaks.
  await browser.until(() => browser.of('speaking').some((s) => s.role === 'agent' && !s.active), 'the greeting played');
  expect(browser.of('clear')).toEqual([]);
  const mic = pcm16Tone(1, 200);
  browser.sendAudio(mic);
  await browser.until(() => browser.of('clear').length > 0, 'clear on barge-in');
  const m = model().connections.at(-1)!;
  expect(m.inputAudio().subarray(0, mic.length).equals(mic)).toBe(true);
  expect(browser.audio().subarray(greeting.length).equals(long.subarray(0, browser.audio().length - greeting.length))).toBe(true);
  // Cut where the browser was: well inside the 3 s answer.
  await m.until(() => truncate !== undefined, 'the truncate');
  expect(truncate).toMatchObject({ item_id: 'i2', content_index: 0 });
  expect(truncate.audio_end_ms).toBeLessThan(3000);
  await browser.until(() => browser.of('transcript').some((t) => t.role === 'user' && t.final && t.text === 'Thanks, bye.'), 'the user transcript');
  expect(browser.of('transcript').filter((t) => t.final).map((t) => [t.role, t.text])).toEqual([
    ['agent', 'Hello from the web.'],
    ['user', 'Tell me about your hours.'],
    ['agent', 'We open at nine and close at five every weekday.'],
    ['user', 'Thanks, bye.'],
  ]);
  expect(browser.of('speaking')).toEqual(expect.arrayContaining([{ type: 'speaking', role: 'agent', active: true }, { type: 'speaking', role: 'user', active: true }]));

  advanceClock(30_000);
  browser.hangUp();
  await browser.until(() => browser.of('ended').length > 0, 'ended');
  expect(browser.of('ended')).toEqual([{ type: 'ended', reason: 'client_hangup' }]);
  expect((await browser.closed).code).toBe(1000);
  const ended = await until(() => callOf(started.call.id), (c) => c.status === 'ended', 'the call ending');
  expect(ended).toMatchObject({ channel: 'web', disconnection_reason: 'completed', from_phone_number: null });
  expect(ended.duration_sec).toBeGreaterThanOrEqual(30);
  const texts = ended.transcript.map((t: any) => [t.role, t.text]);
  expect(texts[0]).toEqual(['agent', 'Hello from the web.']);
  expect(texts).toContainEqual(['user', 'Tell me about your hours.']);
  expect(texts).toContainEqual(['user', 'Thanks, bye.']);
  // The cut answer keeps only the words heard (cut at once, none or a few): never the whole answer.
  expect(texts).not.toContainEqual(['agent', 'We open at nine and close at five every weekday.']);
  const [event] = await eventsOf('call.ended', started.call.id);
  expect(event.data).toMatchObject({ id: started.call.id, channel: 'web', disconnection_reason: 'completed' });
  expect(await chargesOf(started.call.id)).toEqual([]);
}, 60_000);

it('a μ-law web call: the model\'s session is audio/pcmu, audio passes untouched both ways, the agent ends it (end_call) and the browser is told', async () => {
  const greeting = mulawRecording(0.4, 3);
  scripts.set('web-mulaw', async (m) => {
    const update = await m.next('session.update');
    expect(update.session.audio.input.format).toEqual({ type: 'audio/pcmu' });
    expect(update.session.audio.output.format).toEqual({ type: 'audio/pcmu' });
    await m.next('response.create');
    m.speak({ responseId: 'r1', itemId: 'i1', audio: greeting, transcript: 'Hi, this is Ava.' });
    await m.until(() => m.inputAudio().length >= 8000, 'the browser audio');
    m.userSays('u1', 'That is all, goodbye.');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: mulawRecording(0.2, 4), transcript: 'Goodbye!', calls: [{ callId: 'c1', name: 'end_call', args: {} }] });
    await m.closed;
  });
  const agentId = await agent({ s2s_model: 'web-mulaw', begin_message: 'Hi, this is Ava.', selected_tools: [{ type: 'end_call', name: 'end_call' }] });
  const started = await webCall(agentId, { dynamic_variables: { plan: 'gold' }, agent_version: 'draft' });
  const browser = await WebCallClient.start(started.url, started.token, 'mulaw');
  await browser.until(() => browser.audio().length >= greeting.length, 'the greeting');
  expect(browser.audio().subarray(0, greeting.length).equals(greeting)).toBe(true);
  await browser.until(() => browser.of('speaking').some((s) => s.role === 'agent' && !s.active), 'the greeting played');
  const mic = mulawRecording(1, 9);
  browser.sendAudio(mic, 160);
  await browser.until(() => browser.of('ended').length > 0, 'ended', 20_000);
  expect(browser.of('ended')).toEqual([{ type: 'ended', reason: 'agent_hangup' }]);
  expect((await browser.closed).code).toBe(1000);
  expect(model().connections.at(-1)!.inputAudio().subarray(0, mic.length).equals(mic)).toBe(true);
  const ended = await until(() => callOf(started.call.id), (c) => c.status === 'ended', 'the call ending');
  expect(ended).toMatchObject({ channel: 'web', disconnection_reason: 'completed', dynamic_variables: { plan: 'gold' } });
  expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hi, this is Ava.', 'That is all, goodbye.', 'Goodbye!']);
  expect(ended.tool_calls.map((t: any) => t.name)).toEqual(['end_call']);
  expect(await eventsOf('call.ended', started.call.id)).toHaveLength(1);
  expect(await chargesOf(started.call.id)).toEqual([]);
}, 60_000);

it('a token admits one browser, once: a second start with it is refused, and so is an expired one', async () => {
  scripts.set('web-once', async (m) => {
    await m.next('session.update');
    await m.closed;
  });
  const agentId = await agent({ s2s_model: 'web-once', start_speaker: 'user' });
  const first = await webCall(agentId);
  const browser = await WebCallClient.start(first.url, first.token, 'pcm16');
  await browser.until(() => browser.of('started').length > 0, 'started');
  const replay = await WebCallClient.start(first.url, first.token, 'pcm16');
  expect(await refused(replay)).toMatchObject({ code: 1008, error: expect.stringMatching(/already/) });
  browser.close();
  await until(() => callOf(first.call.id), (c) => c.status === 'ended', 'the call ending');
  const late = await WebCallClient.start(first.url, first.token, 'pcm16');
  expect((await refused(late)).code).toBe(1008);

  const second = await webCall(agentId);
  advanceClock(61_000);
  const expired = await WebCallClient.start(second.url, second.token, 'pcm16');
  expect(await refused(expired)).toMatchObject({ code: 1008, error: 'invalid or expired token' });
  expect((await callOf(second.call.id)).status).toBe('ringing');

  // Anything but a valid start first is refused too, naming the problem.
  const third = await webCall(agentId);
  const noStart = await WebCallClient.connect(third.url);
  noStart.send({ type: 'audio', audio: 'AAAA' });
  expect(await refused(noStart)).toMatchObject({ code: 1008, error: 'audio before start' });
  const badFormat = await WebCallClient.connect(third.url);
  badFormat.send({ type: 'start', token: third.token, format: 'opus' });
  expect(await refused(badFormat)).toMatchObject({ code: 1008, error: expect.stringContaining('"format" must be one of "mulaw", "pcm16"') });
}, 60_000);

it('POST /web-calls: 400 naming the field for a bad body, 503 naming REALTIME_API_KEY without a speech model, only for a request that is valid', async () => {
  const agentId = await agent({ s2s_model: 'unused' });
  const bad = await api('POST', '/api/v1/web-calls', { body: { agent_id: agentId, agent_version: 'latest' } });
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.body.error)).toContain('agent_version');
  const unknown = await api('POST', '/api/v1/web-calls', { body: { agent_id: '01900000-0000-7000-8000-000000000000' } });
  expect(unknown.status).toBe(400);
  expect(unknown.body.error.details.fields).toEqual([expect.objectContaining({ path: 'agent_id' })]);
  const extra = await api('POST', '/api/v1/web-calls', { body: { agent_id: agentId, from_phone_number: '+14155550100' } });
  expect(extra.status).toBe(400);

  const saved = { base: process.env.REALTIME_BASE_URL, key: process.env.REALTIME_API_KEY };
  delete process.env.REALTIME_BASE_URL;
  delete process.env.REALTIME_API_KEY;
  local().expectFailures(/web-calls answered 503/);
  try {
    // What the request got wrong is told first: an unknown agent is a 400, not the 503.
    const unknownFirst = await api('POST', '/api/v1/web-calls', { body: { agent_id: '01900000-0000-7000-8000-000000000000' } });
    expect(unknownFirst.status).toBe(400);
    expect(unknownFirst.body.error.details.fields).toEqual([expect.objectContaining({ path: 'agent_id' })]);
    const none = await api('POST', '/api/v1/web-calls', { body: { agent_id: agentId } });
    expect(none.status).toBe(503);
    // What the README tells OpenAI users to set comes first; the other server's setting after it.
    expect(none.body.error.message).toMatch(/^No speech model is configured: set REALTIME_API_KEY .*REALTIME_BASE_URL/);
    expect(none.body.error.details).toMatchObject({ setting: 'REALTIME_API_KEY', settings: ['REALTIME_API_KEY', 'REALTIME_BASE_URL'] });
  } finally {
    process.env.REALTIME_BASE_URL = saved.base;
    process.env.REALTIME_API_KEY = saved.key;
  }
});

it('transfer_call on a web call: the built-in answers that it cannot transfer, and the call goes on', async () => {
  let output: any;
  scripts.set('web-transfer', async (m) => {
    await m.next('session.update');
    m.userSays('u1', 'Put me through to a person.');
    m.speak({ responseId: 'r1', itemId: 'i1', audio: mulawRecording(0.2, 5), transcript: 'One moment.', calls: [{ callId: 'c1', name: 'transfer_call', args: { reason: 'asked for a person' } }] });
    // Once its words have played, the end is carried out: the built-in refuses, and the model hears why (a system note) and is asked to go on.
    output = await m.next('conversation.item.create', (e) => e.item?.type === 'message' && JSON.stringify(e.item.content).includes('transfer_call'));
    await m.next('response.create');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: mulawRecording(0.2, 6), transcript: 'I cannot transfer you, but I can help.' });
    await m.closed;
  });
  const agentId = await agent({ s2s_model: 'web-transfer', start_speaker: 'user', selected_tools: [{ type: 'transfer_call', phone_number: '+14155550199' }] });
  const started = await webCall(agentId);
  const browser = await WebCallClient.start(started.url, started.token, 'mulaw');
  await browser.until(() => browser.of('transcript').some((t) => t.final && t.text === 'I cannot transfer you, but I can help.'), 'the answer after the refusal', 20_000);
  expect(browser.of('ended')).toEqual([]);
  expect(JSON.stringify(output)).toContain('not available on a web call');
  browser.hangUp();
  const ended = await until(() => callOf(started.call.id), (c) => c.status === 'ended', 'the call ending');
  expect(ended.disconnection_reason).toBe('completed');
  expect(ended.tool_calls).toEqual([expect.objectContaining({ name: 'transfer_call', result: { error: expect.stringContaining('not available on a web call') } })]);
}, 60_000);

/** The call ended within a few seconds (a call left `ringing` would wait for the recovery sweep). */
async function endedSoon(callId: string, what: string): Promise<any> {
  const deadline = Date.now() + 8_000;
  for (;;) {
    const call = await callOf(callId);
    if (call.status === 'ended') return call;
    if (Date.now() > deadline) throw new Error(`the call (${what}) is still ${call.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it('a browser that sends start and closes at once (or hangs up and closes) ends the call completed, once, with call.started and call.ended: none is left ringing', async () => {
  scripts.set('web-gone', async (m) => {
    await m.closed;
  });
  const agentId = await agent({ s2s_model: 'web-gone', begin_message: 'Hello.' });
  const connectionsBefore = model().connections.length;
  for (const how of ['close', 'hangup'] as const) {
    const started = await webCall(agentId);
    const browser = await WebCallClient.connect(started.url);
    browser.send({ type: 'start', token: started.token, format: 'pcm16' });
    if (how === 'hangup') browser.hangUp();
    browser.close();
    await browser.closed;
    const ended = await endedSoon(started.call.id, how);
    expect(ended).toMatchObject({ channel: 'web', disconnection_reason: 'completed', duration_sec: 0 });
    expect(ended.answered_at).toBeTruthy();
    expect(await eventsOf('call.started', started.call.id)).toHaveLength(1);
    const endedEvents = await eventsOf('call.ended', started.call.id);
    expect(endedEvents).toHaveLength(1);
    expect(endedEvents[0].data).toMatchObject({ id: started.call.id, disconnection_reason: 'completed' });
    // The token was used: a second browser with it is refused.
    const replay = await WebCallClient.start(started.url, started.token, 'pcm16');
    expect((await refused(replay)).code).toBe(1008);
  }
  // No model session was opened for a browser already gone.
  expect(model().connections.length).toBe(connectionsBefore);
}, 60_000);

it('a browser that closes while its session starts (after started, before the model answers) ends the call completed, once', async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  scripts.set('web-closing', async (m) => {
    await held;
    await m.closed;
  });
  const agentId = await agent({ s2s_model: 'web-closing', begin_message: 'Hello.' });
  const started = await webCall(agentId);
  const browser = await WebCallClient.start(started.url, started.token, 'pcm16');
  await browser.until(() => browser.of('started').length > 0, 'started');
  browser.close();
  await browser.closed;
  release();
  const ended = await endedSoon(started.call.id, 'closed while starting');
  expect(ended).toMatchObject({ channel: 'web', disconnection_reason: 'completed' });
  expect(await eventsOf('call.started', started.call.id)).toHaveLength(1);
  expect(await eventsOf('call.ended', started.call.id)).toHaveLength(1);
}, 60_000);
