import type { ChatTurn } from '../chats/schemas';
import { sendMessage, submitToolResults, type TurnOptions } from '../chats/turns';
import { streamChatTurn } from '../chats/stream';
import type { StreamBody } from '../common/stream-body';
import { spendChatTurn, spendDailyMessage } from './abuse-limits';
import { admitChatCall, turnView, type PublicCall } from './public-chats';
import { DEFAULT_DAILY_MESSAGE_LIMIT } from './schemas';

// The widget's two turn endpoints, apart from public-chats.ts so that starting, reading and ending
// a widget chat do not load the conversation engine.

/** Asked for server-sent events: the turn streams as the chats' do, without the tool traffic the visitor never sees. */
export interface WidgetStream {
  requestId?: string;
}

/**
 * One visitor message: a turn, counted against the chat's allowance and the widget's daily budget (429).
 * Its replies' `e2e` starts when the function received it (`receivedMs`), before those admission writes.
 */
export async function sendWidgetMessage(call: PublicCall, chatId: string, content: string, stream?: WidgetStream, { afterAnswer, receivedMs = Date.now() }: Omit<TurnOptions, 'listener'> = {}): Promise<ChatTurn | StreamBody> {
  const { orgId, widget } = await admitChatCall(call, chatId);
  await spendChatTurn(chatId);
  await spendDailyMessage(call.widgetId, widget.daily_message_limit ?? DEFAULT_DAILY_MESSAGE_LIMIT);
  if (stream) return streamChatTurn((listener) => sendMessage(orgId, chatId, content, { listener, receivedMs }), { successMessage: 'Message answered', requestId: stream.requestId, view: turnView, showTools: false });
  return turnView(await sendMessage(orgId, chatId, content, { afterAnswer, receivedMs }));
}

/** The page's answers to the chat's pending `function` tool calls: a turn too, counted against the chat's allowance (429). */
export async function submitWidgetToolResults(call: PublicCall, chatId: string, results: { tool_call_id: string; output: unknown }[], stream?: WidgetStream, { afterAnswer, receivedMs = Date.now() }: Omit<TurnOptions, 'listener'> = {}): Promise<ChatTurn | StreamBody> {
  const { orgId } = await admitChatCall(call, chatId);
  await spendChatTurn(chatId);
  if (stream) return streamChatTurn((listener) => submitToolResults(orgId, chatId, results, { listener, receivedMs }), { successMessage: 'Tool results accepted', requestId: stream.requestId, view: turnView, showTools: false });
  return turnView(await submitToolResults(orgId, chatId, results, { afterAnswer, receivedMs }));
}
