import { logger } from '../../../logger';
import { AppError } from '../../../errors';
import type { ConversationRef, ToolInvocation, ToolOutcome } from '../types';
import { argumentIssues } from './arguments';
import type { RunnableTool } from './catalog';
import { runLoadedWebhookTool, runWebhookTool, unsealWebhookTool } from './webhook';
import { toolSpan } from '../../../telemetry/genai';
import { recordToolError } from '../../../telemetry/metrics';

/** What a built-in asks of the channel once the agent's reply is given. */
export interface ToolEffect {
  /** `end_call`: the conversation ends after the reply. */
  end?: 'agent_ended';
  /** `transfer_call`: the caller goes to this number. */
  transferTo?: string;
  /** `transfer_call`: how (`cold`: a plain `<Dial>`; `warm`: a conference and a briefing, calls/warm-transfer.ts); set with transferTo. */
  transferMode?: 'cold' | 'warm';
  /** `transfer_call`: the chosen destination's description, when it has one. */
  transferDescription?: string;
  /** `transfer_call`: the model's `reason`. */
  transferReason?: string;
}

export interface ExecutedTool extends ToolOutcome {
  effect?: ToolEffect;
}

/** Most slots `check_availability` shows the model (the model reads them all; fewer is clearer). */
const MAX_SLOTS = 20;
const DEFAULT_DURATION = 30;

const failure = (message: string): ExecutedTool => ({ ok: false, result: { error: message } });

/** A domain error's message is meant for the caller, and so for the model; anything else is logged and named only. */
function failureOf(err: unknown, tool: string): ExecutedTool {
  if (err instanceof AppError) {
    const fields = (err.details as { fields?: { path: string; message: string }[] } | undefined)?.fields;
    return failure(fields?.length ? `${err.message}: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}` : err.message);
  }
  logger.warn('A built-in tool failed', { tool, error: err as Error });
  return failure(`${tool} failed; try again later`);
}

/** A local start time the model wrote without an offset (`2026-12-01T15:00`) read in `zone`; one with an offset or Z is kept as written. */
async function withZone(start: string, zone: string): Promise<string> {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(start)) return start;
  // luxon loads with the calendar tools that need it, not with every chat function.
  const { DateTime } = await import('luxon');
  const local = DateTime.fromISO(start, { zone });
  return local.isValid ? local.toISO({ suppressMilliseconds: true })! : start;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);

/**
 * Where `transfer_call` sends the caller: with `transfer_destinations`, the one whose number the
 * model's `phone_number` names (anything else is refused to the model), in its own mode or the
 * item's; without, the item's `phone_number` in the item's `mode` (default `cold`).
 */
export function transferTarget(selection: Record<string, unknown>, asked: unknown): { to: string; mode: 'cold' | 'warm'; description?: string } | { error: string } {
  const itemMode = selection.mode === 'warm' ? 'warm' : 'cold';
  const destinations = Array.isArray(selection.transfer_destinations) ? (selection.transfer_destinations as { phone_number?: unknown; mode?: unknown; description?: unknown }[]) : [];
  if (destinations.length) {
    const wanted = str(asked);
    const chosen = destinations.find((d) => d.phone_number === wanted);
    if (!chosen) return { error: `phone_number must be one of the transfer destinations: ${destinations.map((d) => `${String(d.phone_number)} (${String(d.description ?? '')})`).join(', ')}` };
    return { to: String(chosen.phone_number), mode: chosen.mode === 'warm' || chosen.mode === 'cold' ? chosen.mode : itemMode, ...(str(chosen.description) ? { description: str(chosen.description) } : {}) };
  }
  const to = str(selection.phone_number);
  if (!to) return { error: 'no transfer number is configured for this agent' };
  return { to, mode: itemMode };
}

async function runBuiltIn(tool: RunnableTool, call: ToolInvocation, conversation: ConversationRef): Promise<ExecutedTool> {
  const args = call.arguments;
  const orgId = conversation.organization_id;
  switch (tool.builtin) {
    case 'end_call':
      return { ok: true, result: { ended: true }, effect: { end: 'agent_ended' } };
    case 'transfer_call': {
      const target = transferTarget(tool.selection, args.phone_number);
      if ('error' in target) return failure(target.error);
      const reason = str(args.reason);
      return {
        ok: true,
        result: { transferring_to: target.to, mode: target.mode },
        effect: { transferTo: target.to, transferMode: target.mode, ...(target.description ? { transferDescription: target.description } : {}), ...(reason ? { transferReason: reason } : {}) },
      };
    }
    case 'check_availability': {
      const { availability } = await import('../../appointments/service');
      const start = str(args.start_date)!;
      try {
        const answer = await availability(orgId, {
          agent_id: conversation.agent_id,
          start,
          end: str(args.end_date) ?? start,
          duration_minutes: int(args.duration_minutes) ?? DEFAULT_DURATION,
          timezone: str(args.timezone) ?? conversation.timezone ?? 'UTC',
        } as never);
        return { ok: true, result: { timezone: answer.timezone, duration_minutes: answer.duration_minutes, slots: answer.slots.slice(0, MAX_SLOTS), more: answer.slots.length > MAX_SLOTS } };
      } catch (err) {
        return failureOf(err, call.name);
      }
    }
    case 'book_appointment': {
      const { bookAppointment } = await import('../../appointments/service');
      const zone = str(args.timezone) ?? conversation.timezone;
      try {
        const appointment = await bookAppointment(orgId, {
          agent_id: conversation.agent_id,
          ...(conversation.contact_id ? { contact_id: conversation.contact_id } : {}),
          ...(str(args.name) ? { attendee_name: str(args.name) } : {}),
          ...(str(args.email) ? { attendee_email: str(args.email) } : {}),
          ...(str(args.phone) ? { attendee_phone: str(args.phone) } : {}),
          ...(zone ? { attendee_timezone: zone } : {}),
          start_time: await withZone(str(args.start_time)!, zone ?? 'UTC'),
          duration_minutes: int(args.duration_minutes) ?? DEFAULT_DURATION,
        } as never);
        return {
          ok: true,
          result: { booked: true, appointment_id: appointment.id, start_time: appointment.start_time, end_time: appointment.end_time, meeting_url: appointment.meeting_url },
        };
      } catch (err) {
        return failureOf(err, call.name);
      }
    }
    default:
      return failure(`unknown built-in tool ${call.name}`);
  }
}

/**
 * Runs one tool call of the platform's own (webhook tools and built-ins). Arguments are checked
 * against the tool's parameters first: invalid ones go back to the model as an error result,
 * never to the tool. A tool's failure is a result the model sees; this never throws for it.
 * `function` tools are not run here: the caller answers them (chats) or they are not offered (calls).
 * `signal` cancels a webhook tool's request (the engine aborts it at the turn's deadline).
 */
export function executeTool(tool: RunnableTool, call: ToolInvocation, conversation: ConversationRef, options: { signal?: AbortSignal } = {}): Promise<ExecutedTool> {
  // An `execute_tool` span (GenAI conventions) when tracing is on; a failed call counted (the ToolErrors metric).
  return toolSpan(call, tool.kind, async () => {
    const outcome = await runTool(tool, call, conversation, options);
    if (!outcome.ok) recordToolError(tool.kind);
    return outcome;
  });
}

async function runTool(tool: RunnableTool, call: ToolInvocation, conversation: ConversationRef, options: { signal?: AbortSignal }): Promise<ExecutedTool> {
  const issues = argumentIssues(tool.parameters, call.arguments);
  if (issues.length) return failure(`invalid arguments: ${issues.join('; ')}`);
  if (tool.kind === 'builtin') return runBuiltIn(tool, call, conversation);
  if (tool.kind === 'webhook') {
    const outcome = tool.item
      ? await runLoadedWebhookTool(await unsealWebhookTool(tool.item), call, conversation, options)
      : await runWebhookTool(conversation.organization_id, tool.toolId!, call, conversation, options);
    return outcome;
  }
  return failure(`${call.name} is answered by the client, not the platform`);
}
