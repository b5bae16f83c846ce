import type { ChatTurn } from '../chats/schemas';
import { sendMessage, submitToolResults } from '../chats/turns';
import { spendChatMessage } from './abuse-limits';
import { admitChat, turnView, type PublicCall } from './public-chats';

// The widget's two turn endpoints, apart from public-chats.ts so that starting, reading and ending
// a widget chat do not load the conversation engine.

/** One visitor message: a turn, counted against the chat's allowance (429). */
export async function sendWidgetMessage(call: PublicCall, chatId: string, content: string): Promise<ChatTurn> {
  const orgId = await admitChat(call, chatId);
  await spendChatMessage(chatId);
  return turnView(await sendMessage(orgId, chatId, content));
}

/** The page's answers to the chat's pending `function` tool calls. */
export async function submitWidgetToolResults(call: PublicCall, chatId: string, results: { tool_call_id: string; output: unknown }[]): Promise<ChatTurn> {
  const orgId = await admitChat(call, chatId);
  return turnView(await submitToolResults(orgId, chatId, results));
}
