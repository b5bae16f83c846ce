import { clockMs } from '../../clock';
import { keys, type Key } from '../../db/keys';
import { countInWindow } from '../../db/window-counter';
import { RateLimitedError } from '../../errors';
import { logger } from '../../logger';
import { counterExpiry, decide, windowAt, type RateWindow } from '../rate-limit/window';

/**
 * The public widget's abuse limits (operations.md, "The web widget" and "Conversations in real
 * use"), each a fixed window counted in the table (shared/db/window-counter.ts), so they hold
 * across every process; a refusal is a 429 with `Retry-After` (seconds to the window's end):
 *
 * - per client address, 10 new chats a minute on one widget (one office behind one NAT address
 *   should not lock itself out of every site that embeds us);
 * - per widget, 600 new chats a minute: sixty times one address's allowance, so a handful of
 *   addresses cannot empty it and lock out every other visitor (it was 60, six addresses). What
 *   a widget may cost is bounded by its daily message budget, not by this;
 * - per chat, 20 messages a minute, tool results included (each is a turn of the model);
 * - per widget, `daily_message_limit` visitor messages a UTC day (default 2,000, 0 = none), the
 *   refusal's `Retry-After` running to the next UTC midnight.
 *
 * Like the API-key limit, a counter that fails lets the request through and logs a warning.
 * The per-minute limits can be changed through the environment (tests start a platform with tiny ones).
 */
export const WIDGET_LIMIT_DEFAULTS = { chatsPerWidget: 600, chatsPerAddress: 10, messagesPerChat: 20 };

function limit(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

export const widgetLimits = () => ({
  chatsPerWidget: limit('WIDGET_CHATS_PER_MINUTE', WIDGET_LIMIT_DEFAULTS.chatsPerWidget),
  chatsPerAddress: limit('WIDGET_ADDRESS_CHATS_PER_MINUTE', WIDGET_LIMIT_DEFAULTS.chatsPerAddress),
  messagesPerChat: limit('WIDGET_CHAT_MESSAGES_PER_MINUTE', WIDGET_LIMIT_DEFAULTS.messagesPerChat),
});

/** 429 of the daily budget: `details.limit` says which, so the widget tells its visitor to come back tomorrow. */
export class DailyLimitError extends RateLimitedError {
  constructor(retryAfterSeconds: number, max: number) {
    super(retryAfterSeconds);
    this.message = `This widget took its ${max} visitor messages for today (daily_message_limit); retry after ${retryAfterSeconds} s, at 00:00 UTC`;
    this.details.limit = 'daily_message_limit';
  }
}

async function spend(key: Key, max: number, window: RateWindow, now: number, what: string, refuse: (seconds: number) => Error): Promise<void> {
  let counted: number | null;
  try {
    counted = await countInWindow(key, max, counterExpiry(window));
  } catch (err) {
    logger.warn('widget limit not applied: the counter failed', { limit: what, error: (err as Error).message });
    return;
  }
  const decision = decide(counted, max, window, now);
  if (!decision.allowed) throw refuse(decision.resetSeconds);
}

function perMinute(key: (window: number) => Key, max: number, what: string): Promise<void> {
  const now = clockMs();
  const window = windowAt(now);
  return spend(key(window.index), max, window, now, what, (s) => new RateLimitedError(s));
}

/** Counts a new chat against the client address's limit, then the widget's; 429 when either is spent. */
export async function spendChatStart(widgetId: string, address: string): Promise<void> {
  const limits = widgetLimits();
  await perMinute((w) => keys.widgetClientChatStarts(widgetId, address, w), limits.chatsPerAddress, 'address');
  await perMinute((w) => keys.widgetChatStarts(widgetId, w), limits.chatsPerWidget, 'widget');
}

/** Counts a turn of a widget chat (a message or the page's tool results); 429 past the chat's limit. */
export async function spendChatTurn(chatId: string): Promise<void> {
  await perMinute((w) => keys.widgetChatMessages(chatId, w), widgetLimits().messagesPerChat, 'chat');
}

const DAY_SECONDS = 24 * 3600;

/** Counts a visitor message against the widget's `daily_message_limit` (0: none); 429 until the next UTC day. */
export async function spendDailyMessage(widgetId: string, dailyLimit: number): Promise<void> {
  if (!(dailyLimit > 0)) return;
  const now = clockMs();
  const window = windowAt(now, DAY_SECONDS);
  const day = new Date(window.startMs).toISOString().slice(0, 10);
  await spend(keys.widgetDailyMessages(widgetId, day), dailyLimit, window, now, 'daily', (s) => new DailyLimitError(s, dailyLimit));
}
