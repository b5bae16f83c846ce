/**
 * A chat turn answered whole: its replies' `e2e` ends with the answer, which waits for the turn's
 * write (docs/api.md, "Latency of every reply"), so the figures are answered with that write's
 * time in them and stored after the answer (shared/after-answer.ts). Through the
 * local runtime's HTTP server, with the turn's write held a known time in front of DynamoDB Local
 * (the fault point every local client has).
 */
import { installFaultInjector } from '../../shared/fault-point';
import { usePlatform } from '../support/platform';

const WRITE_HELD_MS = 300;
const FIGURES_HELD_MS = 100;

const local = usePlatform();
afterEach(() => installFaultInjector(undefined));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sum = (l: any) => l.model + l.tools + l.knowledge_base + l.platform;

/** The names an update's expression uses (the document client's input, at the fault point). */
const namesOf = (input: Record<string, any>): string[] => Object.values(input.ExpressionAttributeNames ?? {}) as string[];
/** A turn's write of its chat: it stores the messages (on the chat, or filed with `filed_count`). */
const isTurnWrite = (op: string, input: Record<string, any>) =>
  (op === 'UpdateItem' && namesOf(input).includes('message_count') && namesOf(input).some((n) => n === 'latest_messages' || n === 'filed_count')) ||
  (op === 'TransactWriteItems' && (input.TransactItems ?? []).some((t: any) => t.Update && isTurnWrite('UpdateItem', t.Update)));
/** The write of a reply's final figures after the answer. */
const isFiguresWrite = (op: string, input: Record<string, any>) => op === 'UpdateItem' && namesOf(input).includes('latency_ms');

/** Holds the turns' writes (and the figures' writes) the given times before they reach DynamoDB Local. */
function holdWrites(turnMs: number, figuresMs: number) {
  const held = { turns: 0, figures: 0 };
  installFaultInjector(async (service, commandName, args, next) => {
    const op = commandName.replace(/Command$/, '');
    if (service === 'dynamodb' && isTurnWrite(op, args.input)) {
      held.turns++;
      await sleep(turnMs);
    } else if (service === 'dynamodb' && isFiguresWrite(op, args.input)) {
      held.figures++;
      await sleep(figuresMs);
    }
    return next(args);
  });
  return held;
}

async function newChat() {
  const { api } = local();
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Whole answers', begin_message: 'Hello!' } });
  expect(agent.status).toBe(200);
  const chat = await api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } });
  expect(chat.status).toBe(200);
  return chat.body.data.id as string;
}

const replyOf = (turn: any) => turn.body.data.messages.find((m: any) => m.role === 'agent' && m.latency_ms).latency_ms;

async function storedReplies(chatId: string): Promise<any[]> {
  const read = await local().api('GET', `/api/v1/chats/${chatId}`);
  expect(read.status).toBe(200);
  return read.body.data.messages.filter((m: any) => m.role === 'agent' && m.latency_ms).map((m: any) => m.latency_ms);
}

it('answers a whole reply with its e2e holding the turn\'s write, and stores those same figures after the answer', async () => {
  const chatId = await newChat();
  const held = holdWrites(WRITE_HELD_MS, 0);
  const started = Date.now();
  const turn = await local().api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'When do you open?' } });
  const clientMs = Date.now() - started;
  expect(turn.status).toBe(200);
  expect(held.turns).toBe(1);
  const answered = replyOf(turn);
  // The write the answer waited for is in e2e (before, e2e ended as the reply was ready, before it).
  expect(answered.e2e).toBeGreaterThanOrEqual(WRITE_HELD_MS);
  expect(answered.e2e).toBeLessThanOrEqual(clientMs);
  expect(answered.platform).toBeGreaterThanOrEqual(WRITE_HELD_MS);
  expect(sum(answered)).toBe(answered.e2e);
  // Stored after the answer: read until the figures' write has landed (it is not held here).
  let stored: any[] = [];
  for (let i = 0; i < 50 && (stored = await storedReplies(chatId))[0]?.e2e !== answered.e2e; i++) await sleep(20);
  expect(stored).toEqual([answered]);
  expect(held.figures).toBe(1);
});

it('keeps a reply\'s final figures when the next turn comes at once: that turn reads the chat after they are stored', async () => {
  const chatId = await newChat();
  // The figures' write lands while the next turn would run; its own write (which carries the chat's
  // latest messages on as it read them) is held past that, so a turn that read too early would put
  // the first reply's figures back as they were before the answer.
  const held = holdWrites(WRITE_HELD_MS, FIGURES_HELD_MS);
  const first = await local().api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'When do you open?' } });
  const second = await local().api('POST', `/api/v1/chats/${chatId}/messages`, { body: { content: 'And on Saturdays?' } });
  expect([first.status, second.status]).toEqual([200, 200]);
  const answered = [replyOf(first), replyOf(second)];
  for (const l of answered) expect(l.e2e).toBeGreaterThanOrEqual(WRITE_HELD_MS);
  let stored: any[] = [];
  for (let i = 0; i < 50 && (stored = await storedReplies(chatId))[1]?.e2e !== answered[1].e2e; i++) await sleep(20);
  expect(stored).toEqual(answered);
  expect(held.figures).toBe(2);
});

it('a streamed turn stores its figures with its messages: no write after the answer', async () => {
  const chatId = await newChat();
  const held = holdWrites(0, 0);
  const response = await fetch(`${local().url}/api/v1/chats/${chatId}/messages`, {
    method: 'POST', headers: { 'x-api-key': local().key, 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ content: 'Hi' }),
  });
  expect(response.status).toBe(200);
  const text = await response.text();
  const completed = JSON.parse(/event: turn\.completed\ndata: (.*)\n/.exec(text)![1]!);
  const streamed = completed.messages.find((m: any) => m.role === 'agent').latency_ms;
  await sleep(100);
  expect(await storedReplies(chatId)).toEqual([streamed]);
  expect(held).toEqual({ turns: 1, figures: 0 });
});

it('a widget turn\'s e2e starts when the function received the message: its admission writes (the visitor\'s allowances) are in it', async () => {
  const { api } = local();
  const widget = await api('POST', '/api/v1/widget-settings', { body: { name: 'Shop', allowed_origins: ['https://shop.example'] } });
  expect(widget.status).toBe(200);
  const widgetId = widget.body.data.id;
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Widget desk', begin_message: 'Hello!', widget_settings_id: widgetId } });
  expect(agent.status).toBe(200);
  const origin = 'https://shop.example';
  const started = await api('POST', `/api/v1/widget/${widgetId}/chats`, { key: null, headers: { origin }, body: {} });
  expect(started.status).toBe(200);
  const { id: chatId, token } = started.body.data;
  // The chat's per-minute allowance, spent before the turn runs, held a known time.
  let spent = 0;
  installFaultInjector(async (service, commandName, args, next) => {
    if (service === 'dynamodb' && JSON.stringify(args.input?.Key ?? {}).includes(`CHAT#${chatId}#`)) {
      spent++;
      await sleep(WRITE_HELD_MS);
    }
    return next(args);
  });
  const t0 = Date.now();
  const turn = await api('POST', `/api/v1/widget/${widgetId}/chats/${chatId}/messages`, { key: null, headers: { origin, authorization: `Bearer ${token}` }, body: { content: 'When do you open?' } });
  const clientMs = Date.now() - t0;
  expect(turn.status).toBe(200);
  expect(spent).toBe(1);
  const figures = replyOf(turn);
  expect(figures.e2e).toBeGreaterThanOrEqual(WRITE_HELD_MS);
  expect(figures.e2e).toBeLessThanOrEqual(clientMs);
  expect(figures.platform).toBeGreaterThanOrEqual(WRITE_HELD_MS);
  expect(sum(figures)).toBe(figures.e2e);
});
