import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetTelephony } from '../../shared/adapters/telephony';
import { installTimeSource } from '../../shared/clock';
import { resetConfig } from '../../shared/config';
import { db } from '../../shared/db/client';
import { keys } from '../../shared/db/keys';
import { getItem, putNew, transact } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import { CreateAgentBody } from '../../shared/domain/agents/schemas';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { CreateCallBody } from '../../shared/domain/calls/schemas';
import { createCall, type CallItem } from '../../shared/domain/calls/service';
import { getChat, IDLE_MS, startChat, sweepIdleChats } from '../../shared/domain/chats/service';
import { dispatchEvents, newEvent } from '../../shared/domain/events/publish';
import { fanOutEvent, sweepWebhooks } from '../../shared/domain/webhooks/deliveries';
import { ensureTable } from '../../shared/local/table';
import { logger } from '../../shared/logger';
import { buyFromPool } from '../support/numbers';

logger.setLogLevel('SILENT');

/**
 * The minute sweeps' "next due" markers (shared/db/sweep-marker.ts) against DynamoDB Local: an
 * idle minute costs one GetItem, and a sweep still runs when something falls due: a new call (the
 * recovery sweep), an open chat (the idle sweep), an event whose fan-out could not be queued (the
 * webhook sweep). The markers are table-wide items, so this file has a table of its own: sweeps
 * of other test files, on clocks of their own, cannot move them.
 */
const TABLE = `vap-test-sweeps-${process.pid}`;
const sent: { queue: string; body: any }[] = [];
let failSends = false;
let now = Date.now();

beforeAll(async () => {
  await ensureTable(process.env.DYNAMODB_ENDPOINT!, TABLE);
  process.env.TABLE_NAME = TABLE;
  resetConfig();
  installLocalQueue({
    send: async (queue, body) => {
      if (failSends) throw new Error('queue unreachable');
      sent.push({ queue, body });
    },
  });
  installTimeSource({ now: () => now });
});
afterAll(() => {
  installLocalQueue(undefined);
  installTimeSource(undefined);
});

/** An enabled endpoint for every event, written straight to the table (as another container's request would). */
async function putEndpoint(org: string): Promise<void> {
  const id = uuidv7();
  const at = new Date().toISOString();
  await transact([putNew({ ...keys.webhook(org, id), entity: 'WEBHOOK', version: 1, id, organization_id: org, url: 'https://hooks.example.com/x', events: ['*'], description: '', enabled: true, created_at: at, updated_at: at, secret_sealed: 'x' })]);
}

/** The DynamoDB requests `work` makes. */
async function requests<T>(work: () => Promise<T>): Promise<{ result: T; commands: string[] }> {
  const spy = jest.spyOn(db(), 'send');
  try {
    const result = await work();
    return { result, commands: spy.mock.calls.map(([command]) => command.constructor.name) };
  } finally {
    spy.mockRestore();
  }
}

async function callingOrganization() {
  const org = uuidv7();
  process.env.TELEPHONY_PROVIDER = 'simulated';
  resetTelephony();
  const { number } = await buyFromPool(org, '206');
  const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Caller', begin_message: '', ring_duration_ms: 1000, max_call_duration_ms: 60_000 }));
  return { org, agentId: agent.id, from: number.phone_number };
}

// First: the other tests leave events of their own in the index.
it('the webhook sweep: an idle minute is one GetItem; an event whose fan-out could not be queued is fanned out by the next minute', async () => {
  const t0 = Date.now();
  await sweepWebhooks(t0);
  const idle = await requests(() => sweepWebhooks(t0 + 60_000));
  expect(idle.commands).toEqual(['GetCommand']);
  // An event of an organization with an endpoint is stored and its fan-out message is lost.
  const org = uuidv7();
  await putEndpoint(org);
  const built = newEvent(org, 'call.ended', { id: 'x' });
  await transact([built.write]);
  failSends = true;
  await dispatchEvents([built.event]);
  failSends = false;
  sent.length = 0;
  const swept = await sweepWebhooks(Date.parse(built.event.created_at) + 31_000);
  expect(swept.events).toBe(1);
  expect(sent).toEqual([{ queue: 'event-fanout', body: { organization_id: org, event_id: built.event.id, type: 'call.ended' } }]);
  // Its fan-out queued again, the sweep looks again a minute later, should that message be lost too.
  const again = await requests(() => sweepWebhooks(Date.parse(built.event.created_at) + 45_000));
  expect(again.commands).toEqual(['GetCommand']);
  // Its fan-out runs at last (it clears the mark, which would otherwise hold the next test's sweeps back).
  expect(await fanOutEvent(org, built.event.id, Date.parse(built.event.created_at) + 50_000, 'call.ended')).toEqual({ jobs: 1 });
});

it('an event no endpoint wants: its fan-out makes no request, the sweep passes over it once, and fans out one an endpoint wants by then', async () => {
  // Prepare: an organization without endpoints; its first fan-out reads them (the container's copy).
  const org = uuidv7();
  const t = Date.now() + 5 * 60_000;
  const first = newEvent(org, 'call.ended', { id: 'a' }, new Date(t));
  await transact([first.write]);
  expect(await fanOutEvent(org, first.event.id, t, 'call.ended')).toEqual({ jobs: 0 });
  // Act: another event's fan-out, then a sweep past both.
  const second = newEvent(org, 'call.ended', { id: 'b' }, new Date(t + 1000));
  await transact([second.write]);
  const fanout = await requests(() => fanOutEvent(org, second.event.id, t + 1000, 'call.ended'));
  sent.length = 0;
  await sweepWebhooks(t + 5 * 60_000);
  // (Only this organization's messages: the previous test's delivery job is due meanwhile.)
  const queuedFor = () => sent.filter((m) => m.body.organization_id === org);
  // Assess: no request, the marks left, nothing queued by the sweep.
  expect(fanout.commands).toEqual([]);
  expect(await getItem(keys.event(org, first.event.id))).toHaveProperty('gsi2pk');
  expect(queuedFor()).toEqual([]);

  // An endpoint is created elsewhere (this container's copy still says none): a later event's
  // fan-out passes it over, the next sweep reads the endpoints afresh and fans that event out,
  // not the ones it already read past.
  await putEndpoint(org);
  const third = newEvent(org, 'call.ended', { id: 'c' }, new Date(t + 10 * 60_000));
  await transact([third.write]);
  expect(await fanOutEvent(org, third.event.id, t + 10 * 60_000, 'call.ended')).toEqual({ jobs: 0 });
  await sweepWebhooks(t + 21 * 60_000);
  expect(queuedFor()).toEqual([{ queue: 'event-fanout', body: { organization_id: org, event_id: third.event.id, type: 'call.ended' } }]);
});

it('the recovery sweep: an idle minute is one GetItem; a new call lowers the marker, and the sweep ends it when due', async () => {
  now = Date.now();
  const first = await runCallRecovery({ now: new Date(now) });
  expect(first.ran).toBe(true); // no marker yet
  const idle = await requests(() => runCallRecovery({ now: new Date(now + 60_000) }));
  expect(idle.result.ran).toBe(false);
  expect(idle.commands).toEqual(['GetCommand']);

  const { org, agentId, from } = await callingOrganization();
  const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550124' }));
  const due = Date.parse((await getItem<CallItem>(keys.call(org, call.id)))!.due_at!);
  const before = await requests(() => runCallRecovery({ now: new Date(due - 60_000) }));
  expect(before.commands).toEqual(['GetCommand']);
  now = due + 1000;
  const { result: at, commands } = await requests(() => runCallRecovery({ now: new Date(due + 1000) }));
  expect(at).toMatchObject({ ran: true, ended: 1 });
  // It reads from the last complete sweep on (minutes ago), not 6 hours × 4 shards: 2 to 3 hours × 4 shards.
  expect(commands.filter((c) => c === 'QueryCommand').length).toBeLessThanOrEqual(12);
  expect(await getItem<CallItem>(keys.call(org, call.id))).toMatchObject({ status: 'ended', disconnection_reason: 'failed' });
});

it('the idle-chat sweep: an idle minute is one GetItem; an open chat is ended once it has been idle for IDLE_MS', async () => {
  now = Date.now();
  const org = uuidv7();
  const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Desk', begin_message: '' }));
  const chat = await startChat(org, { agent_id: agent.id });
  const first = await sweepIdleChats(new Date(now));
  expect(first.ran).toBe(true);
  now += 60_000;
  const idle = await requests(() => sweepIdleChats(new Date(now)));
  expect(idle.result.ran).toBe(false);
  expect(idle.commands).toEqual(['GetCommand']);
  expect((await getChat(org, chat.id)).status).toBe('active');
  now += IDLE_MS;
  const late = await sweepIdleChats(new Date(now));
  expect(late).toMatchObject({ ran: true, ended: 1 });
  expect((await getChat(org, chat.id)).end_reason).toBe('inactivity');
});

