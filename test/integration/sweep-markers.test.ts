import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetTelephony } from '../../shared/adapters/telephony';
import { installTimeSource } from '../../shared/clock';
import { resetConfig } from '../../shared/config';
import { db } from '../../shared/db/client';
import { keys } from '../../shared/db/keys';
import { getItem, transact } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import { CreateAgentBody } from '../../shared/domain/agents/schemas';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { CreateCallBody } from '../../shared/domain/calls/schemas';
import { createCall, type CallItem } from '../../shared/domain/calls/service';
import { getChat, IDLE_MS, startChat, sweepIdleChats } from '../../shared/domain/chats/service';
import { dispatchEvents, newEvent } from '../../shared/domain/events/publish';
import { sweepWebhooks } from '../../shared/domain/webhooks/deliveries';
import { BuyBody } from '../../shared/domain/phone-numbers/schemas';
import { buyPhoneNumber, listAvailablePhoneNumbers } from '../../shared/domain/phone-numbers/service';
import { ensureTable } from '../../shared/local/table';
import { logger } from '../../shared/logger';

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
  const { items } = await listAvailablePhoneNumbers(org, { country: 'US', area_code: '206', limit: 1 });
  const number = await buyPhoneNumber(org, BuyBody.parse({ phone_number: items[0]!.phone_number, price: items[0]!.price }));
  const agent = await createAgent(org, CreateAgentBody.parse({ name: 'Caller', begin_message: '', ring_duration_ms: 1000, max_call_duration_ms: 60_000 }));
  return { org, agentId: agent.id, from: number.phone_number };
}

// First: the other tests leave events of their own in the index.
it('the webhook sweep: an idle minute is one GetItem; an event whose fan-out could not be queued is fanned out by the next minute', async () => {
  const t0 = Date.now();
  await sweepWebhooks(t0);
  const idle = await requests(() => sweepWebhooks(t0 + 60_000));
  expect(idle.commands).toEqual(['GetCommand']);
  // An event is stored and its fan-out message is lost.
  const org = uuidv7();
  const built = newEvent(org, 'call.ended', { id: 'x' });
  await transact([built.write]);
  failSends = true;
  await dispatchEvents([built.event]);
  failSends = false;
  sent.length = 0;
  const swept = await sweepWebhooks(Date.parse(built.event.created_at) + 31_000);
  expect(swept.events).toBe(1);
  expect(sent).toEqual([{ queue: 'event-fanout', body: { organization_id: org, event_id: built.event.id } }]);
  // Its fan-out queued again, the sweep looks again a minute later, should that message be lost too.
  const again = await requests(() => sweepWebhooks(Date.parse(built.event.created_at) + 45_000));
  expect(again.commands).toEqual(['GetCommand']);
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

