import { keys } from '../../db/keys';
import { ConditionFailed, getItem, putNew, queryPage, transact, updateExisting, type PageRequest } from '../../db/store';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConflictError, NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { listResult } from '../common/list-result';
import { agentDefaults, type Agent, type AgentVersionPin } from './schemas';
import { activeSplit, drawVersion, type PersonKey, type SplitOnAgent } from './traffic-split';

/**
 * Agent versions (docs/api.md, "Versions and tests"). The agent item is the editable draft;
 * publishing freezes a copy of every field that shapes a conversation as an immutable version
 * item in the agent's own partition (`ORG#<org>#AGENT#<id>`, `VER#<n>`). Numbers come from a
 * counter on the agent item (`last_version`), advanced in the same transaction that puts the
 * version with `attribute_not_exists`, conditioned on the counter as read: two racing publishes
 * get distinct numbers (the loser reads again and takes the next). A version is never written
 * again, so a process may keep it in memory for its whole life (the LRU below).
 */

/**
 * Every agent field that shapes a conversation: what a version freezes, in one place. A field
 * added to agents that shapes conversations is added here; fields an agent does not have yet
 * (an older item) are left out of the copy. `name`, `status` and `widget_settings_id` are the
 * agent's identity and placement, not its behaviour.
 */
export const CONVERSATION_FIELDS = [
  'agent_name',
  'prompt',
  'begin_message',
  'start_speaker',
  'model',
  's2s_model',
  'voice_id',
  'voice_pipeline',
  'language',
  'temperature',
  'reminder_trigger_ms',
  'reminder_max_count',
  'ambient_sound',
  'ambient_sound_volume',
  'end_call_after_silence',
  'max_call_duration_ms',
  'ring_duration_ms',
  'enable_voicemail_detection',
  'voicemail_message',
  'voicemail_detection_timeout_ms',
  'ivr_options',
  'selected_tools',
  'integrations',
  'knowledge_base',
  'post_call_analysis_model',
  'analysis_summary_prompt',
  'analysis_fields',
  'success_criteria',
  'handoff_agents',
] as const;

export type VersionConfig = Partial<Pick<Agent, Extract<(typeof CONVERSATION_FIELDS)[number], keyof Agent>>> & Record<string, unknown>;

export interface AgentVersion {
  agent_id: string;
  version: number;
  description: string;
  created_at: string;
  config: VersionConfig;
  /** The passed run whose frozen draft this version is (a gated publish). */
  test_run_id?: string;
}

interface VersionItem extends AgentVersion {
  pk: string;
  sk: string;
  entity: 'AGENT_VERSION';
  organization_id: string;
  /** The agent's name when published (the conversation's `agent_name` fallback). */
  agent_label: string;
}

interface AgentItem extends Agent {
  last_version?: number;
}

/** The published version a change was made against (`expected_published_version`) is no longer the agent's: 409. */
export function publishedVersionChanged(agentId: string, expected: number | null, current: number | null): ConflictError {
  return new ConflictError(`The agent's published_version is ${current ?? 'null (the draft)'}, not ${expected ?? 'null'}; nothing was changed`, {
    reason: 'published_version_changed',
    id: agentId,
    expected_published_version: expected,
    published_version: current,
  });
}

/** A condition (names #pv, value :epv) that `published_version` is `expected` (null: none, or null). */
export function expectedVersionCondition(expected: number | null) {
  return expected === null
    ? { condition: '(attribute_not_exists(#pv) OR #pv = :epv)', names: { '#pv': 'published_version' }, values: { ':epv': null } }
    : { condition: '#pv = :epv', names: { '#pv': 'published_version' }, values: { ':epv': expected } };
}

/** The publish gate is off (or was never set): the condition an ungated change of what is live is written under. */
export const GATE_OFF_CONDITION = { condition: '(attribute_not_exists(#rpt) OR #rpt = :rptoff)', names: { '#rpt': 'require_passing_tests' }, values: { ':rptoff': false } };

/** 422: the agent's publish gate refuses an untested change of what is live. */
export const testsRequired = (agentId: string, what: string) =>
  new UnprocessableError(`The agent requires passing tests (require_passing_tests): ${what}`, { reason: 'tests_required', agent_id: agentId });

/** The frozen copy of an agent's conversation-shaping fields (those it has). */
export function versionConfig(agent: Record<string, unknown>): VersionConfig {
  const config: Record<string, unknown> = {};
  for (const field of CONVERSATION_FIELDS) if (agent[field] !== undefined) config[field] = structuredClone(agent[field]);
  return config as VersionConfig;
}

const view = (item: VersionItem): AgentVersion => ({
  agent_id: item.agent_id,
  version: item.version,
  description: item.description,
  created_at: item.created_at,
  config: item.config,
  ...(item.test_run_id ? { test_run_id: item.test_run_id } : {}),
});

/** Most versions one process keeps in memory (each at most an item, 400 KB, usually a few KB). */
const CACHE_SIZE = 200;
const cache = new Map<string, VersionItem>();
const cacheKey = (orgId: string, agentId: string, version: number) => `${orgId}/${agentId}/${version}`;

function remember(item: VersionItem): void {
  const k = cacheKey(item.organization_id, item.agent_id, item.version);
  cache.delete(k);
  cache.set(k, item);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
}

/** Forgets every cached version (tests that delete agents under a running process). */
export function clearVersionCache(): void {
  cache.clear();
}

/** One version item: from memory when this process read it before (versions never change), else one GetItem. */
async function versionItem(orgId: string, agentId: string, version: number): Promise<VersionItem | undefined> {
  const k = cacheKey(orgId, agentId, version);
  const hit = cache.get(k);
  if (hit) {
    cache.delete(k);
    cache.set(k, hit);
    return hit;
  }
  const item = await getItem<VersionItem>(keys.agentVersion(orgId, agentId, version), false);
  if (item) remember(item);
  return item;
}

/**
 * Publishes `config` (default: the draft as it is now) as the agent's next version and makes it
 * the `published_version`. The agent write is conditioned on the counter as read, so of two racing
 * publishes each gets its own number; on `expected_published_version` when given (409 when it
 * moved); and, for a publish no passed run stands behind (no `test_run_id`), on the agent's gate
 * being off (422 `tests_required` when it is on), all in the same write.
 */
export async function publishVersion(
  orgId: string,
  agentId: string,
  input: { description?: string; config?: VersionConfig; test_run_id?: string; expected_published_version?: number | null },
): Promise<AgentVersion> {
  const key = keys.agent(orgId, agentId);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const agent = await getItem<AgentItem>(key);
    if (!agent) throw new NotFoundError('Agent', agentId);
    const current = agent.published_version ?? null;
    if (input.expected_published_version !== undefined && input.expected_published_version !== current) throw publishedVersionChanged(agentId, input.expected_published_version, current);
    if (!input.test_run_id && agent.require_passing_tests) throw testsRequired(agentId, 'publish with require_passing_tests, or with the test_run_id of a passed run of every test');
    const previous = agent.last_version ?? 0;
    const version = previous + 1;
    const now = new Date().toISOString();
    const item: VersionItem = {
      ...keys.agentVersion(orgId, agentId, version),
      entity: 'AGENT_VERSION',
      organization_id: orgId,
      agent_id: agentId,
      agent_label: agent.name,
      version,
      description: input.description ?? '',
      created_at: now,
      config: input.config ?? versionConfig(agent as unknown as Record<string, unknown>),
      ...(input.test_run_id ? { test_run_id: input.test_run_id } : {}),
    };
    const counter = previous
      ? { condition: '#lv = :lv', names: { '#lv': 'last_version' }, values: { ':lv': previous } }
      : { condition: 'attribute_not_exists(#lv)', names: { '#lv': 'last_version' }, values: {} };
    const parts = [counter, ...(input.expected_published_version !== undefined ? [expectedVersionCondition(input.expected_published_version)] : []), ...(input.test_run_id ? [] : [GATE_OFF_CONDITION])];
    try {
      await transact([
        updateExisting(key, { last_version: version, published_version: version, updated_at: now }, {
          condition: parts.map((p) => p.condition).join(' AND '),
          names: Object.assign({}, ...parts.map((p) => p.names)),
          values: Object.assign({}, ...parts.map((p) => p.values)),
        }),
        putNew({ ...item }),
      ]);
      remember(item);
      return view(item);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt); // read again: the counter, the published version or the gate moved
    }
  }
  throw new ConflictError('The agent is being published by other requests; retry', { id: agentId });
}

/** An agent's versions, newest first; the total is the agent's counter (versions are never deleted one by one). */
export async function listVersions(orgId: string, agentId: string, query: PageRequest) {
  const agent = await getItem<AgentItem>(keys.agent(orgId, agentId));
  if (!agent) throw new NotFoundError('Agent', agentId);
  const page = await queryPage<VersionItem>({ pkName: 'pk', pkValue: keys.agentPartition(orgId, agentId), skName: 'sk', skPrefix: keys.agentVersionPrefix, descending: true }, query);
  return listResult({ items: page.items.map(view), nextCursor: page.nextCursor }, agent.last_version ?? 0, query);
}

export async function getVersion(orgId: string, agentId: string, version: number): Promise<AgentVersion> {
  // The agent first: a deleted agent's versions may outlive it for the seconds its cleanup takes.
  const [item, agent] = await Promise.all([versionItem(orgId, agentId, version), getItem(keys.agent(orgId, agentId))]);
  if (!agent) throw new NotFoundError('Agent', agentId);
  if (!item) throw new NotFoundError('Agent version', String(version));
  return view(item);
}

/** True when the agent has published `version` (the rollback check). */
export async function versionExists(orgId: string, agentId: string, version: number): Promise<boolean> {
  return !!(await versionItem(orgId, agentId, version));
}

/**
 * The agent as a conversation of `version` sees it: the version's frozen fields over the
 * defaults, with the agent's identity. Reads no agent item (the version is cached after its
 * first read), so a turn of a pinned conversation costs no agent read. Undefined when the
 * version does not exist (the agent was deleted).
 */
export async function agentAtVersion(orgId: string, agentId: string, version: number): Promise<Agent | undefined> {
  const item = await versionItem(orgId, agentId, version);
  if (!item) return undefined;
  return {
    ...agentDefaults,
    id: agentId,
    organization_id: orgId,
    name: item.agent_label,
    status: 'AGENT_STATUS_ACTIVE',
    widget_settings_id: null,
    ...structuredClone(item.config),
    published_version: version,
    created_at: item.created_at,
    updated_at: item.created_at,
  } as Agent;
}

/**
 * Which agent a new conversation uses and the `agent_version` it records: the pinned version
 * (`"draft"`: the agent as it is), else, while the agent has a traffic split, the version drawn for
 * `person` (traffic-split.ts; `traffic_split_id` says which split drew it), else the agent's
 * `published_version`, else the draft (null). A pinned version that does not exist is a 400 naming `field`.
 */
export async function resolveAgentVersion(
  orgId: string,
  stored: { id: string; name?: string; status?: string; published_version?: number | null } & SplitOnAgent,
  pin: AgentVersionPin | null | undefined,
  field = 'agent_version',
  person?: PersonKey | null,
): Promise<{ agent: Agent; agent_version: number | null; traffic_split_id: string | null }> {
  const draft = stored as unknown as Agent;
  if (pin === 'draft') return { agent: draft, agent_version: null, traffic_split_id: null };
  const split = typeof pin === 'number' ? undefined : activeSplit(stored);
  const version = typeof pin === 'number' ? pin : split ? drawVersion(split.id, split.variants, person) : stored.published_version ?? null;
  if (version === null) return { agent: draft, agent_version: null, traffic_split_id: null };
  const agent = await agentAtVersion(orgId, draft.id, version);
  if (!agent) {
    if (typeof pin === 'number') throw ValidationError.field(field, `agent ${draft.id} has no version ${pin}`);
    // The published version is gone only if the agent is being deleted: the draft is all there is.
    return { agent: draft, agent_version: null, traffic_split_id: null };
  }
  // The version keeps its own behaviour; the agent's current identity and status stay the agent's.
  return { agent: { ...agent, name: draft.name, status: draft.status }, agent_version: version, traffic_split_id: split?.id ?? null };
}

/** The agent a conversation that recorded `version` continues with (no agent read when it has one); 422 when it is gone. */
export async function agentOfConversation(orgId: string, agentId: string, version: number): Promise<Agent> {
  const agent = await agentAtVersion(orgId, agentId, version);
  if (!agent) throw new UnprocessableError('The conversation\'s agent version no longer exists (the agent was deleted)', { agent_id: agentId, agent_version: version });
  return agent;
}

/** Forgets the versions of a deleted agent this process keeps in memory (its cleanup deletes the items: agents/deletion.ts). */
export function forgetAgentVersions(orgId: string, agentId: string): void {
  for (const k of [...cache.keys()]) if (k.startsWith(`${orgId}/${agentId}/`)) cache.delete(k);
}

