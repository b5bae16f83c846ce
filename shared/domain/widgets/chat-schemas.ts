import * as z from 'zod/mini';
import { named } from '../common/named';
import { uuid } from '../common/schemas';
import { lazy } from '../common/lazy';
import { CHAT_END_REASONS, CHAT_STATUSES, ChatMessage, DynamicVariables, PendingToolCall } from '../chats/schemas';

/** The path of one widget chat: the widget and the chat, both UUIDs. */
export const WidgetChatParams = /* @__PURE__ */ lazy(() => z.strictObject({ id: uuid(), chat_id: uuid() }));

export const StartWidgetChatBody = /* @__PURE__ */ named('StartWidgetChatRequest', () => z.strictObject({
  /** Optional when exactly one active agent is tied to the widget; else one of those agents. */
  agent_id: z.optional(uuid()),
  /**
   * Values for the names the widget lists in `public_variables` only (another name is a 400
   * naming `dynamic_variables.<name>`). Kept apart as the chat's visitor variables: they fill
   * placeholders of those names and reach webhook tools as `conversation.visitor_variables`.
   * A visitor never sets `metadata`.
   */
  dynamic_variables: z.optional(DynamicVariables),
  /**
   * The visitor's own id (the widget script keeps one per browser): a traffic split between the
   * agent's versions sticks to it, so a returning visitor meets the same version.
   */
  visitor_id: z.optional(z.string().check(z.regex(/^[A-Za-z0-9_-]{8,64}$/, 'must be 8–64 letters, digits, _ or -'))),
}), 'A chat to start through a widget (every member optional; no `metadata`)');
export type StartWidgetChatInput = z.output<typeof StartWidgetChatBody>;

const widgetChatFields = /* @__PURE__ */ lazy(() => ({
  id: z.string(),
  widget_id: z.string(),
  agent_id: z.string(),
  status: z.enum(CHAT_STATUSES),
  end_reason: z.nullable(z.enum(CHAT_END_REASONS)),
  pending_tool_calls: z.array(PendingToolCall),
  /** The conversation as the visitor sees it: `user` and `agent` messages only (tool traffic stays private). */
  messages: z.array(ChatMessage),
  started_at: z.string(),
  ended_at: z.nullable(z.string()),
}));

export const WidgetChat = /* @__PURE__ */ named('WidgetChat', () => z.object(widgetChatFields), 'A widget chat as the page sees it (no organization data, no tool results)');
export type WidgetChat = z.output<typeof WidgetChat>;

export const WidgetChatStarted = /* @__PURE__ */ named('WidgetChatStarted', () => z.object({
  ...widgetChatFields,
  /** `Authorization: Bearer <token>` for this chat's other public calls; opens no other chat. */
  token: z.string(),
  token_expires_at: z.string(),
}), 'A widget chat just started, with the token for its other calls');
export type WidgetChatStarted = z.output<typeof WidgetChatStarted>;
