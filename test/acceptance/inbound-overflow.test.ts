/**
 * Black-box: incoming calls at the organization's concurrency limit follow their number's
 * `overflow` (docs/api.md, "Inbound overflow"), on the local runtime over HTTP with its voice
 * runtime, against the Twilio stand-in (test/support/twilio-carrier.ts: `<Reject/>`, `<Dial>`,
 * `<Enqueue waitUrl>` with its hold loop, live updates by `Url`). Each outcome is recorded as a
 * call: rejected `concurrency_limit`, forwarded `forwarded`, queued then connected when a slot
 * frees, or ended `queue_timeout` (the caller told the agents are busy) or `canceled` (hung up on hold).
 */
import { clockMs } from '../../shared/clock';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { BUSY_MESSAGE } from '../../shared/domain/calls/inbound-overflow';
import { DEFAULT_HOLD_MUSIC_URL } from '../../shared/domain/phone-numbers/overflow';
import type { ModelConnection } from '../support/realtime-stand-in';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';

let twilio: TwilioCarrierStandIn;
const SID = 'AC0000000000000000000000000000ab44';
const TOKEN = 'overflow-auth-token';
const carrierReady = (async () => {
  twilio = await startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() });
  twilio.holdRoundMs = 50;
})();
beforeAll(() => carrierReady);

const { local, api, scripts, advanceClock, callOf, eventsOf } = useVoiceCallWiring(() => ({
  TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
}));
afterAll(() => twilio?.close());

// Every session of the agent stays open until its call ends (a call hung up before its session is set up is no error here).
scripts.set('overflow-agent', async (m: ModelConnection) => {
  await m.next('session.update').catch(() => undefined);
});

let number: { id: string; phone: string };
const HOLD_MUSIC = 'https://music.example.com/hold.mp3';
const FORWARD_TO = '+14155550999';

beforeAll(async () => {
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Front desk', s2s_model: 'overflow-agent', begin_message: 'Hello.' } });
  expect(agent.status).toBe(200);
  const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=415&limit=1')).body.data;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price, inbound_agent_id: agent.body.data.id } });
  expect(bought.status).toBe(200);
  number = { id: bought.body.data.id, phone: choice.phone_number };
  expect((await api('PATCH', '/api/v1/concurrency', { body: { limit: 1 } })).status).toBe(200);
});

const concurrency = async () => (await api('GET', '/api/v1/concurrency')).body.data;
const setOverflow = async (body: Record<string, unknown>) => {
  const res = await api('PATCH', `/api/v1/phone-numbers/${number.id}`, { body });
  expect(res.status).toBe(200);
  return res.body.data;
};
/** The platform's call of a carrier call (its calls are listed newest first). */
const platformCallOf = async (from: string) => {
  const calls = (await api('GET', '/api/v1/calls?limit=100')).body.data.filter((c: any) => c.from_phone_number === from);
  expect(calls).toHaveLength(1);
  return calls[0];
};
/** The call that holds the organization's one slot: answered by the agent through the voice runtime. */
async function fillTheSlot(from: string) {
  const call = await twilio.incomingCall(from, number.phone);
  expect(call.twiml).toContain('<Stream');
  await until(concurrency, (c) => c.in_progress.total === 1, 'the slot taken');
  return call;
}

describe('a number\'s overflow settings', () => {
  it('defaults to reject, and refuses forward without a number, forward to itself and bad values, naming the field and writing nothing', async () => {
    const read = (await api('GET', `/api/v1/phone-numbers/${number.id}`)).body.data;
    expect(read).toMatchObject({ overflow: 'reject', overflow_phone_number: null, overflow_queue_seconds: 120, overflow_hold_music_url: null });
    const refusals: [Record<string, unknown>, string][] = [
      [{ overflow: 'forward' }, 'overflow_phone_number'],
      [{ overflow: 'forward', overflow_phone_number: number.phone }, 'overflow_phone_number'],
      [{ overflow: 'voicemail' }, 'overflow'],
      [{ overflow_phone_number: '555' }, 'overflow_phone_number'],
      [{ overflow_queue_seconds: 0 }, 'overflow_queue_seconds'],
      [{ overflow_queue_seconds: 3601 }, 'overflow_queue_seconds'],
      [{ overflow_hold_music_url: 'ftp://music.example.com/a.mp3' }, 'overflow_hold_music_url'],
    ];
    for (const [body, path] of refusals) {
      const res = await api('PATCH', `/api/v1/phone-numbers/${number.id}`, { body });
      expect({ body, status: res.status, code: res.body.error?.code, path: res.body.error?.details?.fields?.[0]?.path }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR', path });
    }
    expect((await api('GET', `/api/v1/phone-numbers/${number.id}`)).body.data).toEqual(read);
    // A stored number to forward to is enough; clearing it while forwarding is refused.
    expect(await setOverflow({ overflow_phone_number: FORWARD_TO })).toMatchObject({ overflow: 'reject', overflow_phone_number: FORWARD_TO });
    expect(await setOverflow({ overflow: 'forward' })).toMatchObject({ overflow: 'forward', overflow_phone_number: FORWARD_TO });
    const cleared = await api('PATCH', `/api/v1/phone-numbers/${number.id}`, { body: { overflow_phone_number: null } });
    expect(cleared.status).toBe(400);
    expect(await setOverflow({ overflow: 'reject', overflow_phone_number: null })).toMatchObject({ overflow: 'reject', overflow_phone_number: null });
  });
});

describe('an incoming call at the limit', () => {
  it('reject: the caller hears busy, and the call is recorded ended `concurrency_limit` with call.ended; the slot stays the first call\'s', async () => {
    const first = await fillTheSlot('+14155550101');
    const refused = await twilio.incomingCall('+14155550102', number.phone);
    expect(refused).toMatchObject({ status: 'busy', twiml: expect.stringContaining('<Reject/>') });
    const recorded = await platformCallOf('+14155550102');
    expect(recorded).toMatchObject({ direction: 'inbound', status: 'ended', disconnection_reason: 'concurrency_limit', answered_at: null, duration_sec: 0 });
    await until(() => eventsOf('call.ended', recorded.id), (events) => events.length === 1, 'call.ended of the refused call');
    // Twilio's `busy` status callback for it moves nothing.
    await local().platform.queue.waitForIdle();
    expect((await callOf(recorded.id)).disconnection_reason).toBe('concurrency_limit');
    expect(await concurrency()).toMatchObject({ in_progress: { total: 1, inbound: 1 }, queued: 0 });
    await twilio.hangUp(first.sid);
    await until(concurrency, (c) => c.in_progress.total === 0, 'the slot freed');
  });

  it('forward: the carrier dials overflow_phone_number, and the call is recorded `forwarded` without a slot', async () => {
    await setOverflow({ overflow: 'forward', overflow_phone_number: FORWARD_TO });
    const first = await fillTheSlot('+14155550103');
    const forwarded = await twilio.incomingCall('+14155550104', number.phone);
    expect(forwarded.twiml).toContain(`<Dial>${FORWARD_TO}</Dial>`);
    expect(forwarded.dialled).toBe(FORWARD_TO);
    expect(await platformCallOf('+14155550104')).toMatchObject({ status: 'ended', disconnection_reason: 'forwarded' });
    expect((await concurrency()).in_progress.total).toBe(1);
    await twilio.hangUp(forwarded.sid);
    await twilio.hangUp(first.sid);
    await until(concurrency, (c) => c.in_progress.total === 0, 'the slot freed');
  });

  it('queue: the caller hears the number\'s hold music while the call waits (queued, queue_position, call.queued), and is connected to the agent when the slot frees', async () => {
    await setOverflow({ overflow: 'queue', overflow_queue_seconds: 300, overflow_hold_music_url: HOLD_MUSIC });
    const first = await fillTheSlot('+14155550105');
    const caller = await twilio.incomingCall('+14155550106', number.phone);
    expect(caller.twiml).toContain('<Enqueue');
    await until(async () => caller.heard ?? [], (heard) => heard.length >= 2, 'two rounds of hold music');
    expect(new Set(caller.heard)).toEqual(new Set([HOLD_MUSIC]));
    const waiting = await platformCallOf('+14155550106');
    expect(waiting).toMatchObject({ direction: 'inbound', status: 'queued', queue_position: 1 });
    expect(await eventsOf('call.queued', waiting.id)).toHaveLength(1);
    expect(await concurrency()).toMatchObject({ in_progress: { total: 1 }, queued: 1 });

    // The first caller hangs up: its slot goes to the caller on hold, who leaves the queue for the agent's stream.
    await twilio.hangUp(first.sid);
    await until(() => callOf(waiting.id), (c) => c.status === 'in_progress', 'the waiting call connected');
    await until(async () => caller.stream, (stream) => !!stream, 'the stream to the voice runtime');
    expect(caller.queue).toBeUndefined();
    expect(await concurrency()).toMatchObject({ in_progress: { total: 1, inbound: 1 }, queued: 0 });
    expect(await eventsOf('call.started', waiting.id)).toHaveLength(1);
    await twilio.hangUp(caller.sid);
    await until(() => callOf(waiting.id), (c) => c.status === 'ended', 'the connected call ended');
    expect((await callOf(waiting.id)).disconnection_reason).toBe('completed');
    await until(concurrency, (c) => c.in_progress.total === 0, 'the slot freed');
  });

  it('queue: past overflow_queue_seconds the caller is told the agents are busy and hung up; the call ends `queue_timeout`', async () => {
    await setOverflow({ overflow: 'queue', overflow_queue_seconds: 30, overflow_hold_music_url: null });
    const first = await fillTheSlot('+14155550107');
    const caller = await twilio.incomingCall('+14155550108', number.phone);
    await until(async () => caller.heard ?? [], (heard) => heard.length >= 1, 'hold music');
    expect(caller.heard![0]).toBe(DEFAULT_HOLD_MUSIC_URL);
    const waiting = await platformCallOf('+14155550108');
    advanceClock(31_000);
    await runCallRecovery();
    await until(() => callOf(waiting.id), (c) => c.status === 'ended', 'the waiting call ended');
    expect(await callOf(waiting.id)).toMatchObject({ disconnection_reason: 'queue_timeout', answered_at: null });
    await until(async () => caller.status, (status) => status === 'completed', 'the caller hung up');
    expect(caller.said).toContain(BUSY_MESSAGE);
    expect(await concurrency()).toMatchObject({ in_progress: { total: 1 }, queued: 0 });
    await twilio.hangUp(first.sid);
    await until(concurrency, (c) => c.in_progress.total === 0, 'the slot freed');
  });

  it('queue: a caller who hangs up on hold ends the call `canceled`, out of the queue, and a freed slot places nobody', async () => {
    await setOverflow({ overflow: 'queue', overflow_queue_seconds: 300 });
    const first = await fillTheSlot('+14155550109');
    const caller = await twilio.incomingCall('+14155550110', number.phone);
    await until(async () => caller.heard ?? [], (heard) => heard.length >= 1, 'hold music');
    const waiting = await platformCallOf('+14155550110');
    await twilio.hangUp(caller.sid);
    await until(() => callOf(waiting.id), (c) => c.status === 'ended', 'the abandoned call ended');
    expect(await callOf(waiting.id)).toMatchObject({ disconnection_reason: 'canceled', answered_at: null, duration_sec: 0 });
    expect(await concurrency()).toMatchObject({ in_progress: { total: 1 }, queued: 0 });
    // Freeing the slot places nobody: the queue is empty.
    await twilio.hangUp(first.sid);
    await until(concurrency, (c) => c.in_progress.total === 0, 'the slot freed');
    expect(await callOf(waiting.id)).toMatchObject({ status: 'ended', disconnection_reason: 'canceled' });
  });
});
