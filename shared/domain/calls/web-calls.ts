import { transactWithSlot } from '../concurrency/slots';
import { signToken } from '../../adapters/signed-token';
import { clockMs, clockNow } from '../../clock';
import { config } from '../../config';
import { collections, keys } from '../../db/keys';
import { getItem, putNew } from '../../db/store';
import { UnavailableError, UnprocessableError, ValidationError } from '../../errors';
import { noteDue } from '../../db/sweep-marker';
import { resolveAgentVersion } from '../agents/versions';
import { personKey } from '../agents/traffic-split';
import { moveCall, type MoveResult } from './lifecycle';
import { newCallWrites, view, type AgentItem, type CallItem } from './service';
import { STATUS_RANK } from './state';
import { traceClaim } from './voice-stream';

/**
 * Web calls (operations.md, "Web calls: voice in the browser"): a call session with `channel`
 * `web`, carried by a browser's WebSocket to the voice runtime instead of a carrier. No number, no
 * carrier, no charge: the platform's only call charge is the carrier's minutes at the number's
 * price (billing), and a web call has neither; the speech model's own use is billed to whoever
 * holds REALTIME_API_KEY, as on phone calls, so the platform adds no model-minutes charge.
 *
 * Its course: created `ringing` with a one-use token (60 s); the browser's `start` with the token
 * is admitted once (openVoiceSession's conditional write, the same as a media stream's) and moves
 * the call `in_progress` (answerWebCall: `call.started`); the end of the browser's socket, or
 * either side's hang-up, ends it `completed` (or `failed` with the model's failure) with its
 * transcript, tool calls, analysis and `call.ended` (voice-session.ts, recordConversation, as an
 * inbound call: its `direction` is `inbound`, the visitor calling the agent). A token never used
 * leaves the call `ringing` until the recovery sweep ends it `failed` at its due time.
 */

/** How long a web call's token admits its browser. */
export const WEB_CALL_TOKEN_TTL_SECONDS = 60;
/** The voice runtime's path for browsers (beside `/stream`, Twilio's). */
export const WEB_CALL_PATH = '/web';

// The schemas live apart (web-call-schemas.ts): operation modules import them without this module's code.
export { CreateWebCallBody, WebCallStarted, WidgetCallStarted, type CreateWebCallInput } from './web-call-schemas';
import type { CreateWebCallInput, WebCallStarted } from './web-call-schemas';

/**
 * Why no web call can be made here, or undefined. Deployed, the stack always runs the voice
 * runtime with its speech model (REALTIME_API_KEY's secret); locally, one must be set.
 */
export function speechModelProblem(): string | undefined {
  if (config().runtime === 'aws') return undefined;
  if (process.env.REALTIME_BASE_URL || process.env.REALTIME_API_KEY) return undefined;
  return 'No speech model is configured: set REALTIME_API_KEY (OpenAI\'s Realtime API) where the platform runs, or REALTIME_BASE_URL for another Realtime-compatible server, then start it again';
}

/** The 503 of no speech model, naming what to set: REALTIME_API_KEY first (what OpenAI users set), REALTIME_BASE_URL for another server. */
export function noSpeechModel(problem: string): UnavailableError {
  return new UnavailableError(problem, { setting: 'REALTIME_API_KEY', settings: ['REALTIME_API_KEY', 'REALTIME_BASE_URL'] });
}

/** The browsers' WebSocket URL of the voice runtime: VOICE_RUNTIME_URL (…/stream) with `/web` in place of its path's end. */
export function webCallUrl(): string {
  const stream = config().voiceRuntimeUrl;
  if (!stream) throw new UnavailableError('Web calls need the voice runtime: VOICE_RUNTIME_URL is not set', { setting: 'VOICE_RUNTIME_URL' });
  const url = new URL(stream);
  url.pathname = url.pathname.replace(/\/stream\/?$/, '').replace(/\/$/, '') + WEB_CALL_PATH;
  url.search = '';
  return url.toString();
}

/** Agents in these statuses answer calls (as an inbound number's agent). */
const ANSWERING = new Set([undefined, 'AGENT_STATUS_ACTIVE', 'AGENT_STATUS_UNSPECIFIED']);

/** Where a web call comes from beyond its body (a widget). */
export interface WebCallOrigin {
  metadata?: Record<string, unknown>;
  /** The widget visitor's id: a traffic split sticks to it when the call has no contact. */
  visitorId?: string;
}

/**
 * Creates a web call `ringing` and its browser's token. A 400 names `agent_id`, `contact_id` or
 * `agent_version` that is not the organization's; an agent that does not answer (inactive) is a
 * 422; then, the request being one that could be answered, no speech model configured is a 503
 * naming the setting. Nothing is written on any of them.
 */
export async function createWebCall(orgId: string, input: CreateWebCallInput, origin: WebCallOrigin = {}): Promise<WebCallStarted> {
  const [agent, contact] = await Promise.all([
    getItem<AgentItem & { id: string; published_version?: number | null }>(keys.agent(orgId, input.agent_id)),
    input.contact_id ? getItem(keys.contact(orgId, input.contact_id)) : Promise.resolve(null),
  ]);
  const issues = [];
  if (!agent) issues.push({ path: 'agent_id', message: 'is not an agent of this organization' });
  if (input.contact_id && !contact) issues.push({ path: 'contact_id', message: 'is not a contact of this organization' });
  if (issues.length) throw new ValidationError(`Validation failed: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, issues);
  if (!ANSWERING.has(agent!.status)) throw new UnprocessableError('The agent is not active: it cannot take calls', { agent_id: input.agent_id, status: agent!.status });

  // The version the call runs (agents/versions.ts): pinned, else published, else the draft; 400 for one that does not exist.
  const used = await resolveAgentVersion(orgId, { ...agent!, id: input.agent_id }, input.agent_version, undefined, personKey({ contactId: input.contact_id, visitorId: origin.visitorId }));
  // What the platform lacks comes after what the request got wrong: a bad request is told as such first.
  const problem = speechModelProblem();
  if (problem) throw noSpeechModel(problem);
  const url = webCallUrl();
  const { item, writes, slot } = newCallWrites(orgId, {
    agentId: input.agent_id,
    agent: used.agent as AgentItem,
    agentVersion: used.agent_version,
    trafficSplitId: used.traffic_split_id,
    number: null,
    channel: 'web',
    direction: 'inbound',
    from: '',
    to: '',
    contactId: input.contact_id ?? null,
    campaignId: null,
    metadata: origin.metadata ?? {},
    dynamicVariables: input.dynamic_variables ?? {},
    status: 'ringing',
  });
  // At the organization's concurrency limit: 429 CONCURRENCY_LIMIT with Retry-After, nothing written.
  await transactWithSlot(orgId, [putNew({ ...item }), ...writes], slot, [{ orgId, collection: collections.calls, delta: 1 }]);
  await noteDue('call-recovery', item.due_at!);
  const token = await signToken('web-call', { organization_id: orgId, call_id: item.id, ...traceClaim() }, WEB_CALL_TOKEN_TTL_SECONDS);
  const expires = new Date(Math.floor(clockMs() / 1000) * 1000 + WEB_CALL_TOKEN_TTL_SECONDS * 1000).toISOString();
  return { call: await view(item), url, token, token_expires_at: expires };
}

/** The browser was admitted (its token used): the call is answered (`in_progress`, `call.started`). */
export async function answerWebCall(call: CallItem): Promise<MoveResult> {
  return moveCall(call, { status: 'in_progress', rank: STATUS_RANK.in_progress, answered: true }, { at: clockNow().toISOString() });
}
