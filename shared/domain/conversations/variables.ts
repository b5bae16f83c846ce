/**
 * `{{placeholders}}` in an agent's `prompt` and `begin_message`, filled per conversation
 * (operations.md, "Agent fields added"; docs/api.md, "Variables").
 */

/** The contact fields a conversation may fill from (a stored contact has them all). */
export interface ContactFields {
  first_name?: string;
  last_name?: string;
  email?: string;
  phone?: string;
  company?: string;
  metadata?: Record<string, unknown>;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

const asText = (value: unknown): string =>
  value === undefined || value === null ? '' : typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);

/**
 * Every value a placeholder may take in one conversation: `agent_name`, `current_time` (ISO 8601
 * UTC), `contact.*` and `contact.metadata.<key>` when there is a contact, then the conversation's
 * dynamic variables, which win on a clash.
 */
export function conversationVariables(input: {
  agentName: string;
  contact?: ContactFields | null;
  dynamicVariables?: Record<string, string>;
  now?: Date;
}): Record<string, string> {
  const vars: Record<string, string> = {
    agent_name: input.agentName,
    current_time: (input.now ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  return Object.assign(vars, input.contact ? contactVariables(input.contact) : {}, input.dynamicVariables ?? {});
}

/** The `contact.*` and `contact.metadata.<key>` values of one contact. */
export function contactVariables(c: ContactFields): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const field of ['first_name', 'last_name', 'email', 'phone', 'company'] as const) vars[`contact.${field}`] = c[field] ?? '';
  for (const [key, value] of Object.entries(c.metadata ?? {})) vars[`contact.metadata.${key}`] = asText(value);
  return vars;
}

/** Fills `{{name}}` placeholders; a placeholder with no value becomes an empty string. */
export function fillTemplate(text: string, variables: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (_whole, name: string) => (Object.hasOwn(variables, name) ? variables[name]! : ''));
}

/** Fills only the placeholders that have a value, leaving the others as written (the public widget config, before any contact is known). */
export function fillKnown(text: string, variables: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(variables, name) ? variables[name]! : whole));
}
