/**
 * The conversation engine's shared vocabulary. One engine runs every conversation (chats through
 * the API or the widget, simulated calls, and the voice runtime's tool calls); channels only carry
 * words or audio to it. See docs/api.md, "Conversations".
 */

/** Which conversation a tool runs for: sent to webhook tools as `conversation`. */
export interface ConversationRef {
  type: 'chat' | 'call';
  id: string;
  organization_id: string;
  agent_id: string;
  contact_id: string | null;
  dynamic_variables: Record<string, string>;
  metadata: Record<string, unknown>;
  /** A widget visitor's variables (the widget's `public_variables`), apart from the business's `dynamic_variables`. */
  visitor_variables?: Record<string, string>;
  /** The conversation's IANA time zone (contact's, else the agent's working hours', else UTC): the calendar built-ins' default (UTC when absent). */
  timezone?: string;
}

/** The members a chat item and a call item share that make their conversation's reference. */
export interface ConversationSource {
  id: string;
  organization_id: string;
  agent_id: string;
  contact_id?: string | null;
  dynamic_variables?: Record<string, string>;
  metadata?: Record<string, unknown>;
  visitor_variables?: Record<string, string>;
  /** The zone the conversation was set up in (variables.ts `conversationSetup`), when the item keeps one. */
  timezone?: string;
}

/** The conversation a chat's or a call's tools run for (webhook tools receive it as `conversation`). */
export function conversationRef(type: ConversationRef['type'], item: ConversationSource, timezone?: string): ConversationRef {
  return {
    type,
    id: item.id,
    organization_id: item.organization_id,
    agent_id: item.agent_id,
    contact_id: item.contact_id ?? null,
    dynamic_variables: item.dynamic_variables ?? {},
    metadata: item.metadata ?? {},
    visitor_variables: item.visitor_variables ?? {},
    timezone: timezone || item.timezone || 'UTC',
  };
}

/** A tool call the engine is about to run: parsed arguments, the model's call id. */
export interface ToolInvocation {
  /** The model's call id; webhook tools receive it as `tool_call_id` and as the `webhook-id` header. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * What a tool answered: a JSON value the model sees. A failure (non-2xx, timeout, refused URL,
 * invalid arguments) is `{ error: "…" }` with `ok` false; the conversation goes on.
 */
export interface ToolOutcome {
  ok: boolean;
  result: unknown;
}

/** Most of a tool's answer kept (and shown to the model): 16 KiB of its JSON text. */
export const MAX_TOOL_RESULT_BYTES = 16 * 1024;

/** The built-in tools (operations.md, "Agent fields added"). */
export const BUILT_IN_TOOLS = ['end_call', 'transfer_call', 'check_availability', 'book_appointment'] as const;
export type BuiltInTool = (typeof BUILT_IN_TOOLS)[number];

/** The conversation's channel decides which tools are offered (no caller answers `function` tools on a phone call). */
export type Channel = 'chat' | 'call';
