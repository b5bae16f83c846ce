import type { LlmTool } from '../../../adapters/llm/port';
import { getToolsByIds, type ToolItem } from '../../tools/service';
import { BUILT_IN_TOOLS, type BuiltInTool, type Channel } from '../types';

/** A tool as one conversation may run it: what the model sees, and what runs it. */
export interface RunnableTool extends LlmTool {
  kind: 'webhook' | 'function' | 'builtin';
  /** The organization's tool (webhook and function tools). */
  toolId?: string;
  /** The stored tool as the catalog read it (sealed secret included), so running it reads nothing again. */
  item?: ToolItem;
  builtin?: BuiltInTool;
  /** The `selected_tools` item as stored (a built-in's own members, such as `transfer_call`'s `phone_number`). */
  selection: Record<string, unknown>;
}

type Parameters = Record<string, unknown>;
const object = (properties: Record<string, unknown>, required: string[] = []): Parameters => ({ type: 'object', properties, required });

/** What the model sees of each built-in (operations.md, "Agent fields added"). */
export const BUILT_IN_DEFINITIONS: Record<BuiltInTool, { description: string; parameters: Parameters; channels: Channel[] }> = {
  end_call: {
    description: 'End the conversation after your reply. Use it when the user says goodbye or the conversation is complete.',
    parameters: object({ reason: { type: 'string', description: 'Why the conversation ends (optional)' } }),
    channels: ['chat', 'call'],
  },
  transfer_call: {
    description: 'Transfer the caller to a person at the configured number. Tell the caller before you transfer.',
    parameters: object({ reason: { type: 'string', description: 'Why the caller is transferred (optional)' } }),
    channels: ['call'],
  },
  check_availability: {
    description: 'List free appointment slots of the calendar between two dates (YYYY-MM-DD, inclusive; at most 14 days).',
    parameters: object(
      {
        start_date: { type: 'string', description: 'First day, YYYY-MM-DD' },
        end_date: { type: 'string', description: 'Last day, YYYY-MM-DD (default: the start date)' },
        timezone: { type: 'string', description: 'IANA time zone of the dates and of the answer, e.g. America/New_York (default: the conversation\'s time zone)' },
        duration_minutes: { type: 'integer', description: 'Length of the appointment in minutes (default 30)' },
      },
      ['start_date'],
    ),
    channels: ['chat', 'call'],
  },
  book_appointment: {
    description: 'Book an appointment at a free slot (check availability first). Name, email and phone default to the contact of the conversation.',
    parameters: object(
      {
        start_time: { type: 'string', description: 'Start, ISO 8601 with offset, e.g. 2026-12-01T15:00:00Z; without an offset it is read in the time zone below' },
        duration_minutes: { type: 'integer', description: 'Length in minutes (default 30)' },
        name: { type: 'string', description: 'Attendee name' },
        email: { type: 'string', description: 'Attendee email' },
        phone: { type: 'string', description: 'Attendee phone, E.164' },
        timezone: { type: 'string', description: 'Attendee IANA time zone (default: the conversation\'s time zone)' },
      },
      ['start_time'],
    ),
    channels: ['chat', 'call'],
  },
};

/**
 * What the model sees of `transfer_call`: with `transfer_destinations`, a `phone_number` argument
 * that must be one of them (the executor refuses any other), each listed with its description.
 */
export function transferToolShape(selection: Record<string, unknown>): { description: string; parameters: Parameters } {
  const def = BUILT_IN_DEFINITIONS.transfer_call;
  const destinations = Array.isArray(selection.transfer_destinations) ? (selection.transfer_destinations as { phone_number: string; description: string }[]) : [];
  if (!destinations.length) return { description: def.description, parameters: def.parameters };
  return {
    description: `Transfer the caller to a person. Choose the destination by its description; tell the caller before you transfer. Destinations: ${destinations.map((d) => `${d.phone_number}: ${d.description}`).join('; ')}.`,
    parameters: object(
      {
        phone_number: { type: 'string', enum: destinations.map((d) => d.phone_number), description: 'The destination\'s number, one of the destinations listed' },
        reason: { type: 'string', description: 'Why the caller is transferred (the person hears it; optional)' },
      },
      ['phone_number'],
    ),
  };
}

export const isBuiltIn = (type: unknown): type is BuiltInTool => (BUILT_IN_TOOLS as readonly unknown[]).includes(type);

/**
 * The tools an agent's conversation offers on a channel, in `selected_tools` order: built-ins by
 * type, the organization's active tools by id (the tools area's batch read). Calls have no caller to answer
 * `function` tools, so they offer only webhook tools and built-ins; `transfer_call` is for calls.
 * A tool deleted or deactivated since it was selected is not offered; a name offered twice keeps
 * its first selection (models need unique names).
 */
export async function toolsForAgent(orgId: string, selected: Record<string, unknown>[], channel: Channel): Promise<RunnableTool[]> {
  const ids = [...new Set(selected.map((s) => s.tool_id).filter((id): id is string => typeof id === 'string'))];
  const byId = new Map((await getToolsByIds(orgId, ids)).map((t) => [t.id, t]));
  const out: RunnableTool[] = [];
  const names = new Set<string>();
  for (const selection of selected) {
    let tool: RunnableTool | undefined;
    if (isBuiltIn(selection.type)) {
      const def = BUILT_IN_DEFINITIONS[selection.type];
      if (def.channels.includes(channel)) tool = { kind: 'builtin', builtin: selection.type, name: selection.type, ...(selection.type === 'transfer_call' ? transferToolShape(selection) : { description: def.description, parameters: def.parameters }), selection };
    } else if (typeof selection.tool_id === 'string') {
      const t = byId.get(selection.tool_id);
      if (t && t.isActive !== false && (t.type === 'webhook' || channel === 'chat')) {
        tool = {
          kind: t.type,
          toolId: t.id,
          item: t,
          name: t.definition.name,
          description: t.definition.description || t.description || t.name,
          parameters: t.definition.parameters as Parameters,
          selection,
        };
      }
    }
    if (tool && !names.has(tool.name)) {
      names.add(tool.name);
      out.push(tool);
    }
  }
  return out;
}
