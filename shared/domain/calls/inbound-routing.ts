import { EgressRefusedError, safeRequest } from '../../adapters/egress';
import { secrets } from '../../adapters/secrets';
import type { AgentVersionPin } from '../agents/schemas';
import { MAX_DYNAMIC_VARIABLES } from '../common/schemas';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { webhookHeaders } from '../webhooks/signature';

/**
 * Per-caller routing of inbound calls (operations.md, "Per-caller routing of inbound calls";
 * docs/api.md, "Per-caller routing"): before a call to a number with an `inbound_webhook_url` is
 * answered, the platform POSTs `{ event: "call.inbound", call: { from, to, phone_number_id },
 * contact? }` there, signed as Standard Webhooks with the number's secret, within the number's
 * `inbound_webhook_timeout_ms`, and reads the answer `{ agent_id?, agent_version?, variables?,
 * reject?: { message } }`. This file asks and reads; ./inbound.ts decides (an agent of the
 * organization, a version it has) and falls back to the number's agent when anything fails.
 */

/** The User-Agent of a routing request. */
export const ROUTING_USER_AGENT = 'VoiceAgentPlatform-Routing/1.0';
/** `inbound.<name>`: the namespace the webhook's variables fill (`{{inbound.tier}}`). */
export const INBOUND_VARIABLE_PREFIX = 'inbound.';
/** Longest `reject.message` spoken. */
export const MAX_REJECT_MESSAGE = 1_000;
/** Most of an answer read (50 variables of 2,000 characters fit). */
const MAX_ANSWER_BYTES = 128 * 1024;
const MAX_VARIABLE_NAME = 100;
const MAX_VARIABLE_VALUE = 2_000;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The caller and the number, as the request names them. */
export interface InboundCaller {
  from: string;
  to: string;
  /** The carrier's call id: the request's `webhook-id`, the same on a carrier's retry. */
  providerCallId: string;
}

/** The contact found by the caller's number, as the request carries it. */
export interface InboundContact {
  id: string;
  phone: string;
  first_name?: string;
  last_name?: string;
}

/** What a valid answer chose. */
export interface RoutingChoice {
  agentId?: string;
  agentVersion?: AgentVersionPin;
  /** `inbound.<name>` → text. */
  variables: Record<string, string>;
  /** Set when the webhook refused the call: what is said before hanging up. */
  reject?: string;
}

export type RoutingAnswer = { ok: true; choice: RoutingChoice } | { ok: false; error: string };

/** The request's JSON body. */
export function inboundWebhookBody(number: Pick<PhoneNumberItem, 'id'>, caller: InboundCaller, contact: InboundContact | undefined): string {
  return JSON.stringify({
    event: 'call.inbound',
    call: { from: caller.from, to: caller.to, phone_number_id: number.id },
    ...(contact ? { contact: { id: contact.id, phone_number: contact.phone, first_name: contact.first_name ?? '', last_name: contact.last_name ?? '' } } : {}),
  });
}

/**
 * Asks the number's webhook: the request through the egress guard (public addresses only, or
 * loopback with ALLOW_LOOPBACK_FETCH; redirects not followed) within the number's timeout, which
 * bounds name resolution, connection and answer alike. Never throws for the webhook's failures:
 * they are `{ ok: false, error }` with a readable reason.
 */
export async function askInboundWebhook(
  number: Pick<PhoneNumberItem, 'id' | 'inbound_webhook_url' | 'inbound_webhook_timeout_ms' | 'inbound_webhook_secret_sealed'>,
  caller: InboundCaller,
  contact: InboundContact | undefined,
  secretPromise: Promise<string> = secrets().open(number.inbound_webhook_secret_sealed!),
): Promise<RoutingAnswer> {
  const timeoutMs = number.inbound_webhook_timeout_ms ?? 3_000;
  const body = inboundWebhookBody(number, caller, contact);
  let secret: string;
  try {
    secret = await secretPromise;
  } catch (err) {
    // The secrets key could not open it (KMS down or denied): the call is still answered, by the number's agent.
    return { ok: false, error: `the webhook's signing secret could not be opened: ${(err as Error).message ?? String(err)}` };
  }
  const headers = { 'user-agent': ROUTING_USER_AGENT, accept: 'application/json', ...webhookHeaders([secret], caller.providerCallId, Math.floor(Date.now() / 1000), body) };
  const started = Date.now();
  let answer;
  try {
    answer = await safeRequest(number.inbound_webhook_url!, { method: 'POST', headers, body, timeoutMs, maxBytes: MAX_ANSWER_BYTES, accept: 'application/json', signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    if (err instanceof EgressRefusedError) return { ok: false, error: `the webhook's URL is refused: ${err.reason}` };
    const message = (err as Error).message ?? String(err);
    if (/timed out|abort/i.test(message) || Date.now() - started >= timeoutMs) return { ok: false, error: `the webhook did not answer within ${timeoutMs} ms` };
    return { ok: false, error: `the webhook could not be reached: ${message.replace(/^request failed: /, '')}` };
  }
  if (answer.status < 200 || answer.status >= 300) return { ok: false, error: `the webhook answered HTTP ${answer.status}${answer.status < 400 && answer.status >= 300 ? ' (redirects are not followed)' : ''}` };
  if (answer.truncated) return { ok: false, error: `the answer is longer than ${MAX_ANSWER_BYTES / 1024} KB` };
  const text = answer.body.toString('utf8');
  if (!text.trim()) return { ok: true, choice: { variables: {} } }; // an empty 2xx chooses nothing: the number's agent
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: `the answer is not JSON: ${text.trim().slice(0, 200)}` };
  }
  return readRoutingAnswer(value);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads an answer's JSON. Members that are absent or null choose nothing. Variables are text:
 * a number or boolean is taken as its JSON text, anything else (object, array, null) refuses the
 * whole answer, as do a bad name, too many or too long values. `reject` wins over the rest.
 */
export function readRoutingAnswer(value: unknown): RoutingAnswer {
  const bad = (path: string, message: string): RoutingAnswer => ({ ok: false, error: `${path} ${message}` });
  if (!isObject(value)) return bad('the answer', 'is not a JSON object');
  const { agent_id, agent_version, variables, reject } = value;
  if (reject !== undefined && reject !== null) {
    const message = isObject(reject) && typeof reject.message === 'string' ? reject.message.trim() : '';
    if (!message || message.length > MAX_REJECT_MESSAGE) return bad('reject.message', `must be a text of 1–${MAX_REJECT_MESSAGE} characters`);
    return { ok: true, choice: { variables: {}, reject: message } };
  }
  const choice: RoutingChoice = { variables: {} };
  if (agent_id !== undefined && agent_id !== null) {
    if (typeof agent_id !== 'string' || !UUID.test(agent_id)) return bad('agent_id', 'must be an agent id (a UUID)');
    choice.agentId = agent_id.toLowerCase();
  }
  if (agent_version !== undefined && agent_version !== null) {
    if (agent_version !== 'draft' && !(Number.isInteger(agent_version) && (agent_version as number) >= 1)) return bad('agent_version', 'must be a version number (1, 2, …) or "draft"');
    choice.agentVersion = agent_version as AgentVersionPin;
  }
  if (variables !== undefined && variables !== null) {
    if (!isObject(variables)) return bad('variables', 'must be an object of texts');
    const entries = Object.entries(variables);
    if (entries.length > MAX_DYNAMIC_VARIABLES) return bad('variables', `must have at most ${MAX_DYNAMIC_VARIABLES} members`);
    for (const [name, raw] of entries) {
      if (!VARIABLE_NAME.test(name) || name.length > MAX_VARIABLE_NAME) return bad(`variables.${name}`, 'is not a variable name (letters, digits, _ . -; at most 100)');
      if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') return bad(`variables.${name}`, 'must be a text (or a number or boolean, taken as its text)');
      const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
      if (text.length > MAX_VARIABLE_VALUE) return bad(`variables.${name}`, `must be at most ${MAX_VARIABLE_VALUE} characters`);
      choice.variables[`${INBOUND_VARIABLE_PREFIX}${name}`] = text;
    }
  }
  return { ok: true, choice };
}
