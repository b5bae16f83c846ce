import { EgressRefusedError, FetchFailedError, safeRequest } from '../../../adapters/egress';
import { webhookHeaders } from '../../webhooks/signature';
import { findToolItem, toolSigningSecrets } from '../../tools/service';
import { MAX_TOOL_RESULT_BYTES, type ConversationRef, type ToolInvocation, type ToolOutcome } from '../types';

/** The User-Agent of a webhook tool's request. */
export const TOOL_USER_AGENT = 'VoiceAgentPlatform-Tools/1.0';
const DEFAULT_TIMEOUT_MS = 10_000;

const failed = (error: string): ToolOutcome => ({ ok: false, result: { error } });

/**
 * Runs a webhook tool (operations.md, "Tools at run time"): the tool's `method` to its `url` with
 * its `headers`, within its `timeout_ms`, signed with Standard Webhooks headers (the model's call
 * id as `webhook-id`) and the tool's own secret. POST/PUT/PATCH send the JSON body
 * `{ tool_call_id, name, arguments, conversation }`; GET and DELETE put the arguments in the
 * query string instead (and sign an empty body). The egress rules of webhook deliveries apply
 * (public addresses only, the connection pinned to the checked address, redirects not followed).
 * The answer (JSON when it parses, else text; at most 16 KiB read) is the result. A non-2xx
 * answer, a timeout, a refused address or an inactive tool is `{ error }`: never a throw.
 */
export async function runWebhookTool(orgId: string, toolId: string, call: ToolInvocation, conversation: ConversationRef): Promise<ToolOutcome> {
  const tool = await findToolItem(orgId, toolId);
  if (!tool || tool.type !== 'webhook' || !tool.url) return failed(`the tool ${call.name} no longer exists`);
  if (tool.isActive === false) return failed(`the tool ${call.name} is inactive`);
  const method = tool.method ?? 'POST';
  const withBody = method !== 'GET' && method !== 'DELETE';
  let url = tool.url;
  if (!withBody) {
    const target = new URL(tool.url);
    for (const [k, v] of Object.entries(call.arguments)) target.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    url = target.toString();
  }
  const body = withBody ? JSON.stringify({ tool_call_id: call.id, name: call.name, arguments: call.arguments, conversation }) : '';
  const timeoutMs = tool.timeout_ms ?? DEFAULT_TIMEOUT_MS;
  const secrets = await toolSigningSecrets(tool, Date.now());
  const signed = secrets.length ? webhookHeaders(secrets, call.id, Math.floor(Date.now() / 1000), body) : { 'content-type': 'application/json', 'webhook-id': call.id };
  if (!withBody) delete (signed as Record<string, string>)['content-type'];
  const headers = { ...tool.headers, ...signed, 'user-agent': TOOL_USER_AGENT };
  let answer;
  try {
    answer = await safeRequest(url, { method, headers, ...(withBody ? { body } : {}), timeoutMs, maxBytes: MAX_TOOL_RESULT_BYTES });
  } catch (err) {
    if (err instanceof EgressRefusedError) return failed(`the tool's URL is refused: ${err.reason}`);
    const message = (err as Error).message;
    if (/timed out/.test(message)) return failed(`the tool did not answer within ${timeoutMs} ms`);
    if (err instanceof FetchFailedError) return failed(`the tool could not be reached: ${message}`);
    return failed(`the tool could not be reached: ${message}`);
  }
  if (answer.status >= 300 && answer.status < 400) return failed(`the tool answered a redirect (${answer.status}), which is not followed`);
  const text = answer.body.toString('utf8');
  if (answer.status < 200 || answer.status >= 300) return failed(`the tool answered HTTP ${answer.status}${text ? `: ${text.slice(0, 500)}` : ''}`);
  if (answer.truncated) return { ok: true, result: `${text.replace(/\uFFFD$/, '')}… [truncated at ${MAX_TOOL_RESULT_BYTES} bytes]` };
  if (!text) return { ok: true, result: null };
  try {
    return { ok: true, result: JSON.parse(text) as unknown };
  } catch {
    return { ok: true, result: text };
  }
}
