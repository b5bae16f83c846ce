import { EgressRefusedError, safeRequest } from '../../../adapters/egress';
import { webhookHeaders } from '../../webhooks/signature';
import { ensureToolSecret, findToolItem, toolSigningSecrets, type ToolItem } from '../../tools/service';
import { truncatedText } from './results';
import { MAX_TOOL_RESULT_BYTES, type ConversationRef, type ToolInvocation, type ToolOutcome } from '../types';

export { TRUNCATION_MARKER } from './results';

/** The User-Agent of a webhook tool's request. */
export const TOOL_USER_AGENT = 'VoiceAgentPlatform-Tools/1.0';
/** A webhook tool's `timeout_ms` when it has none. */
export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;
/** Most of a failed answer's body quoted in its error. */
const ERROR_EXCERPT_CHARS = 500;

const failed = (error: string): ToolOutcome => ({ ok: false, result: { error } });

/** A webhook tool as it runs: the stored item and the secrets that sign its request now (new first). */
export interface LoadedWebhookTool {
  item: ToolItem;
  secrets: string[];
}

/**
 * The live tool with its unsealed signing secrets, or undefined when it no longer exists. A
 * webhook tool with no secret yet gets one here (see ensureToolSecret). Needs the secrets key
 * (`access.secrets`): kms:Decrypt to open, kms:GenerateDataKey the first time.
 */
export async function loadWebhookTool(orgId: string, toolId: string, now = Date.now()): Promise<LoadedWebhookTool | undefined> {
  const found = await findToolItem(orgId, toolId);
  return found ? unsealWebhookTool(found, now) : undefined;
}

/** A stored tool item (as a BatchGetItem of the catalog read it, sealed fields included) with its signing secrets. */
export async function unsealWebhookTool(found: ToolItem, now = Date.now()): Promise<LoadedWebhookTool> {
  if (found.type !== 'webhook') return { item: found, secrets: [] };
  const item = await ensureToolSecret(found);
  return { item, secrets: await toolSigningSecrets(item, now) };
}

/** A query-string value: text as it is, anything else as its JSON text. */
const queryValue = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * The request a webhook tool receives (docs/api.md, "Tools at run time"). POST, PUT and PATCH
 * carry the JSON body `{ tool_call_id, name, arguments, conversation }`, which is what is
 * signed. GET and DELETE carry no body: the arguments go in the query string (text as it is,
 * other values as JSON), and the signed payload is the query string as sent (after `?`), so the
 * arguments are covered by the signature there too.
 */
export function webhookToolRequest(
  tool: Pick<ToolItem, 'url' | 'method' | 'headers'>,
  secrets: string[],
  call: ToolInvocation,
  conversation: ConversationRef,
  nowSeconds = Math.floor(Date.now() / 1000),
): { url: string; method: string; headers: Record<string, string>; body?: string } {
  const method = tool.method ?? 'POST';
  const withBody = method !== 'GET' && method !== 'DELETE';
  let url = tool.url!;
  let signed: string;
  let body: string | undefined;
  if (withBody) {
    const { type, id, agent_id, contact_id, dynamic_variables, metadata } = conversation;
    // A widget visitor's values travel apart from the business's own `dynamic_variables`.
    const visitor_variables = conversation.visitor_variables ?? {};
    body = JSON.stringify({ tool_call_id: call.id, name: call.name, arguments: call.arguments, conversation: { type, id, agent_id, contact_id, dynamic_variables, visitor_variables, metadata } });
    signed = body;
  } else {
    const target = new URL(url);
    for (const [k, v] of Object.entries(call.arguments)) if (v !== undefined) target.searchParams.set(k, queryValue(v));
    url = target.toString();
    signed = target.search.replace(/^\?/, '');
  }
  const standard = webhookHeaders(secrets, call.id, nowSeconds, signed);
  if (!withBody) delete standard['content-type'];
  // The tool's own headers first: the signature, content type and identity are the platform's.
  const own = Object.fromEntries(Object.entries(tool.headers ?? {}).filter(([name]) => !/^(webhook-(id|timestamp|signature)|content-type)$/i.test(name)));
  return { url, method, headers: { 'user-agent': TOOL_USER_AGENT, ...own, ...standard }, ...(body !== undefined ? { body } : {}) };
}

/** The answer's body as the model's result: JSON when it parses, else its text; null when empty. */
function resultOf(text: string, truncated: boolean): unknown {
  if (truncated) return truncatedText(text); // cut JSON is not JSON: kept as text, never parsed
  if (!text.trim()) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return Buffer.byteLength(text, 'utf8') > MAX_TOOL_RESULT_BYTES ? truncatedText(text) : text;
  }
}

/**
 * Runs a webhook tool (operations.md, "Tools at run time"): the tool's `method` to its `url` with
 * its `headers`, within its `timeout_ms` (default 10 s), signed with Standard Webhooks headers
 * (the model's call id as `webhook-id`) and the tool's own secret (and the previous one during a
 * rotation's overlap). The egress rules of webhook deliveries apply: public addresses only
 * (loopback too with ALLOW_LOOPBACK_FETCH), the connection pinned to the checked address,
 * redirects not followed. The answer (JSON when it parses, else text) is the result, at most
 * MAX_TOOL_RESULT_BYTES of it (a longer one is its cut text with a marker). A non-2xx or 3xx
 * answer, a timeout, a refused or unreachable URL, an inactive or deleted tool is
 * `{ ok: false, result: { error } }` with a readable message: this never throws for the tool's
 * failures (a failing table or key still throws, as everywhere).
 */
export async function runWebhookTool(orgId: string, toolId: string, call: ToolInvocation, conversation: ConversationRef, options: { signal?: AbortSignal } = {}): Promise<ToolOutcome> {
  const loaded = await loadWebhookTool(orgId, toolId);
  if (!loaded) return failed(`the tool ${call.name} no longer exists`);
  return runLoadedWebhookTool(loaded, call, conversation, options);
}

/** runWebhookTool for a tool already loaded (loadWebhookTool). An aborted `signal` cancels the request (the connection is closed) and the call is timed out. */
export async function runLoadedWebhookTool({ item: tool, secrets }: LoadedWebhookTool, call: ToolInvocation, conversation: ConversationRef, options: { signal?: AbortSignal } = {}): Promise<ToolOutcome> {
  if (tool.type !== 'webhook' || !tool.url) return failed(`the tool ${call.name} is not a webhook tool`);
  if (tool.isActive === false) return failed(`the tool ${call.name} is inactive`);
  const timeoutMs = tool.timeout_ms ?? DEFAULT_TOOL_TIMEOUT_MS;
  let request;
  try {
    request = webhookToolRequest(tool, secrets, call, conversation);
  } catch {
    return failed(`the tool's URL is refused: not an absolute URL`);
  }
  let answer;
  const started = Date.now();
  try {
    answer = await safeRequest(request.url, { method: request.method, headers: request.headers, body: request.body, timeoutMs, maxBytes: MAX_TOOL_RESULT_BYTES, accept: 'application/json, text/plain;q=0.9, */*;q=0.5', signal: options.signal });
  } catch (err) {
    if (err instanceof EgressRefusedError) return failed(`the tool's URL is refused: ${err.reason}`);
    if (options.signal?.aborted) return failed(`timed out: the tool was cancelled at the turn's deadline after ${Date.now() - started} ms`);
    const message = (err as Error).message ?? String(err);
    if (/timed out/i.test(message) || Date.now() - started >= timeoutMs) return failed(`the tool timed out after ${timeoutMs} ms`);
    return failed(`the tool could not be reached: ${message.replace(/^request failed: /, '')}`);
  }
  const { status } = answer;
  if (status >= 300 && status < 400) return failed(`the tool answered a redirect (HTTP ${status}), which is not followed`);
  const text = answer.body.toString('utf8');
  if (status < 200 || status >= 300) {
    const excerpt = text.trim().slice(0, ERROR_EXCERPT_CHARS);
    return failed(`the tool answered HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`);
  }
  return { ok: true, result: resultOf(text, answer.truncated) };
}
