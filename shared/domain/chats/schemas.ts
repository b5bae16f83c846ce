import * as z from 'zod/mini';
import { named } from '../common/named';
import { DynamicVariables, freeFormObject, pageQueryShape, uuid } from '../common/schemas';

export { DynamicVariables };
import { lazy } from '../common/lazy';
import { instant } from '../scheduling/time';
import { CallAnalysis, ConversationSegment } from '../calls/schemas';
import { AgentVersionPin } from '../agents/schemas';
import { ConversationLatency, ReplyLatency } from '../conversations/latency-schemas';

export const CHAT_STATUSES = ['active', 'requires_action', 'ended'] as const;
export type ChatStatus = (typeof CHAT_STATUSES)[number];
export const CHAT_CHANNELS = ['api', 'widget'] as const;
export type ChatChannel = (typeof CHAT_CHANNELS)[number];
export const CHAT_END_REASONS = ['user_ended', 'agent_ended', 'inactivity', 'max_turns'] as const;
export type ChatEndReason = (typeof CHAT_END_REASONS)[number];

/** Characters of one user message. */
export const MAX_MESSAGE_CHARS = 4000;
/** User messages of one chat; the next one ends it (`max_turns`). */
export const MAX_USER_MESSAGES = 100;

export const StartChatBody = /* @__PURE__ */ named('StartChatRequest', () => z.strictObject({
  agent_id: uuid(),
  contact_id: z.optional(uuid()),
  dynamic_variables: z.optional(DynamicVariables),
  metadata: z.optional(freeFormObject()),
  /** Pins the agent's version (a number, or "draft"); default its published_version, else the draft. */
  agent_version: z.optional(AgentVersionPin),
}), 'A chat to start with an active agent');
export type StartChatInput = z.output<typeof StartChatBody>;

export const ChatMessageBody = /* @__PURE__ */ named('ChatMessageRequest', () => z.strictObject({
  content: z.string().check(
    z.refine((s) => s.trim().length > 0, 'must not be empty'),
    z.maxLength(MAX_MESSAGE_CHARS, `must be at most ${MAX_MESSAGE_CHARS} characters`),
  ),
}), 'One user message');

export const ToolResultsBody = /* @__PURE__ */ named('ChatToolResultsRequest', () => z.strictObject({
  results: z.array(z.strictObject({
    tool_call_id: z.string().check(z.minLength(1), z.maxLength(200)),
    /** What the tool answered: any JSON value (kept up to 16 KiB of its JSON text). */
    output: z.unknown(),
  })).check(z.minLength(1), z.maxLength(50)),
}), 'Answers to every pending `function` tool call');
export type ToolResultsInput = z.output<typeof ToolResultsBody>;

export const ChatListQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  /** The agent the chat started with. */
  agent_id: z.optional(uuid()),
  /** Any agent that handled the chat: the one it started with or one it was handed off to. */
  handled_by: z.optional(uuid()),
  contact_id: z.optional(uuid()),
  status: z.optional(z.enum(CHAT_STATUSES)),
  channel: z.optional(z.enum(CHAT_CHANNELS)),
  /** Started at or after (inclusive). */
  from: z.optional(instant()),
  /** Started before or at (inclusive). */
  to: z.optional(instant()),
}));
export type ChatListInput = z.output<typeof ChatListQuery>;

export const ChatSource = /* @__PURE__ */ named('ChatSource', () => z.object({ doc_id: z.string(), url: z.nullable(z.string()), score: z.number() }), 'A knowledge-base document that grounded an answer');

export const ChatMessage = /* @__PURE__ */ named('ChatMessage', () => z.object({
  id: z.string(),
  role: z.enum(['agent', 'user', 'tool_call', 'tool_result']),
  /** The text; "" for tool messages. */
  content: z.string(),
  tool_call_id: z.nullable(z.string()),
  /** tool_call and tool_result: the tool's function name. */
  name: z.nullable(z.string()),
  /** tool_call: the arguments. */
  arguments: z.nullable(z.record(z.string(), z.unknown())),
  /** tool_result: what the tool answered, or `{ "error": … }`. */
  result: z.optional(z.unknown()),
  /** agent: the passages that grounded the reply (may be empty). */
  sources: z.array(ChatSource),
  /** agent: the agent that produced the reply (after a hand-off, the agent handed to; see `segments`); null for the other roles. */
  agent_id: z.nullable(z.string()),
  /** agent: where the reply's time went (null for the other roles, and for replies stored before it was measured). */
  latency_ms: z.nullable(ReplyLatency),
  created_at: z.string(),
}), 'A message of a chat');
export type ChatMessage = z.output<typeof ChatMessage>;

export const PendingToolCall = /* @__PURE__ */ named('PendingToolCall', () => z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) }), 'A `function` tool call the API caller must answer');

export const ChatUsage = /* @__PURE__ */ named('ChatUsage', () => z.object({ llm_requests: z.number(), prompt_tokens: z.number(), completion_tokens: z.number() }), 'Model usage of a conversation');

const chatFields = /* @__PURE__ */ lazy(() => ({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.string(),
  /** The agent version the chat started with (null: the draft). */
  agent_version: z.nullable(z.int()),
  /** The traffic split that drew `agent_version` (null: none; docs/api.md, "Traffic split between versions"). */
  traffic_split_id: z.nullable(z.string()),
  /** The agent handling the chat now (its last segment's): `agent_id` until a hand-off. */
  current_agent_id: z.string(),
  /** The version the current agent runs (null: its draft). */
  current_agent_version: z.nullable(z.int()),
  /** Who handled the chat: the starting agent's segment, then one per agent-to-agent hand-off. */
  segments: z.array(ConversationSegment),
  contact_id: z.nullable(z.string()),
  channel: z.enum(CHAT_CHANNELS),
  /** The widget a `widget` chat was started from, else null. */
  widget_id: z.nullable(z.string()),
  status: z.enum(CHAT_STATUSES),
  end_reason: z.nullable(z.enum(CHAT_END_REASONS)),
  pending_tool_calls: z.array(PendingToolCall),
  dynamic_variables: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.unknown()),
  analysis: z.nullable(CallAnalysis),
  analysis_error: z.nullable(z.string()),
  usage: ChatUsage,
  /** The replies' times, written when the chat ends (null before, or with no timed reply). */
  latency: z.nullable(ConversationLatency),
  /** User messages so far (at most 100). */
  user_messages: z.number(),
  started_at: z.string(),
  ended_at: z.nullable(z.string()),
  /** The OpenTelemetry trace the chat was started in (null when tracing is off; docs/api.md, "Traces"). */
  trace_id: z.nullable(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}));

/** A chat as lists show it (without its messages). */
export const ChatSummary = /* @__PURE__ */ named('ChatSummary', () => z.object(chatFields), 'A chat without its messages (lists, events)');
export type ChatSummary = z.output<typeof ChatSummary>;
export const Chat = /* @__PURE__ */ named('Chat', () => z.object({ ...chatFields, messages: z.array(ChatMessage) }), 'A text conversation with an agent, with every message');
export type Chat = z.output<typeof Chat>;

export const ChatTurn = /* @__PURE__ */ named('ChatTurn', () => z.object({
  chat: z.object({ id: z.string(), status: z.enum(CHAT_STATUSES), end_reason: z.nullable(z.enum(CHAT_END_REASONS)), pending_tool_calls: z.array(PendingToolCall) }),
  messages: z.array(ChatMessage),
}), 'What one turn added');
export type ChatTurn = z.output<typeof ChatTurn>;
