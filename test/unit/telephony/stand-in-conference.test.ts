/**
 * The Twilio stand-in's conferences behave as Twilio's Conference reference says (test/support/
 * twilio-carrier.ts), since the warm-transfer tests lean on them: a conference starts once two
 * participants are in and one starts it on entering, meanwhile the waiting hear the waitUrl; one
 * with endConferenceOnExit ends it for everyone (their <Dial> is over, their TwiML goes on after it);
 * otherwise it ends when the last one leaves; its status callback hears the events asked for, signed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyTwilioSignature } from '../../../shared/adapters/telephony/twilio-signature';
import { readBody } from '../../support/stand-in';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../../support/twilio-carrier';

let twilio: TwilioCarrierStandIn;
let app: Server;
let base = '';
const events: string[] = [];
const unsigned: string[] = [];

/** Each number's instructions: the caller waits (not starting, ending on exit); the agent starts it (Twilio's defaults otherwise). */
const instructions: Record<string, (room: string) => string> = {
  caller: (room) => `<Response><Dial><Conference startConferenceOnEnter="false" endConferenceOnExit="true" waitUrl="https://hold.example/music.mp3" statusCallback="${base}/conference" statusCallbackEvent="start end join leave">${room}</Conference></Dial></Response>`,
  agent: (room) => `<Response><Dial><Conference>${room}</Conference></Dial><Say>The conference is over.</Say></Response>`,
};

beforeAll(async () => {
  twilio = await startTwilioCarrier();
  app = createServer(async (req, res) => {
    const url = new URL(req.url!, base);
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    if (!verifyTwilioSignature(twilio.authToken, `${base}${req.url}`, form, String(req.headers['x-twilio-signature'] ?? ''))) unsigned.push(req.url!);
    if (url.pathname === '/conference') {
      events.push(`${form.StatusCallbackEvent}${form.CallSid ? `:${form.CallSid}` : ''}`);
      return res.writeHead(204).end();
    }
    res.writeHead(200, { 'content-type': 'text/xml' }).end(instructions[url.searchParams.get('who')!]!(url.searchParams.get('room')!));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await twilio.close();
  await new Promise((r) => app.close(r));
});

let n = 0;
const call = async (who: 'caller' | 'agent', room: string) => {
  const phone = `+1415555${String(3000 + n++).padStart(4, '0')}`;
  twilio.adopt(phone, { voiceUrl: `${base}/voice?who=${who}&room=${room}` });
  return twilio.incomingCall('+14155550100', phone);
};

it('holds the first participant on the waitUrl, starts when the one who starts it joins, and ends for everyone when the one ending it on exit leaves', async () => {
  events.length = 0;
  const caller = await call('caller', 'room-1');
  const conference = twilio.conferences.get('room-1')!;
  expect(conference.status).toBe('init');
  expect(caller.onHold).toBe('https://hold.example/music.mp3');
  const agent = await call('agent', 'room-1');
  expect(conference.status).toBe('in-progress');
  expect(caller.onHold).toBeUndefined();
  await twilio.hangUp(caller.sid); // endConferenceOnExit: the agent's <Dial> is over, its TwiML goes on, then the call ends
  expect(conference.status).toBe('completed');
  expect(agent.said).toEqual(['The conference is over.']);
  expect(agent.status).toBe('completed');
  expect(events).toEqual([`participant-join:${caller.sid}`, `participant-join:${agent.sid}`, 'conference-start', `participant-leave:${caller.sid}`, 'conference-end', `participant-leave:${agent.sid}`]);
  expect(unsigned).toEqual([]);
});

it('goes on when a participant without endConferenceOnExit leaves, and ends when the last one leaves', async () => {
  const caller = await call('caller', 'room-2');
  const agent = await call('agent', 'room-2');
  const conference = twilio.conferences.get('room-2')!;
  await twilio.hangUp(agent.sid);
  expect(conference.status).toBe('in-progress');
  expect(caller.status).toBe('in-progress');
  await twilio.hangUp(caller.sid);
  expect(conference.status).toBe('completed');
  // A waiting caller alone who hangs up ends a conference that never started.
  const alone = await call('caller', 'room-3');
  await twilio.hangUp(alone.sid);
  expect(twilio.conferences.get('room-3')!.status).toBe('completed');
});
