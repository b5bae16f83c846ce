import { gsi2 } from '../../db/keys';
import { queryAll } from '../../db/store';
import { AppError, NotFoundError } from '../../errors';
import { clockNow } from '../../clock';
import { conversationSetup } from '../conversations/variables';
import type { WidgetConfig, WidgetSettings } from './schemas';

const RESOURCE = 'Widget settings';
const ACTIVE_AGENT = 'AGENT_STATUS_ACTIVE';

/** 404: the widget exists but its `allowed_origins` do not include the page's origin (or a POST came without `Origin`). */
export class OriginNotAllowedError extends AppError {
  constructor(widgetId: string, origin: string | undefined) {
    super(
      404,
      'NOT_FOUND',
      origin === undefined ? `Widget ${widgetId} takes a POST only from a web page (an Origin header)` : `Widget ${widgetId} is not enabled for origin ${origin}`,
      { resource: RESOURCE, id: widgetId, origin: origin ?? null },
    );
  }
}

/**
 * 404: the widget's settings are deactivated. `details.reason` is `widget_inactive`, and the
 * answer carries CORS headers for an allowed origin, so the widget can tell its visitor that the
 * assistant is not available rather than report a connection problem.
 */
export class WidgetUnavailableError extends NotFoundError {
  constructor(widgetId: string) {
    super('Widget', widgetId);
    this.message = `Widget ${widgetId} is deactivated: its assistant is not available`;
    this.details.reason = 'widget_inactive';
  }
}

/** What the public lookup reads of the widget partition: the widget's appearance and the agents' greeting. */
export type PartitionItem = Partial<WidgetSettings> & {
  gsi2sk: string;
  status?: string;
  agent_name?: string;
  begin_message?: string;
  start_speaker?: 'agent' | 'user';
};

const PROJECTION = [
  'gsi2sk', 'id', 'organization_id', 'is_active', 'allowed_origins', 'name',
  'title', 'greeting', 'placeholder', 'primary_color', 'position', 'avatar_url', 'language',
  'public_variables', 'daily_message_limit', 'voice_enabled', 'status', 'agent_name', 'begin_message', 'start_speaker',
];

/**
 * The widget item and the agents tied to it: one Query on GSI2 (`onlyWidget`: the widget item
 * alone). Agent keys sort before the widget's. 404 when the widget is missing; a deactivated
 * widget is returned (`is_active` false): its caller checks the origin first, so that the
 * refusal (`requireActive`) is readable by an allowed page.
 */
export async function readWidgetPartition(widgetId: string, onlyWidget: boolean) {
  let widget: PartitionItem | undefined;
  const agents: PartitionItem[] = [];
  const items = queryAll<PartitionItem>(
    { index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.widget(widgetId), skName: 'gsi2sk', ...(onlyWidget ? { skPrefix: gsi2.widgetSelf } : {}) },
    PROJECTION,
  );
  for await (const item of items) {
    if (item.gsi2sk === gsi2.widgetSelf) widget = item;
    else agents.push(item);
  }
  if (!widget) throw new NotFoundError('Widget', widgetId);
  return { widget, agents: agents.filter((a) => a.organization_id === widget.organization_id) };
}

/** Deactivated settings are closed to the public: the agents tied to them are no longer reachable (404, `widget_inactive`). */
export function requireActive(widget: PartitionItem, widgetId: string): void {
  if (widget.is_active !== true) throw new WidgetUnavailableError(widgetId);
}

/**
 * The CORS answer for a page at `origin`: an empty `allowed_origins` admits every origin. A read
 * without `Origin` (not from a browser page) is answered with `*`; a POST without one
 * (`requireOrigin`) is refused like an origin that is not allowed, so a script off any page
 * cannot start or drive chats past `allowed_origins`. An origin that is not allowed gets a 404 and
 * no CORS headers, so the browser hides the widget.
 */
export function corsHeaders(widget: PartitionItem, widgetId: string, origin: string | undefined, requireOrigin = false): Record<string, string> {
  const allowed = widget.allowed_origins ?? [];
  if (origin === undefined && requireOrigin) throw new OriginNotAllowedError(widgetId, undefined);
  if (origin !== undefined && allowed.length > 0 && !allowed.includes(origin.toLowerCase())) throw new OriginNotAllowedError(widgetId, origin);
  return { 'access-control-allow-origin': origin ?? '*', vary: 'Origin' };
}

/**
 * The public configuration of an embeddable widget (no API key): its appearance and the first
 * active agent tied to it (oldest first), or `agent: null` when none is. 404 when the widget
 * does not exist, is deactivated, or does not admit the page's origin. Returns the response
 * headers too (CORS, a minute of caching); `setHeader`, when given, receives the CORS headers
 * before a deactivated widget's 404, so an allowed page can read that refusal.
 */
export async function getPublicWidgetConfig(
  widgetId: string,
  origin: string | undefined,
  setHeader?: (name: string, value: string) => void,
): Promise<{ config: WidgetConfig; headers: Record<string, string> }> {
  const { widget, agents } = await readWidgetPartition(widgetId, false);
  const cors = corsHeaders(widget, widgetId, origin);
  if (setHeader) for (const [name, value] of Object.entries(cors)) setHeader(name, value);
  requireActive(widget, widgetId);
  const headers = { ...cors, 'cache-control': 'public, max-age=60' };
  const agent = agents.find((a) => a.status === ACTIVE_AGENT);
  // Placeholders that need no contact are filled now (variables.ts, the one place); the others stay as written until a chat starts.
  const opening = agent ? conversationSetup({ agent: { name: agent.name, agent_name: agent.agent_name, begin_message: agent.begin_message }, fillUnknown: false, now: clockNow() }).beginMessage : '';
  const config: WidgetConfig = {
    id: widgetId,
    title: widget.title ?? '',
    greeting: widget.greeting ?? '',
    placeholder: widget.placeholder ?? '',
    primary_color: widget.primary_color ?? '',
    position: widget.position ?? 'bottom-right',
    avatar_url: widget.avatar_url ?? '',
    language: widget.language ?? 'en',
    voice_enabled: widget.voice_enabled ?? false,
    // Deployed, the turns stream only through the streaming REST API (lib/streaming-api.ts); locally the same server streams.
    stream_base_url: process.env.STREAMING_API_URL ? `${process.env.STREAMING_API_URL.replace(/\/+$/, '')}/api/v1` : null,
    agent: agent
      ? { id: agent.id!, agent_name: agent.agent_name ?? '', begin_message: opening, start_speaker: agent.start_speaker ?? 'agent' }
      : null,
  };
  return { config, headers };
}

/**
 * The CORS preflight answer of the widget's public paths (its config and its chats): reads only
 * the widget item, same origin rule. `methods` are the path's own. A deactivated widget still
 * answers an allowed origin's preflight, so that the request itself goes and its 404
 * (`widget_inactive`) reaches the page instead of a CORS failure.
 */
export async function preflightWidgetConfig(widgetId: string, origin: string | undefined, methods = 'GET, OPTIONS'): Promise<Record<string, string>> {
  const { widget } = await readWidgetPartition(widgetId, true);
  return {
    ...corsHeaders(widget, widgetId, origin),
    'access-control-allow-methods': methods,
    'access-control-allow-headers': 'authorization, content-type',
    'access-control-max-age': '600',
  };
}
