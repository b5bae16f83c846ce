import { clockMs } from '../../clock';
import { signToken, verifyToken } from '../../adapters/signed-token';
import { NotFoundError, UnauthorizedError, UnprocessableError, ValidationError } from '../../errors';
import type { Chat, ChatMessage, ChatTurn } from '../chats/schemas';
import { endChat, getChat, startChat } from '../chats/service';
import { spendChatStart } from './abuse-limits';
import type { StartWidgetChatInput, WidgetChat, WidgetChatStarted } from './chat-schemas';
import { corsHeaders, readWidgetPartition, requireActive, type PartitionItem } from './public-config';

/**
 * The widget's public chats (operations.md, "The web widget"): no API key. Every call reads the
 * widget (one Query) and checks the page's `Origin` against `allowed_origins` as the public
 * config does (404 and no CORS headers when refused; a POST without `Origin` is refused the same
 * way). Only then are CORS headers set, so every later answer (a deactivated widget's 404 with
 * `reason` `widget_inactive`, also to chats already open; 401, 409, 429, 503) is readable by the
 * page. A chat's calls need its token: signed for the `widget-chat` purpose, it names the widget,
 * the chat and the organization and expires in 24 h.
 */
export const TOKEN_TTL_SECONDS = 24 * 3600;
const ACTIVE_AGENT = 'AGENT_STATUS_ACTIVE';

/** What a public call brings besides its body. */
export interface PublicCall {
  widgetId: string;
  origin: string | undefined;
  /** The request's HTTP method: a POST must come from a page (`Origin`). */
  method?: string;
  /** The `Authorization` header (`Bearer <token>`). */
  authorization?: string;
  /** The client's address (API Gateway's `requestContext.http.sourceIp`). */
  sourceIp?: string;
  setHeader(name: string, value: string): void;
}

/** Reads the widget and admits the page (origin, then CORS headers, then active): the widget's chats and calls alike. */
export async function admit(call: PublicCall, withAgents: boolean) {
  const partition = await readWidgetPartition(call.widgetId, !withAgents);
  const headers = {
    ...corsHeaders(partition.widget, call.widgetId, call.origin, call.method?.toUpperCase() === 'POST'),
    'access-control-expose-headers': 'retry-after, x-request-id',
    'cache-control': 'no-store',
  };
  for (const [name, value] of Object.entries(headers)) call.setHeader(name, value);
  requireActive(partition.widget, call.widgetId);
  return partition;
}

/** An admitted chat call: 401 without a valid token, 404 for a token of another chat or widget. */
export async function admitChatCall(call: PublicCall, chatId: string): Promise<{ orgId: string; widget: PartitionItem }> {
  const { widget } = await admit(call, false);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(call.authorization ?? '');
  const claims = await verifyToken('widget-chat', match?.[1]);
  if (!claims) throw new UnauthorizedError('Missing, invalid or expired widget chat token (Authorization: Bearer <token>)');
  if (claims.w !== call.widgetId || claims.c !== chatId || claims.o !== widget.organization_id) throw new NotFoundError('Chat', chatId);
  return { orgId: claims.o, widget };
}

/** The organization of an admitted chat call (see admitChatCall). */
export async function admitChat(call: PublicCall, chatId: string): Promise<string> {
  return (await admitChatCall(call, chatId)).orgId;
}

/**
 * The visitor's `dynamic_variables`, checked against the widget's `public_variables`: a name
 * the business did not list is a 400 naming `dynamic_variables.<name>`. They are kept apart
 * from the business's own variables (the chat's `visitor_variables`).
 */
export function visitorVariables(widget: PartitionItem, given: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!given || Object.keys(given).length === 0) return undefined;
  const listed = new Set(widget.public_variables ?? []);
  const refused = Object.keys(given).filter((name) => !listed.has(name));
  if (refused.length) {
    const allowed = listed.size ? `this widget's public_variables are ${[...listed].join(', ')}` : 'this widget lists no public_variables';
    throw new ValidationError(
      `A visitor may set only the widget's public_variables (${allowed})`,
      refused.map((name) => ({ path: `dynamic_variables.${name}`, message: `is not one of the widget's public_variables (${allowed})` })),
    );
  }
  return given;
}

/** What the visitor sees of a message list: what was said, never the tool traffic. */
const visible = (messages: ChatMessage[]) => messages.filter((m) => m.role === 'user' || m.role === 'agent');

function view(chat: Chat, widgetId: string): WidgetChat {
  return {
    id: chat.id,
    widget_id: widgetId,
    agent_id: chat.agent_id,
    status: chat.status,
    end_reason: chat.end_reason,
    pending_tool_calls: chat.pending_tool_calls,
    messages: visible(chat.messages),
    started_at: chat.started_at,
    ended_at: chat.ended_at,
  };
}

export const turnView = (turn: ChatTurn): ChatTurn => ({ chat: turn.chat, messages: visible(turn.messages) });

/**
 * The widget's agent a visitor's chat or call goes to: `agent_id` when it names one of the
 * widget's active agents, else the one active agent (a 400 when several are, a 422 when none is).
 */
export function widgetAgent(call: PublicCall, agents: { id?: string; status?: string }[], agentId: string | undefined): string {
  const active = agents.filter((a) => a.status === ACTIVE_AGENT && a.id);
  if (agentId) {
    if (!active.some((a) => a.id === agentId)) throw ValidationError.field('agent_id', `agent ${agentId} is not an active agent of this widget`);
    return agentId;
  }
  if (active.length === 1) return active[0]!.id!;
  if (active.length === 0) throw new UnprocessableError('No active agent is tied to this widget (set an agent\'s widget_settings_id)', { widget_id: call.widgetId });
  throw ValidationError.field('agent_id', `required: ${active.length} active agents are tied to this widget`);
}

/**
 * Starts a chat (`channel` `widget`) with the widget's agent: `agent_id` may be left out when
 * exactly one active agent is tied to the widget; otherwise it must name one of them. Spends
 * the client address's and the widget's chat allowances (429) before anything is written.
 */
export async function startWidgetChat(call: PublicCall, input: StartWidgetChatInput): Promise<WidgetChatStarted> {
  const { widget, agents } = await admit(call, true);
  const agentId = widgetAgent(call, agents, input.agent_id);
  const visitor = visitorVariables(widget, input.dynamic_variables);
  await spendChatStart(call.widgetId, call.sourceIp ?? 'unknown');
  const orgId = widget.organization_id!;
  const chat = await startChat(orgId, { agent_id: agentId }, {
    channel: 'widget', widget_id: call.widgetId, ...(visitor ? { visitor_variables: visitor } : {}), ...(input.visitor_id ? { visitor_id: input.visitor_id } : {}),
  });
  const token = await signToken('widget-chat', { w: call.widgetId, c: chat.id, o: orgId }, TOKEN_TTL_SECONDS);
  const expires = new Date(Math.floor(clockMs() / 1000) * 1000 + TOKEN_TTL_SECONDS * 1000).toISOString();
  return { ...view(chat, call.widgetId), token, token_expires_at: expires };
}

/** The chat with what was said so far. */
export async function getWidgetChat(call: PublicCall, chatId: string): Promise<WidgetChat> {
  const orgId = await admitChat(call, chatId);
  const chat = await getChat(orgId, chatId);
  if (chat.widget_id !== call.widgetId) throw new NotFoundError('Chat', chatId);
  return view(chat, call.widgetId);
}

/** Ends the chat (`user_ended`); an ended chat is answered unchanged. */
export async function endWidgetChat(call: PublicCall, chatId: string): Promise<WidgetChat> {
  const orgId = await admitChat(call, chatId);
  return view(await endChat(orgId, chatId), call.widgetId);
}
