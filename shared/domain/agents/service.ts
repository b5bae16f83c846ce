import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { getOr404, listCollection, requireSomeField } from '../common/collection';
import { v7 as uuidv7 } from 'uuid';
import { collections, gsi1, gsi2, keys, Prefix } from '../../db/keys';
import {
  ConditionFailed,
  deleteExisting,
  getItem,
  putNew,
  queryPage,
  readCounter,
  stripKeys,
  transact,
  updateExisting,
  type Guard,
  type PageRequest,
} from '../../db/store';
import { NotFoundError, ConflictError, ValidationError } from '../../errors';
import { listResult } from '../common/list-result';
import { references } from '../references';
import { queueAgentCleanup, tombstoneWrite } from './deletion';
import { agentAtVersion, forgetAgentVersions, expectedVersionCondition, GATE_OFF_CONDITION, publishedVersionChanged, testsRequired } from './versions';
import { agentDefaults, type Agent, type AgentStatus, type CreateAgentInput, type UpdateAgentInput } from './schemas';
import { splitChange } from './traffic-split';

type AgentItem = Agent & { pk: string; sk: string; version: number; last_version?: number };

const ENTITY = 'AGENT';

function view(item: AgentItem): Agent {
  // `last_version` is the publish counter (versions.ts), not part of the agent.
  // `traffic_split_started_at` and `previous_traffic_split` are the split's bookkeeping (traffic-split.ts), read by its results.
  const { last_version: _counter, traffic_split_started_at: _s, previous_traffic_split: _p, ...agent } = stripKeys(item) as Agent & { last_version?: number; traffic_split_started_at?: unknown; previous_traffic_split?: unknown };
  // Agents written before typed outcomes have neither analysis_fields nor success_criteria (nor, before the gate, require_passing_tests): their defaults.
  // Before the OpenAI endpoint's trust rule, openai_system_messages: its default.
  // Before hand-offs, handoff_agents: none.
  return { analysis_fields: [], success_criteria: '', openai_system_messages: 'demote', require_passing_tests: false, handoff_agents: [], ...(agent as Partial<Agent>), published_version: agent.published_version ?? null, traffic_split: agent.traffic_split ?? null, traffic_split_id: agent.traffic_split_id ?? null } as Agent;
}

/** Index attributes that follow an agent's status and widget. */
function indexAttributes(orgId: string, id: string, status: AgentStatus, widgetId: string | null) {
  return {
    gsi1pk: gsi1.byStatus(orgId, ENTITY, status),
    gsi1sk: id,
    ...(widgetId ? { gsi2pk: gsi2.widget(widgetId), gsi2sk: gsi2.agentOfWidget(id) } : {}),
  };
}

/** Guards for every resource the given fields point to (`self`: the agent being written, which cannot hand off to itself). */
function referenceGuards(orgId: string, fields: UpdateAgentInput, self?: string): Guard[] {
  const guards: Guard[] = [];
  // Hand-off agents: of this organization (another's id is refused like a missing one), a pinned version that exists.
  (fields.handoff_agents ?? []).forEach((h, i) => {
    if (h.agent_id === self) throw ValidationError.field(`handoff_agents.${i}.agent_id`, 'an agent cannot hand a conversation off to itself');
    guards.push(references.agent(orgId, h.agent_id, `handoff_agents.${i}.agent_id`));
    if (h.agent_version !== undefined) {
      const v = h.agent_version;
      guards.push({ key: keys.agentVersion(orgId, h.agent_id, v), onFail: () => ValidationError.field(`handoff_agents.${i}.agent_version`, `agent ${h.agent_id} has no version ${v}`) });
    }
  });
  if (fields.widget_settings_id) guards.push(references.widget(orgId, fields.widget_settings_id));
  if (fields.knowledge_base) guards.push(references.knowledgeBase(orgId, fields.knowledge_base));
  const seen = new Set<string>();
  (fields.selected_tools ?? []).forEach((t, i) => {
    const [what, field] = t.tool_id ? [`tool ${t.tool_id}`, 'tool_id'] : [`built-in ${t.type}`, 'type'];
    if (seen.has(what)) throw ValidationError.field(`selected_tools.${i}.${field}`, `${what} is selected twice`);
    seen.add(what);
    if (t.tool_id) guards.push(references.tool(orgId, t.tool_id, `selected_tools.${i}.tool_id`));
  });
  return guards;
}


export async function createAgent(orgId: string, input: CreateAgentInput): Promise<Agent> {
  const now = new Date().toISOString();
  const id = uuidv7();
  const agent: Agent = {
    id,
    organization_id: orgId,
    ...agentDefaults,
    agent_name: input.name,
    ...input,
    created_at: now,
    updated_at: now,
  } as Agent;
  await transact(
    [putNew({ ...keys.agent(orgId, id), entity: ENTITY, version: 1, ...indexAttributes(orgId, id, agent.status, agent.widget_settings_id), ...agent })],
    [
      { orgId, collection: collections.agents, delta: 1 },
      { orgId, collection: collections.agentsByStatus(agent.status), delta: 1 },
    ],
    referenceGuards(orgId, input),
  );
  return agent;
}

/** An agent, or undefined when there is none (the voice runtime, admitting a call's stream). */
export async function findAgent(orgId: string, id: string): Promise<Agent | undefined> {
  const item = await getItem<AgentItem>(keys.agent(orgId, id));
  return item ? view(item) : undefined;
}

export async function getAgent(orgId: string, id: string): Promise<Agent> {
  return view(await getOr404<AgentItem>(keys.agent(orgId, id), 'Agent', id));
}

export async function listAgents(orgId: string, query: PageRequest & { status?: AgentStatus }) {
  if (!query.status) return listCollection(orgId, Prefix.agent, collections.agents, query, view);
  const [page, total] = await Promise.all([
    queryPage<AgentItem>({ index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.byStatus(orgId, ENTITY, query.status), skName: 'gsi1sk' }, query),
    readCounter(orgId, collections.agentsByStatus(query.status)),
  ]);
  return listResult({ items: page.items.map(view), nextCursor: page.nextCursor }, total, query);
}

/**
 * Applies a partial update. Fields other than `status` are written in one conditional
 * UpdateItem (plus reference guards), so concurrent PATCHes never lose each other's fields.
 * A status change also moves the per-status counters; it is conditioned on the status read,
 * and retried when another writer moved it first.
 */
export async function updateAgent(orgId: string, id: string, input: UpdateAgentInput): Promise<Agent> {
  const { expected_published_version: expected, traffic_split: split, ...fields } = input;
  requireSomeField(split === undefined ? fields : { ...fields, traffic_split: split });
  const key = keys.agent(orgId, id);
  const guards = referenceGuards(orgId, fields, id);
  const movesPublished = fields.published_version !== undefined;
  // A split puts versions live too (its end does not: everyone goes back to published_version).
  const setsSplit = split !== undefined && split !== null;
  // Only a status change, a move of what is live, a split and a precondition depend on the stored item; any other patch needs no read first.
  const needsRead = fields.status !== undefined || movesPublished || split !== undefined || expected !== undefined;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const current = needsRead ? await getItem<AgentItem>(key) : undefined;
    if (needsRead && !current) throw new NotFoundError('Agent', id);
    if (current && expected !== undefined && (current.published_version ?? null) !== expected) throw publishedVersionChanged(id, expected, current.published_version ?? null);
    // The publish gate (on as stored, or turned on by this very patch) holds for rollbacks too.
    const gateOn = !!current && (current.require_passing_tests === true || fields.require_passing_tests === true);
    const gated = gateOn && movesPublished;
    if (gated && fields.published_version === null) throw testsRequired(id, 'published_version null would put the untested draft live');
    const writeGuards = [...guards];
    // A rollback (or a move forward) names a version the agent has published (gated: one a passed run stands behind), checked in the write.
    if (typeof fields.published_version === 'number') {
      const v = fields.published_version;
      writeGuards.push(gated
        ? { key: keys.agentVersion(orgId, id, v), condition: 'attribute_exists(test_run_id)', onFail: () => testsRequired(id, `version ${v} does not exist or was not published through a passed run (test_run_id)`) }
        : { key: keys.agentVersion(orgId, id, v), onFail: () => ValidationError.field('published_version', `agent ${id} has no version ${v}`) });
    }
    const now = new Date().toISOString();
    const splitWrite = current ? splitChange(orgId, id, current, split, gateOn && setsSplit ? (what) => testsRequired(id, what) : undefined, now) : undefined;
    // One check per version item in a transaction: the published_version's check covers its variant.
    if (splitWrite) writeGuards.push(...splitWrite.guards.filter((g) => g.key.sk !== keys.agentVersion(orgId, id, fields.published_version ?? 0).sk));
    const set: Record<string, unknown> = { ...fields, ...splitWrite?.set, updated_at: now };
    const remove: string[] = [];
    if ('widget_settings_id' in fields) {
      if (fields.widget_settings_id) Object.assign(set, { gsi2pk: gsi2.widget(fields.widget_settings_id), gsi2sk: gsi2.agentOfWidget(id) });
      else remove.push('gsi2pk', 'gsi2sk');
    }
    const statusChanges = current !== undefined && fields.status !== undefined && fields.status !== current.status;
    if (statusChanges) set.gsi1pk = gsi1.byStatus(orgId, ENTITY, fields.status!);
    // What was read must still hold when the write lands: the status, the published version, the gate.
    const parts = current
      ? [
          { condition: '#st = :st', names: { '#st': 'status' }, values: { ':st': current.status } as Record<string, unknown> },
          ...(expected !== undefined ? [expectedVersionCondition(expected)] : []),
          ...(movesPublished || setsSplit ? [gated || (!movesPublished && current.require_passing_tests === true) ? { condition: '#rpt = :rpton', names: { '#rpt': 'require_passing_tests' }, values: { ':rpton': true } } : GATE_OFF_CONDITION] : []),
          ...(splitWrite ? [splitWrite.condition] : []),
        ]
      : [];
    try {
      await transact(
        [
          updateExisting(key, set, {
            remove,
            // Other fields are last-writer-wins per field.
            ...(parts.length
              ? { condition: parts.map((p) => p.condition).join(' AND '), names: Object.assign({}, ...parts.map((p) => p.names)), values: Object.assign({}, ...parts.map((p) => p.values)) }
              : {}),
          }),
        ],
        statusChanges
          ? [
              { orgId, collection: collections.agentsByStatus(current.status), delta: -1 },
              { orgId, collection: collections.agentsByStatus(fields.status!), delta: 1 },
            ]
          : [],
        writeGuards,
      );
      return getAgent(orgId, id);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (!needsRead && !(await getItem(key))) throw new NotFoundError('Agent', id);
      await pause(attempt);
    }
  }
  throw new ConflictError('The agent is being changed by other requests; retry', { id });
}

export async function deleteAgent(orgId: string, id: string): Promise<void> {
  const key = keys.agent(orgId, id);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const current = await getItem<AgentItem>(key);
    if (!current) throw new NotFoundError('Agent', id);
    try {
      // The agent item goes with its tombstone in one write; the agent-cleanup job then deletes its
      // versions, tests, runs and results page by page, detaches its numbers and removes the tombstone.
      await transact(
        [deleteExisting(key, '#st = :st', { ':st': current.status }, { '#st': 'status' }), tombstoneWrite(orgId, id)],
        [
          { orgId, collection: collections.agents, delta: -1 },
          { orgId, collection: collections.agentsByStatus(current.status), delta: -1 },
        ],
      );
      forgetAgentVersions(orgId, id);
      await queueAgentCleanup(orgId, id);
      return;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The agent is being changed by other requests; retry', { id });
}

/**
 * The agent a conversation runs: its recorded published version (from memory after the first read;
 * agents/versions.ts), else the agent as it is now (the draft). Undefined when it is gone.
 */
export async function findConversationAgent(orgId: string, agentId: string, version: number | null | undefined): Promise<Agent | undefined> {
  if (typeof version === 'number') return (await agentAtVersion(orgId, agentId, version)) ?? findAgent(orgId, agentId);
  return findAgent(orgId, agentId);
}
