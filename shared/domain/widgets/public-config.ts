import { gsi2 } from '../../db/keys';
import { queryAll } from '../../db/store';
import { AppError, NotFoundError } from '../../errors';
import { clockNow } from '../../clock';
import { conversationVariables, fillKnown } from '../conversations/variables';
import type { WidgetConfig, WidgetSettings } from './schemas';

const RESOURCE = 'Widget settings';
const ACTIVE_AGENT = 'AGENT_STATUS_ACTIVE';

/** 404: the widget exists but its `allowed_origins` do not include the page's origin. */
export class OriginNotAllowedError extends AppError {
  constructor(widgetId: string, origin: string) {
    super(404, 'NOT_FOUND', `Widget ${widgetId} is not enabled for origin ${origin}`, { resource: RESOURCE, id: widgetId, origin });
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
  'status', 'agent_name', 'begin_message', 'start_speaker',
];

/**
 * The widget item and the agents tied to it: one Query on GSI2 (`onlyWidget`: the widget item
 * alone). Agent keys sort before the widget's. 404 when the widget is missing or deactivated.
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
  // Deactivated settings are invisible to the public: the agents tied to them are no longer reachable.
  if (!widget || widget.is_active !== true) throw new NotFoundError('Widget', widgetId);
  return { widget, agents: agents.filter((a) => a.organization_id === widget.organization_id) };
}

/**
 * The CORS answer for a page at `origin`: an empty `allowed_origins` admits every origin, and a
 * request without `Origin` (not from a browser page) is answered with `*`. An origin that is
 * not allowed gets a 404 and no CORS headers, so the browser hides the widget.
 */
export function corsHeaders(widget: PartitionItem, widgetId: string, origin: string | undefined): Record<string, string> {
  const allowed = widget.allowed_origins ?? [];
  if (origin !== undefined && allowed.length > 0 && !allowed.includes(origin.toLowerCase())) throw new OriginNotAllowedError(widgetId, origin);
  return { 'access-control-allow-origin': origin ?? '*', vary: 'Origin' };
}

/**
 * The public configuration of an embeddable widget (no API key): its appearance and the first
 * active agent tied to it (oldest first), or `agent: null` when none is. 404 when the widget
 * does not exist, is deactivated, or does not admit the page's origin. Returns the response
 * headers too (CORS, a minute of caching).
 */
export async function getPublicWidgetConfig(widgetId: string, origin: string | undefined): Promise<{ config: WidgetConfig; headers: Record<string, string> }> {
  const { widget, agents } = await readWidgetPartition(widgetId, false);
  const headers = { ...corsHeaders(widget, widgetId, origin), 'cache-control': 'public, max-age=60' };
  const agent = agents.find((a) => a.status === ACTIVE_AGENT);
  // Placeholders that need no contact are filled now; the others stay as written until a chat starts.
  const known = agent ? conversationVariables({ agentName: agent.agent_name || agent.name || '', now: clockNow() }) : {};
  const config: WidgetConfig = {
    id: widgetId,
    title: widget.title ?? '',
    greeting: widget.greeting ?? '',
    placeholder: widget.placeholder ?? '',
    primary_color: widget.primary_color ?? '',
    position: widget.position ?? 'bottom-right',
    avatar_url: widget.avatar_url ?? '',
    language: widget.language ?? 'en',
    agent: agent
      ? { id: agent.id!, agent_name: agent.agent_name ?? '', begin_message: fillKnown(agent.begin_message ?? '', known), start_speaker: agent.start_speaker ?? 'agent' }
      : null,
  };
  return { config, headers };
}

/**
 * The CORS preflight answer of the widget's public paths (its config and its chats): reads only
 * the widget item, same origin rule. `methods` are the path's own.
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
