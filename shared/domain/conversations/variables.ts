import { agentWorkingHoursZone } from '../agents/timezone';

/**
 * `{{placeholders}}` in an agent's `prompt`, `begin_message` and `voicemail_message`, filled per
 * conversation (operations.md, "Agent fields added" and "Conversations in real use"; docs/api.md,
 * "Variables"). `conversationSetup` is the one place a conversation's variables, filled prompt
 * and opening are made: chats, the widget, simulated calls and the voice runtime all call it.
 */

/** The contact fields a conversation may fill from (a stored contact has them all). */
export interface ContactFields {
  first_name?: string;
  last_name?: string;
  email?: string;
  phone?: string;
  company?: string;
  timezone?: string;
  metadata?: Record<string, unknown>;
}

/** The names the platform fills itself; no visitor may set them (nor any `contact.*` or `inbound.*`). */
export const BUILT_IN_VARIABLES = ['agent_name', 'current_time', 'current_time_local', 'timezone'] as const;

/** True for a built-in variable's name or any `contact.*` or `inbound.*` name (an inbound call's routing webhook fills `inbound.*`). */
export const isBuiltInVariable = (name: string): boolean => (BUILT_IN_VARIABLES as readonly string[]).includes(name) || name.startsWith('contact.') || name.startsWith('inbound.');

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

const asText = (value: unknown): string =>
  value === undefined || value === null ? '' : typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);

/**
 * Each zone's wall-clock formatter (null: not a zone Intl knows), built once: building one is the
 * dear part. Intl rather than luxon: a chat function loads this module, and luxon is ~70 KB at its start.
 */
const zoneFormatters = new Map<string, Intl.DateTimeFormat | null>();
const MAX_ZONE_FORMATTERS = 1000;

function zoneFormatter(zone: string): Intl.DateTimeFormat | null {
  let formatter = zoneFormatters.get(zone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    } catch {
      formatter = null; // RangeError: not a time zone
    }
    if (zoneFormatters.size < MAX_ZONE_FORMATTERS) zoneFormatters.set(zone, formatter);
  }
  return formatter;
}

/** True for an IANA zone name Intl knows (and `UTC`). */
const isZone = (name: string | null | undefined): name is string => !!name && zoneFormatter(name) !== null;

/**
 * The conversation's time zone: the contact's `timezone`, else the zone of the agent's working
 * hours, else `UTC`. A name that is not a known IANA zone is passed over.
 */
export function resolveTimezone(contactZone: string | null | undefined, workingHoursZone: string | null | undefined): string {
  if (isZone(contactZone)) return contactZone;
  if (isZone(workingHoursZone)) return workingHoursZone;
  return 'UTC';
}

/**
 * The conversation's time zone, read: the contact's when it has one (no read), else the agent's
 * working hours' (one GetItem through the scheduling area), else UTC.
 */
export async function loadConversationTimezone(orgId: string, agentId: string, contact: ContactFields | null | undefined): Promise<string> {
  if (isZone(contact?.timezone)) return contact.timezone;
  return resolveTimezone(undefined, await agentWorkingHoursZone(orgId, agentId));
}

/** `now` in `zone` as ISO 8601 with its offset, to the second: `2026-11-26T09:05:00+09:00` (`+00:00` for UTC). */
export function localTime(now: Date, zone: string): string {
  const formatter = zoneFormatter(isZone(zone) ? zone : 'UTC')!;
  const p = Object.fromEntries(formatter.formatToParts(now).map((part) => [part.type, part.value])) as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', string>;
  // The zone's offset: its wall clock read as UTC, less the instant (to the second).
  const wall = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  const offset = Math.round((wall - Math.floor(now.getTime() / 1000) * 1000) / 60_000);
  const two = (n: number) => String(n).padStart(2, '0');
  const sign = offset < 0 ? '-' : '+';
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}${sign}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
}

/**
 * The built-in values at `now`: `agent_name`, `current_time` (ISO 8601 UTC, `…Z`),
 * `current_time_local` (now in the conversation's zone, with its offset) and `timezone` (the zone's name).
 */
export function builtInVariables(agentName: string, now: Date, zone: string): Record<string, string> {
  return {
    agent_name: agentName,
    current_time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    current_time_local: localTime(now, zone),
    timezone: isZone(zone) ? zone : 'UTC',
  };
}

/**
 * Every value a placeholder may take in one conversation: the built-ins, `contact.*` and
 * `contact.metadata.<key>` when there is a contact, then the conversation's dynamic variables,
 * which win on a clash. Kept for callers that have no agent item; `conversationSetup` is the whole.
 */
export function conversationVariables(input: {
  agentName: string;
  contact?: ContactFields | null;
  dynamicVariables?: Record<string, string>;
  now?: Date;
  timezone?: string;
}): Record<string, string> {
  const zone = input.timezone ?? resolveTimezone(input.contact?.timezone, undefined);
  const vars = builtInVariables(input.agentName, input.now ?? new Date(), zone);
  return Object.assign(vars, input.contact ? contactVariables(input.contact) : {}, input.dynamicVariables ?? {});
}

/** The `contact.*` and `contact.metadata.<key>` values of one contact. */
export function contactVariables(c: ContactFields): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const field of ['first_name', 'last_name', 'email', 'phone', 'company', 'timezone'] as const) vars[`contact.${field}`] = c[field] ?? '';
  for (const [key, value] of Object.entries(c.metadata ?? {})) vars[`contact.metadata.${key}`] = asText(value);
  return vars;
}

/** Stands for a placeholder filled with nothing while the spaces around it are tidied (never kept). */
const EMPTY = '\u0000';
/** Spaces (not line breaks) around one or more empty placeholders in a row. */
const EMPTY_RUN = /[ \t]*\u0000(?:[ \t]*\u0000)*[ \t]*/g;
/** What may follow a word with no space: after an empty placeholder, the space before it goes. */
const CLOSING = /^[,.;:!?)\]}…]/;

/**
 * Fills `{{name}}` placeholders; a placeholder with no value (or an empty one) becomes nothing, and
 * so do the spaces it leaves: no space before punctuation or at a line's end, no double space
 * ("Hello {{tier}} customer {{name}}, this is…" with no name: "Hello gold customer, this is…").
 * The text's own spacing elsewhere (indentation, line breaks) is kept.
 */
export function fillTemplate(text: string, variables: Record<string, string>): string {
  const value = (name: string) => (Object.hasOwn(variables, name) ? variables[name]! : '');
  // A text (or value) holding the marker itself is filled as written, untidied.
  if (text.includes(EMPTY) || Object.values(variables).some((v) => v.includes(EMPTY))) return text.replace(PLACEHOLDER, (_whole, name: string) => value(name));
  const filled = text.replace(PLACEHOLDER, (_whole, name: string) => value(name) || EMPTY);
  return filled.replace(EMPTY_RUN, (run: string, at: number) => {
    const before = filled[at - 1];
    const after = filled[at + run.length];
    if (after === undefined || after === '\n' || after === '\r' || CLOSING.test(after)) return '';
    const leading = /^[ \t]*/.exec(run)![0];
    if (leading) return leading;
    // Nothing before the placeholder but the line's start: the space after it goes too.
    return before === undefined || before === '\n' ? '' : /[ \t]*$/.exec(run)![0];
  });
}

/** Fills only the placeholders that have a value, leaving the others as written (the public widget config, before any contact is known). */
export function fillKnown(text: string, variables: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(variables, name) ? variables[name]! : whole));
}

/** The agent fields a conversation's setup reads. */
export interface SetupAgent {
  name?: string;
  agent_name?: string;
  prompt?: string;
  begin_message?: string;
  voicemail_message?: string;
}

export interface ConversationSetupInput {
  agent: SetupAgent;
  /** The contact as stored, when the conversation has one. */
  contact?: ContactFields | null;
  /**
   * The contact's values as a chat took them when it started (`contact.*` keys), used instead of
   * `contact` when given: a chat keeps the contact it started with.
   */
  contactVariables?: Record<string, string>;
  /** Set by the business (API): they win over every other value, built-ins included. */
  dynamicVariables?: Record<string, string>;
  /** Set by a widget visitor: they fill only names that are not built-in (never `contact.*`, `agent_name`, `current_time*`, `timezone`). */
  visitorVariables?: Record<string, string>;
  /** The conversation's zone when already known (a chat keeps the one it started with). */
  timezone?: string;
  /** The agent's working hours' zone, the fallback after the contact's (see `loadConversationTimezone`). */
  workingHoursTimezone?: string | null;
  /** The begin message to fill instead of the agent's (a call keeps the one it was placed with). */
  beginMessage?: string | null;
  /** `false`: `fillKnown` (placeholders with no value stay as written), for the public widget config. Default true. */
  fillUnknown?: boolean;
  now: Date;
}

export interface ConversationSetup {
  /** Every placeholder's value. */
  variables: Record<string, string>;
  /** The filled prompt: the model's instructions. */
  system: string;
  /** The filled, trimmed begin message; '' for none. */
  beginMessage: string;
  /** The filled, trimmed voicemail message; '' for none. */
  voicemailMessage: string;
  /** The conversation's IANA time zone. */
  timezone: string;
}

/**
 * A conversation's variables and the texts filled from them, made in one place for every channel.
 * Order, last wins: built-ins, the contact's `contact.*`, visitor variables (not over a built-in
 * name or `contact.*`), the business's `dynamic_variables`.
 */
export function conversationSetup(input: ConversationSetupInput): ConversationSetup {
  const contactVars = input.contactVariables ?? (input.contact ? contactVariables(input.contact) : {});
  const timezone = isZone(input.timezone) ? input.timezone : resolveTimezone(input.contact?.timezone ?? contactVars['contact.timezone'], input.workingHoursTimezone);
  const agent = input.agent;
  const variables = builtInVariables(agent.agent_name || agent.name || '', input.now, timezone);
  Object.assign(variables, contactVars);
  for (const [name, value] of Object.entries(input.visitorVariables ?? {})) if (!isBuiltInVariable(name)) variables[name] = value;
  Object.assign(variables, input.dynamicVariables ?? {});
  const fill = input.fillUnknown === false ? fillKnown : fillTemplate;
  const filled = (text: string | null | undefined) => (text?.trim() ? fill(text, variables).trim() : '');
  return {
    variables,
    system: fill(agent.prompt ?? '', variables),
    beginMessage: filled(input.beginMessage ?? agent.begin_message),
    voicemailMessage: filled(agent.voicemail_message),
    timezone,
  };
}
