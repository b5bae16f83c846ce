import { clockMs } from '../../clock';
import { keys, type Key } from '../../db/keys';
import { countInWindow } from '../../db/window-counter';
import { RateLimitedError } from '../../errors';
import { logger } from '../../logger';
import { counterExpiry, decide, windowAt } from '../rate-limit/window';

/**
 * The public widget's abuse limits (operations.md, "The web widget"): per widget 60 new chats a
 * minute, per client address 10 new chats a minute (on that widget: one office behind one NAT
 * address should not lock itself out of every site that embeds us), per chat 20 messages a
 * minute. Fixed one-minute windows counted in the table (shared/db/window-counter.ts), so they
 * hold across every process; a refusal is a 429 with `Retry-After` (seconds to the window's end).
 * Like the API-key limit, a counter that fails lets the request through and logs a warning.
 * Each limit can be changed through the environment (tests start a platform with tiny ones).
 */
export const WIDGET_LIMIT_DEFAULTS = { chatsPerWidget: 60, chatsPerAddress: 10, messagesPerChat: 20 };

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

async function spend(key: (window: number) => Key, max: number, what: string): Promise<void> {
  const now = clockMs();
  const window = windowAt(now);
  let counted: number | null;
  try {
    counted = await countInWindow(key(window.index), max, counterExpiry(window));
  } catch (err) {
    logger.warn('widget limit not applied: the counter failed', { limit: what, error: (err as Error).message });
    return;
  }
  const decision = decide(counted, max, window, now);
  if (!decision.allowed) throw new RateLimitedError(decision.resetSeconds);
}

/** Counts a new chat against the client address's limit, then the widget's; 429 when either is spent. */
export async function spendChatStart(widgetId: string, address: string): Promise<void> {
  const limits = widgetLimits();
  await spend((w) => keys.widgetClientChatStarts(widgetId, address, w), limits.chatsPerAddress, 'address');
  await spend((w) => keys.widgetChatStarts(widgetId, w), limits.chatsPerWidget, 'widget');
}

/** Counts a message of a widget chat; 429 past the chat's limit. */
export async function spendChatMessage(chatId: string): Promise<void> {
  await spend((w) => keys.widgetChatMessages(chatId, w), widgetLimits().messagesPerChat, 'chat');
}
