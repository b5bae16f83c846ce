/**
 * Warm transfer on the relay pipeline when things stall or race (issue 42, items 3, 1, 2, 5): the
 * caller's conference TwiML is answered before the briefing is made; a callback of another carrier
 * call changes nothing; a `<Connect action>` of a caller who hung up dials nobody; a person who
 * pressed 1 and hung up before joining, a lost final status callback and a failed send-back each
 * bring the caller back (the recovery sweep watches every pending transfer on the calls-due
 * index); a transferred call outlives its agent's maximum duration; the person's leg is priced by
 * its destination's country. End to end on the local runtime against the Twilio stand-in (which
 * retries no callback, as Twilio does not) under the manual clock.
 */
import { clockMs, installTimeSource } from '../../shared/clock';
import { twilioSignature } from '../../shared/adapters/telephony/twilio-signature';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { keys } from '../../shared/db/keys';
import { getItem } from '../../shared/db/store';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { startTwilioCarrier, twilioRelayEnv, type StandInCall, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';

const BILLING = '+14155550171';
const LONDON = '+447400123456';
let twilio: TwilioCarrierStandIn;
let model: OpenAiStandIn;
let offsetMs = 0;

const ready = (async () => {
  twilio = await startTwilioCarrier({ accountSid: 'AC0000000000000000000000000000fe42', authToken: 'warm-stalls-auth-token', now: () => clockMs() });
  model = await startOpenAiStandIn();
})();
beforeAll(() => ready);
afterAll(async () => {
  installTimeSource(undefined);
  await twilio?.close();
  await model?.close();
});

const local = usePlatform({
  get env() {
    return twilioRelayEnv(twilio, model);
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const platform = () => local().platform;

/** The clock moves forward: the carrier's durations, the transfer's deadlines and the sweep see it. */
function advance(ms: number) {
  offsetMs += ms;
  const offset = offsetMs;
  installTimeSource({ now: () => Date.now() + offset });
}

afterEach(() => {
  model.reset();
  delete twilio.dropCallbacks;
  delete twilio.refuseUpdates;
});

async function relayAgent(extra: Record<string, unknown> = {}, destination = BILLING) {
  const agent = await api('POST', '/api/v1/agents', {
    body: {
      name: 'Warm desk', voice_pipeline: 'relay', prompt: 'You are the front desk of Acme.', begin_message: 'Acme, how can I help?', ring_duration_ms: 20_000,
      selected_tools: [{ type: 'transfer_call', mode: 'warm', transfer_destinations: [{ phone_number: destination, description: 'Billing desk' }] }], ...extra,
    },
  });
  expect(agent.status).toBe(200);
  return agent.body.data.id as string;
}

let spare = 0;
async function boughtNumber(agentId: string): Promise<string> {
  const phone = twilio.available[spare++]!;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: phone, price: 1.15, inbound_agent_id: agentId } });
  expect(bought.status).toBe(200);
  return phone;
}

const BRIEFING = 'Dana was charged twice for order 1042 and wants the duplicate refunded.';

/** An incoming call whose agent transfers it warm; `briefing`: the model's answer for the briefing (a delay makes it slow). */
async function transferredCall(agentId: string, opts: { to?: string; briefing?: { text: string; delayMs?: number }; waitBriefing?: boolean } = {}) {
  const to = opts.to ?? BILLING;
  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(agentId));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const relay = call.relay!;
  model.script({ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: to, reason: 'double charge' } }] }, { text: 'Let me connect you with our billing desk.' }, opts.briefing ?? { text: BRIEFING });
  relay.say('I was charged twice, can I talk to billing?');
  await relay.closed;
  await until(async () => call.conference, (name) => !!name, 'the caller in the conference');
  const leg = (await until(async () => twilio.placedTo(to).find((c) => c.from === call.to), (c) => !!c, 'the person dialed'))!;
  if (opts.waitBriefing !== false) await until(() => getCall(callId), (c) => !!c.transfers?.[0]?.briefing, 'the briefing');
  return { call, callId, relay, leg };
}

/** The recovery sweep as its schedule runs it: the call-recovery job under its own grants, at the clock's now; then what it queued. */
async function sweep() {
  await platform().scheduler.runNow('call-recovery');
  await platform().queue.waitForIdle();
}
const getCall = async (callId: string) => (await api('GET', `/api/v1/calls/${callId}`)).body.data;
/** The call's stored item (its due entry on the calls-due index). */
const itemOf = async (callId: string) => {
  const view = await getCall(callId);
  return (await getItem<{ due_at: string; transfers: any[] }>(keys.call(view.organization_id, callId)))!;
};
const eventsOf = async (type: string, callId: string) => (await api('GET', `/api/v1/events?type=${type}&limit=100`)).body.data.filter((e: any) => e.data?.id === callId);
const chargesOf = async (callId: string) => (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === callId);

/** The caller is back with the agent: a second ConversationRelay session resuming the conversation with `outcome`'s words. */
async function backWithAgent(call: StandInCall, callId: string, outcome: string) {
  await until(async () => call.relays?.length ?? 0, (n) => n === 2, 'the caller back in a new ConversationRelay session');
  expect(call.documents!.at(-1)).toMatch(/<Parameter name="resume" value="0"\/>/);
  expect(call.conference).toBeUndefined();
  const now = await getCall(callId);
  expect(now.transfers).toEqual([expect.objectContaining({ outcome })]);
  expect((await eventsOf('call.transfer_failed', callId)).map((e: any) => e.data.transfer.outcome)).toEqual([outcome]);
  expect(await eventsOf('call.transferred', callId)).toEqual([]);
  await twilio.hangUp(call.sid);
  await platform().relay.idle();
  await platform().queue.waitForIdle();
}

/** Signs and posts a Twilio callback as the carrier would. */
async function postSigned(url: string, params: Record<string, string>) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(twilio.authToken, url, params) }, body: new URLSearchParams(params).toString() });
  return { status: res.status, text: await res.text() };
}

describe('item 3: the person hears the briefing, the caller is not dropped', () => {
  it('answers the caller\'s conference TwiML before the briefing is made: the model works while the person\'s phone rings', async () => {
    const agentId = await relayAgent();
    const { call, callId, leg } = await transferredCall(agentId, { briefing: { text: BRIEFING, delayMs: 2_500 }, waitBriefing: false });
    const action = call.actions![0]!;
    expect(action.twiml).toMatch(/<Dial><Conference /);
    console.info(`[measure] <Connect action> to the caller's conference TwiML with a 2.5 s model: ${Math.round(action.answeredAt - action.sentAt)} ms`);
    // The <Connect action> was answered well within the model's 2.5 s, and the briefing was still being made then.
    expect(action.answeredAt - action.sentAt).toBeLessThan(2_000);
    expect((await getCall(callId)).transfers[0]).toMatchObject({ outcome: null, briefing: '' });
    // The person's `initiated` callback asked for it; it is ready before they answer.
    await until(() => getCall(callId), (c) => c.transfers[0].briefing === BRIEFING, 'the model\'s briefing');
    await twilio.answer(leg.sid, { digits: '1' });
    expect(leg.said![0]).toBe(BRIEFING);
    expect((await getCall(callId)).transfers[0].outcome).toBe('connected');
    await twilio.hangUp(leg.sid);
    await platform().queue.waitForIdle();
  });

  it('a briefing not ready when the person answers (its ringing callbacks lost): the template is spoken within 1.5 s and kept as the briefing', async () => {
    const agentId = await relayAgent();
    // Twilio's `initiated` and `ringing` callbacks do not reach the platform: nobody made the briefing.
    twilio.dropCallbacks = (url, params) => url.includes('/transfer-status') && ['queued', 'ringing'].includes(params.CallStatus ?? '');
    const { callId, leg } = await transferredCall(agentId, { waitBriefing: false });
    expect((await getCall(callId)).transfers[0].briefing).toBe('');
    const answeredAt = Date.now();
    await twilio.answer(leg.sid, { digits: '2' });
    expect(leg.said![0]).toMatch(/^Incoming transfer from the AI agent\. Caller: \+1\d+\. Reason: double charge\./);
    // The answer waited BRIEFING_WAIT_MS (1.5 s) for a briefing, not the model's 4 s.
    expect(Date.now() - answeredAt).toBeLessThan(3_500);
    expect((await getCall(callId)).transfers[0].briefing).toBe(leg.said![0]);
    await platform().relay.idle();
    await platform().queue.waitForIdle();
  });

  it('asynchronous detection finds a machine while the briefing plays: the person\'s call is hung up, the caller goes back, the detection is charged', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent());
    await twilio.answer(leg.sid, { answeredBy: 'machine_start' });
    // Twilio asked for the instructions at once, without AnsweredBy, then posted the result to the status callback.
    const amd = twilio.callbacks.find((c) => c.params.CallSid === leg.sid && c.params.AnsweredBy && !c.params.CallStatus);
    expect(amd).toMatchObject({ status: 200, params: { AnsweredBy: 'machine_start', MachineDetectionDuration: expect.any(String) } });
    expect(leg.status).toBe('completed');
    await backWithAgent(call, callId, 'machine');
    expect((await chargesOf(callId)).map((c: any) => c.description)).toContain(`Answering machine detection on the warm transfer to ${BILLING} (call ${callId}): 1 detection at 0.0075 USD`);
  });

  it('measures the silence before the briefing: synchronous detection holds the instructions for the detection\'s time, asynchronous asks them at once', async () => {
    // The same 2 s detection both ways: the transfer's own leg (asynchronous), and a call placed straight through the stand-in's REST API with synchronous detection to the same transfer-answer.
    const { leg } = await transferredCall(await relayAgent());
    await twilio.answer(leg.sid, { digits: '1', detectionMs: 2_000 });
    const asyncSilence = leg.instructionsAskedAt! - leg.pickedUpAt!;
    const syncPlaced = await fetch(`${twilio.url}/2010-04-01/Accounts/${twilio.accountSid}/Calls.json`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: '+14155550199', From: leg.from, Url: leg.placed!.url, MachineDetection: 'DetectMessageEnd' }).toString(),
    }).then((r) => r.json() as Promise<{ sid: string }>);
    const sync = await twilio.answer(syncPlaced.sid, { detectionMs: 2_000 });
    const syncSilence = sync.instructionsAskedAt! - sync.pickedUpAt!;
    console.info(`[measure] the person's silence before the briefing is asked for, 2 s detection: synchronous ${Math.round(syncSilence)} ms, asynchronous ${Math.round(asyncSilence)} ms`);
    expect(asyncSilence).toBeLessThan(500);
    expect(syncSilence).toBeGreaterThanOrEqual(1_990);
    await twilio.hangUp(leg.sid);
    await platform().queue.waitForIdle();
  });

  it('the stand-in refuses what Twilio refuses: an unknown MachineDetection or AsyncAmd value, a detection timeout outside 3–59 s (21234)', async () => {
    const post = (extra: Record<string, string>) =>
      fetch(`${twilio.url}/2010-04-01/Accounts/${twilio.accountSid}/Calls.json`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ To: BILLING, From: twilio.available[0]!, Url: 'https://example.com/twiml', ...extra }).toString(),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await post({ MachineDetection: 'Async' })).toMatchObject({ status: 400, body: { code: 21234 } });
    expect(await post({ MachineDetection: 'Enable', AsyncAmd: 'yes' })).toMatchObject({ status: 400, body: { code: 21234 } });
    expect(await post({ MachineDetection: 'Enable', MachineDetectionTimeout: '60' })).toMatchObject({ status: 400, body: { code: 21234 } });
    expect(await post({ MachineDetection: 'Enable', AsyncAmd: 'true', AsyncAmdStatusCallback: 'https://example.com/amd' })).toMatchObject({ status: 201 });
  });

  it('a callback of another carrier call changes nothing (200, logged): only the transfer\'s own leg settles it', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent());
    const foreign = { AccountSid: twilio.accountSid, CallSid: 'CA00000000000000000000000000000bad', From: call.to, To: BILLING, Direction: 'outbound-api', ApiVersion: '2010-04-01' };
    expect((await postSigned(leg.placed!.statusCallback!, { ...foreign, CallStatus: 'canceled', CallDuration: '0' })).status).toBe(200);
    expect((await postSigned(leg.placed!.url, { ...foreign, CallStatus: 'in-progress' })).text).toMatch(/<Hangup\/>/);
    const gather = leg.placed!.url.replace('transfer-answer', 'transfer-gather');
    expect((await postSigned(gather, { ...foreign, Digits: '2' })).status).toBe(200);
    expect((await getCall(callId)).transfers[0].outcome).toBeNull();
    expect(call.conference).toBeDefined();
    await twilio.answer(leg.sid, { digits: '1' });
    expect((await getCall(callId)).transfers[0].outcome).toBe('connected');
    await twilio.hangUp(leg.sid);
    await platform().queue.waitForIdle();
  });

  it('a <Connect action> whose CallStatus is completed (the caller hung up as the session ended) dials nobody; the call ends', async () => {
    const agentId = await relayAgent();
    // The action's request and the number's final status callback do not reach the platform in time: the test sends the action as Twilio does when the caller hung up.
    twilio.dropCallbacks = (url) => url.includes('/relay-action') || url.includes('/telephony/twilio/status');
    const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(agentId));
    const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
    model.script({ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: BILLING } }] }, { text: 'Let me connect you.' });
    call.relay!.say('Billing please.');
    await call.relay!.closed;
    const sent = (await until(async () => call.actions?.[0], (a) => !!a, 'the action sent'))!;
    const dialedBefore = twilio.placedTo(BILLING).length;
    delete twilio.dropCallbacks;
    const answer = await postSigned(sent.url, { ...sent.params, CallStatus: 'completed' });
    expect(answer.status).toBe(200);
    expect(answer.text).toMatch(/<Hangup\/>/);
    expect(twilio.placedTo(BILLING)).toHaveLength(dialedBefore);
    await platform().queue.waitForIdle();
    const ended = await until(() => getCall(callId), (c) => c.status === 'ended', 'the call ended');
    expect(ended.transfers).toEqual([]);
    expect(await eventsOf('call.transfer_started', callId)).toEqual([]);
  });
});

describe('item 1: a caller is never left on hold with nobody coming', () => {
  it('the person presses 1 and hangs up before joining: the transfer fails (not connected) and the caller goes back to the agent', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent());
    const t0 = performance.now();
    await twilio.answer(leg.sid, { digits: '1', hangUpAfterKey: true });
    expect(leg.status).toBe('completed');
    expect(leg.conference).toBeUndefined();
    await backWithAgent(call, callId, 'failed');
    console.info(`[measure] pressed 1 then hung up: caller back after ${Math.round(performance.now() - t0)} ms (the leg's completed status callback)`);
  });

  it('the person\'s final status callback is lost (our 5xx; Twilio does not resend it): the sweep asks the carrier at the deadline and brings the caller back', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent());
    twilio.dropCallbacks = (url, params) => url.includes('/transfer-status') && params.CallSid === leg.sid && params.CallStatus === 'no-answer';
    advance(20_000);
    await twilio.noAnswer(leg.sid);
    expect(twilio.callbacks.filter((c) => c.params.CallSid === leg.sid && c.params.CallStatus === 'no-answer').map((c) => c.status)).toEqual([503]); // failed, never sent again
    // Nothing came: the transfer stays pending, the caller on hold; the call's due entry is the transfer's deadline (ring 20 s + 120 s + 60 s).
    const pending = await itemOf(callId);
    expect(pending.transfers[0].outcome).toBeNull();
    expect(Date.parse(pending.due_at)).toBe(Date.parse(pending.transfers[0].started_at) + 200_000);
    expect(call.conference).toBeDefined();
    // Before the deadline the sweep leaves it; past it, the carrier says the call rang out.
    await runCallRecovery({ now: new Date(Date.parse(pending.due_at) - 1_000) });
    expect((await getCall(callId)).transfers[0].outcome).toBeNull();
    advance(Date.parse(pending.due_at) + 1_000 - clockMs());
    const t0 = performance.now();
    await sweep();
    await backWithAgent(call, callId, 'no_answer');
    console.info(`[measure] lost final status callback: caller back ${Math.round((Date.parse(pending.due_at) - Date.parse(pending.transfers[0].started_at)) / 1000)} s after the transfer started (the deadline), the sweep's work ${Math.round(performance.now() - t0)} ms`);
  });

  it('the person presses 1 and hangs up before joining, and that final status callback is lost too: the sweep settles it `failed` 90 s after the key', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent());
    twilio.dropCallbacks = (url, params) => url.includes('/transfer-status') && params.CallSid === leg.sid && params.CallStatus === 'completed';
    await twilio.answer(leg.sid, { digits: '1', hangUpAfterKey: true });
    const accepted = await itemOf(callId);
    expect(accepted.transfers[0]).toMatchObject({ outcome: null, accepted_at: expect.any(String) });
    expect(call.conference).toBeDefined(); // on hold, the conference never started
    // Due 30 s + 60 s after the key (the join, a margin), not the ring-time deadline.
    expect(Date.parse(accepted.due_at)).toBe(Date.parse(accepted.transfers[0].accepted_at) + 90_000);
    advance(Date.parse(accepted.due_at) + 1_000 - clockMs());
    await sweep();
    await backWithAgent(call, callId, 'failed');
  });

  it('sending the caller back fails (the carrier\'s 500): the sweep tries again until it is done', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent());
    let refused = 0;
    twilio.refuseUpdates = (sid) => sid === call.sid && ++refused === 1;
    await twilio.answer(leg.sid, { digits: '2' });
    expect(refused).toBe(1);
    const declined = await itemOf(callId);
    expect(declined.transfers[0].outcome).toBe('declined');
    expect(call.conference).toBeDefined(); // still on hold
    expect(call.relays).toHaveLength(1);
    // The retry is due a minute after the failure.
    expect(Date.parse(declined.due_at) - Date.parse(declined.transfers[0].decided_at)).toBeLessThanOrEqual(61_000);
    advance(61_000);
    const t0 = performance.now();
    await sweep();
    await backWithAgent(call, callId, 'declined');
    expect(refused).toBe(2);
    console.info(`[measure] failed send-back: retried by the sweep 60 s later (its next run), the retry's work ${Math.round(performance.now() - t0)} ms`);
  });
});

describe('item 2: long transferred calls are not ended as failed', () => {
  it('a transferred call outlives its agent\'s maximum duration: the sweep asks the carrier (still live: later), then ends it `transferred` with the carrier\'s real duration', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent({ max_call_duration_ms: 60_000 }));
    await twilio.answer(leg.sid, { digits: '1' });
    const connected = await itemOf(callId);
    expect(connected.transfers[0].outcome).toBe('connected');
    // Due at the carrier's own limit on the conference (4 hours), not at the agent's minute.
    expect(Date.parse(connected.due_at)).toBeGreaterThanOrEqual(Date.parse(connected.transfers[0].decided_at) + 4 * 3600_000);
    // Past the agent's maximum (and its margin) nothing ends it.
    advance(10 * 60_000);
    await runCallRecovery({ lookbackHours: 1 });
    expect((await getCall(callId)).status).toBe('in_progress');
    // Four hours on, the sweep asks the carrier: still talking, looked at again later.
    advance(Date.parse(connected.due_at) + 1_000 - clockMs());
    await sweep();
    const still = await itemOf(callId);
    expect((await getCall(callId)).status).toBe('in_progress');
    expect(Date.parse(still.due_at)).toBeGreaterThan(clockMs() + 14 * 60_000);
    // They hang up, and neither the conference's end nor the caller's final status reaches the platform.
    twilio.dropCallbacks = (url) => url.includes('/transfer-conference') || url.includes('/telephony/twilio/status') || url.includes('/transfer-status');
    await twilio.hangUp(leg.sid);
    expect(call.status).toBe('completed');
    advance(Date.parse(still.due_at) + 1_000 - clockMs());
    await sweep();
    await platform().queue.waitForIdle();
    const ended = await until(() => getCall(callId), (c) => c.status === 'ended', 'the call ended');
    const carrierSec = Math.round((call.endedAtMs! - call.answeredAtMs!) / 1000);
    expect(ended).toMatchObject({ disconnection_reason: 'transferred', duration_sec: carrierSec });
    expect(ended.duration_sec).toBeGreaterThan(4 * 3600);
    expect(ended.error_message ?? null).toBeNull();
    expect(await eventsOf('call.ended', callId)).toHaveLength(1);
    const minutes = Math.ceil(carrierSec / 60);
    expect((await chargesOf(callId)).map((c: any) => c.description)).toContain(`Inbound call from ${call.from}: ${minutes} min at 0.0085 USD/min`);
  });
});

describe('item 5: costs as Twilio bills them', () => {
  it('the person\'s leg at the destination country\'s outbound price (Pricing v2, GB mobile), the detection and the conference\'s participant minutes, each once', async () => {
    const { call, callId, leg } = await transferredCall(await relayAgent({}, LONDON), { to: LONDON });
    advance(20_000); // the caller holds 20 s
    await twilio.answer(leg.sid, { digits: '1' });
    advance(140_000); // they talk 2 min 20 s
    await twilio.hangUp(leg.sid);
    await platform().queue.waitForIdle();
    await until(() => getCall(callId), (c) => c.status === 'ended', 'the call ended');
    const charges = (await chargesOf(callId)).filter((c: any) => !c.description.startsWith('Inbound call'));
    expect(charges.map((c: any) => [c.description, c.amount]).sort()).toEqual([
      [`Warm transfer to ${LONDON} (call ${callId}): 3 min at 0.0376 USD/min`, 0.1128],
      [`Answering machine detection on the warm transfer to ${LONDON} (call ${callId}): 1 detection at 0.0075 USD`, 0.0075],
      // The caller 3 min (20 s on hold + 140 s), the person 3 min.
      [`Warm transfer conference (call ${callId}): 6 participant-min (2 participants) at 0.0018 USD/min`, 0.0108],
    ].sort());
    // Redelivered callbacks charge nothing twice.
    const end = twilio.callbacks.find((c) => c.params.StatusCallbackEvent === 'conference-end' && c.url.includes(callId))!;
    await postSigned(end.url, end.params);
    const status = twilio.callbacks.find((c) => c.params.CallSid === leg.sid && c.params.CallStatus === 'completed')!;
    await postSigned(status.url, status.params);
    expect((await chargesOf(callId)).length).toBe(charges.length + 1);
    expect(call.status).toBe('completed');
  });
});
