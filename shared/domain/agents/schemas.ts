import * as z from 'zod/mini';
import { named } from '../common/named';
import { FREE_FORM_DESCRIPTION, freeForm, freeFormObject, pageQueryShape, uuid } from '../common/schemas';
import { lazy } from '../common/lazy';
import { ANALYSIS_FIELD_TYPES } from '../../adapters/analysis/port';

export const AGENT_STATUSES = ['AGENT_STATUS_UNSPECIFIED', 'AGENT_STATUS_ACTIVE', 'AGENT_STATUS_INACTIVE'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

const FOUR_HOURS_MS = 4 * 60 * 60 * 1000;
const text = (max: number) => z.string().check(z.maxLength(max));
const durationMs = () => z.int().check(z.minimum(0), z.maximum(FOUR_HOURS_MS));

/** The built-in tools an agent may select by `type` (docs/api.md, "Built-in tools"). */
export const BUILT_IN_TOOL_TYPES = ['end_call', 'transfer_call', 'check_availability', 'book_appointment'] as const;

/**
 * An item of `selected_tools`: either `tool_id` (a tool of the organization) or `type` (a built-in),
 * exactly one of the two; other members are kept (`transfer_call` reads its `phone_number`, E.164).
 */
const E164 = /^\+[1-9]\d{6,14}$/;
/** At most this many `transfer_destinations` on a `transfer_call` item. */
export const MAX_TRANSFER_DESTINATIONS = 10;
/** How `transfer_call` hands the caller on: `cold` (a plain `<Dial>`, the default) or `warm` (a conference and a briefing; docs/api.md, "Warm transfer"). */
export const TRANSFER_CALL_MODES = ['cold', 'warm'] as const;

/** One destination `transfer_call` may choose (the model reads `description` to choose; its `phone_number` argument names the one). */
export const TransferDestination = /* @__PURE__ */ named('TransferDestination', () => z.strictObject({
  phone_number: z.string().check(z.regex(E164, 'must be an E.164 number, e.g. +14155550123')),
  /** Default: the item's `mode`. */
  mode: z.optional(z.enum(TRANSFER_CALL_MODES)),
  description: z.string().check(z.trim(), z.minLength(1, 'must not be empty: the model reads it to choose the destination'), z.maxLength(500)),
}), 'A destination of `transfer_call`: its number, how to transfer there (default the item\'s mode) and a description the model reads to choose it');

export const SelectedTool = /* @__PURE__ */ named('SelectedTool', () => z.looseObject({
  tool_id: z.optional(uuid()),
  type: z.optional(z.enum(BUILT_IN_TOOL_TYPES)),
  /** `transfer_call` only: `cold` (default) or `warm`. */
  mode: z.optional(z.enum(TRANSFER_CALL_MODES)),
  /** `transfer_call` only: up to 10 destinations; with them the tool's `phone_number` argument picks one. */
  transfer_destinations: z.optional(z.array(TransferDestination).check(z.maxLength(MAX_TRANSFER_DESTINATIONS, `must have at most ${MAX_TRANSFER_DESTINATIONS} destinations`))),
}).check(
  z.superRefine((item: { tool_id?: string; type?: string; phone_number?: unknown; mode?: string; transfer_destinations?: { phone_number: string }[] }, ctx) => {
    if ((item.tool_id === undefined) === (item.type === undefined)) {
      ctx.issues.push({ code: 'custom', path: [], message: 'must have exactly one of tool_id (a tool of the organization) or type (a built-in tool)', input: item });
    }
    if (item.type !== 'transfer_call') {
      for (const field of ['mode', 'transfer_destinations'] as const) {
        if (item[field] !== undefined) ctx.issues.push({ code: 'custom', path: [field], message: 'is only for transfer_call', input: item[field] });
      }
      return;
    }
    const destinations = item.transfer_destinations ?? [];
    // With destinations the model picks one (phone_number optional, the default when it is one of them); without, phone_number is the number.
    if (item.phone_number !== undefined || !destinations.length) {
      if (typeof item.phone_number !== 'string' || !E164.test(item.phone_number)) {
        ctx.issues.push({ code: 'custom', path: ['phone_number'], message: destinations.length ? 'must be an E.164 number' : 'must be the E.164 number to transfer to (transfer_call), unless transfer_destinations lists the numbers', input: item.phone_number });
      }
    }
    const seen = new Set<string>();
    destinations.forEach((d, i) => {
      if (seen.has(d.phone_number)) ctx.issues.push({ code: 'custom', path: ['transfer_destinations', i, 'phone_number'], message: 'is listed twice', input: d.phone_number });
      seen.add(d.phone_number);
    });
  }),
), 'An item of `selected_tools`: `tool_id` (a tool of the organization) or `type` (a built-in: end_call, transfer_call with phone_number or transfer_destinations and mode, check_availability, book_appointment); other members are kept');

/** How an agent speaks on calls: `realtime` (speech-to-speech model) or `relay` (Twilio ConversationRelay with the chat model). */
export const VOICE_PIPELINES = ['realtime', 'relay'] as const;
export type VoicePipeline = (typeof VOICE_PIPELINES)[number];

/** The background sounds an agent may play under its voice on calls (`''` for none); docs/api.md, "Agents". */
export const AMBIENT_SOUNDS = ['', 'office', 'cafe', 'call-center', 'static'] as const;
export type AmbientSound = (typeof AMBIENT_SOUNDS)[number];

/** At most this many `analysis_fields` per agent. */
export const MAX_ANALYSIS_FIELDS = 25;

/**
 * One typed outcome the post-conversation analysis fills (docs/api.md, "Typed outcomes"): a
 * snake_case `name`, a `type`, a `description` telling the analyzer what to look for, and for an
 * `enum` its `options` (2–50 distinct strings; no other type takes options).
 */
export const AnalysisField = /* @__PURE__ */ named('AnalysisField', () => z.strictObject({
  name: z.string().check(z.regex(/^[a-z][a-z0-9_]*$/, 'must be snake_case: a lowercase letter, then lowercase letters, digits or _'), z.maxLength(64)),
  type: z.enum(ANALYSIS_FIELD_TYPES),
  description: z.string().check(z.trim(), z.minLength(1, 'must not be empty: it tells the analyzer what to look for'), z.maxLength(1000)),
  options: z.optional(z.array(z.string().check(z.minLength(1, 'must not be empty'), z.maxLength(100)))),
}).check(
  z.superRefine((field: { type: string; options?: string[] }, ctx) => {
    if (field.type === 'enum') {
      const options = field.options;
      if (!options || options.length < 2 || options.length > 50) {
        ctx.issues.push({ code: 'custom', path: ['options'], message: 'an enum field needs options: 2 to 50 strings', input: options });
      } else {
        const seen = new Set<string>();
        options.forEach((o, i) => {
          if (seen.has(o)) ctx.issues.push({ code: 'custom', path: ['options', i], message: `"${o}" is listed twice`, input: o });
          seen.add(o);
        });
      }
    } else if (field.options !== undefined) {
      ctx.issues.push({ code: 'custom', path: ['options'], message: `only an enum field takes options (this one is ${field.type})`, input: field.options });
    }
  }),
), 'A typed outcome of the analysis: `name` (snake_case), `type` (string, number, integer, boolean, enum) and `description`; an enum\'s `options` (2–50)');

/** At most this many `handoff_agents` per agent. */
export const MAX_HANDOFF_AGENTS = 10;

/**
 * One agent this agent may hand the conversation to (docs/api.md, "Agent-to-agent hand-off"): an
 * agent of the same organization, optionally pinned to a published version (absent: that agent's
 * published version, else its draft, at the moment of the hand-off), and a description the model
 * reads to choose.
 */
export const HandoffAgent = /* @__PURE__ */ named('HandoffAgent', () => z.strictObject({
  agent_id: uuid(),
  agent_version: z.optional(z.int().check(z.minimum(1))),
  description: z.string().check(z.trim(), z.minLength(1, 'must not be empty: the model reads it to choose the agent'), z.maxLength(1000)),
}), 'An agent this one may hand the conversation to: `agent_id` (same organization), optional `agent_version`, and the `description` the model reads');
export type HandoffAgent = z.output<typeof HandoffAgent>;

/** What the OpenAI-compatible endpoint does with a caller's system and developer messages. */
export const OPENAI_SYSTEM_MESSAGE_RULES = ['demote', 'refuse', 'trust'] as const;
export type OpenAiSystemMessageRule = (typeof OPENAI_SYSTEM_MESSAGE_RULES)[number];

/**
 * A list check: no two items have the same string `member` (the later one is named). It runs even
 * when an item is refused elsewhere: a repeat is told with the other mistakes, not after they are fixed.
 */
const uniqueMember = (member: string, message: (value: string) => string) =>
  z.superRefine((items: Record<string, unknown>[], ctx) => {
    const seen = new Set<string>();
    items.forEach((item, i) => {
      const value = item && typeof item === 'object' && typeof item[member] === 'string' ? (item[member] as string) : undefined;
      if (value === undefined) return;
      if (seen.has(value)) ctx.issues.push({ code: 'custom', path: [i, member], message: message(value), input: value });
      seen.add(value);
    });
  }, { when: (payload) => Array.isArray(payload.value) });

/** At most this many variants in a traffic split (docs/api.md, "Traffic split between versions"). */
export const MAX_SPLIT_VARIANTS = 5;

/** One variant of a traffic split: a published version of the agent and its share of new conversations, in percent. */
export const TrafficSplitVariant = /* @__PURE__ */ named('TrafficSplitVariant', () => z.strictObject({
  version: z.int().check(z.minimum(1, 'must be a published version of the agent (1, 2, …)')),
  weight: z.int().check(z.minimum(1, 'must be at least 1 (percent)'), z.maximum(99, 'must be at most 99 (percent): a split has at least two variants')),
}), 'A published version of the agent and its share of new conversations (percent, 1–99)');
export type TrafficSplitVariant = z.output<typeof TrafficSplitVariant>;

/**
 * A traffic split: 2–5 variants, each version once, weights summing to 100. The integer
 * check of versions is the version's own (`uniqueMember` compares strings).
 */
export const TrafficSplit = /* @__PURE__ */ named('TrafficSplit', () => z.array(TrafficSplitVariant).check(
  z.minLength(2, 'must have at least 2 variants (null ends the split)'),
  z.maxLength(MAX_SPLIT_VARIANTS, `must have at most ${MAX_SPLIT_VARIANTS} variants`),
  z.superRefine((items: { version?: unknown; weight?: unknown }[], ctx) => {
    const seen = new Set<unknown>();
    items.forEach((item, i) => {
      if (item && typeof item === 'object' && Number.isInteger(item.version)) {
        if (seen.has(item.version)) ctx.issues.push({ code: 'custom', path: [i, 'version'], message: `version ${String(item.version)} is listed twice`, input: item.version });
        seen.add(item.version);
      }
    });
    const weights = items.map((item) => (item && typeof item === 'object' ? item.weight : undefined));
    if (weights.every((w) => Number.isInteger(w))) {
      const total = (weights as number[]).reduce((a, b) => a + b, 0);
      if (total !== 100) ctx.issues.push({ code: 'custom', path: [], message: `the weights must sum to 100 (they sum to ${total})`, input: weights });
    }
  }, { when: (payload) => Array.isArray(payload.value) }),
), 'A traffic split between published versions: 2–5 `{ version, weight }`, each version once, weights 1–99 summing to 100');

/** Every writable agent field; create requires `name`, PATCH takes any subset. */
export const agentFields = /* @__PURE__ */ lazy(() => ({
  widget_settings_id: z.nullable(uuid()),
  name: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200)),
  agent_name: text(200),
  status: z.enum(AGENT_STATUSES),
  model: text(200),
  s2s_model: text(200),
  voice_id: text(200),
  /** `realtime`: the speech-to-speech model speaks (the voice runtime); `relay`: Twilio ConversationRelay speaks and the agent's `model` answers (docs/api.md, "Two voice pipelines"). */
  voice_pipeline: z.enum(VOICE_PIPELINES),
  /** The call's language (BCP 47, e.g. `en-US`): ConversationRelay's transcription and speech on the `relay` pipeline. */
  language: z.string().check(z.regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a BCP 47 language tag such as en-US'), z.maxLength(35)),
  temperature: z.number().check(z.minimum(0), z.maximum(2)),
  reminder_trigger_ms: durationMs(),
  reminder_max_count: z.int().check(z.minimum(0), z.maximum(100)),
  ambient_sound: z.enum(AMBIENT_SOUNDS),
  ambient_sound_volume: z.number().check(z.minimum(0), z.maximum(1)),
  end_call_after_silence: z.boolean(),
  max_call_duration_ms: durationMs(),
  ring_duration_ms: durationMs(),
  enable_voicemail_detection: z.boolean(),
  voicemail_message: text(5000),
  voicemail_detection_timeout_ms: durationMs(),
  ivr_options: z.nullable(freeFormObject()),
  post_call_analysis_model: text(200),
  analysis_summary_prompt: text(20000),
  /** Free-form as a whole (the extra members of its items): one set of bounds for the list. */
  selected_tools: freeForm(z.array(SelectedTool).check(z.maxLength(50), z.describe(`The list as a whole is free-form JSON. ${FREE_FORM_DESCRIPTION}`))),
  integrations: z.nullable(freeFormObject()),
  /** A knowledge base of the organization by id, or '' for none. */
  knowledge_base: z.union([z.literal(''), uuid()]),
  begin_message: text(5000),
  /** The agent's instructions, the system message of every conversation; `{{placeholders}}` are filled per conversation. */
  prompt: text(50_000),
  start_speaker: z.enum(['agent', 'user']),
  /** Typed outcomes each analysis fills (`analysis.data`): at most 25, names unique. */
  analysis_fields: z.array(AnalysisField).check(
    z.maxLength(MAX_ANALYSIS_FIELDS, `must have at most ${MAX_ANALYSIS_FIELDS} fields`),
    uniqueMember('name', (name) => `"${name}" is the name of an earlier field`),
  ),
  /**
   * Agents this one may hand the conversation to (at most 10, each listed once); when not empty the
   * model is offered the built-in `handoff_to_agent` (docs/api.md, "Agent-to-agent hand-off").
   */
  handoff_agents: z.array(HandoffAgent).check(
    z.maxLength(MAX_HANDOFF_AGENTS, `must have at most ${MAX_HANDOFF_AGENTS} agents`),
    uniqueMember('agent_id', (id) => `agent ${id} is listed twice`),
  ),
  /** What success means for this agent: the analysis judges `successful` against it (the openai analyzer). */
  success_criteria: text(5000),
  /**
   * The OpenAI-compatible endpoint's trust rule for a caller's `system` / `developer` messages
   * (docs/api.md, "The agent as an OpenAI model"): `demote` sends them as the caller's (user) words,
   * below the agent's prompt; `refuse` answers 400; `trust` appends them to the agent's prompt.
   */
  openai_system_messages: z.enum(OPENAI_SYSTEM_MESSAGE_RULES),
  /**
   * The publish gate (docs/api.md, "Publishing gated by tests"): when true, a version goes live only
   * through a passed run of every test (a gated publish or `test_run_id`), a rollback only to such a
   * version, and `published_version: null` (the untested draft) is refused.
   */
  require_passing_tests: z.boolean(),
}));

type Fields = typeof agentFields;
const optionalFields = /* @__PURE__ */ lazy(() => Object.fromEntries(Object.entries(agentFields).map(([k, v]) => [k, z.optional(v)])) as {
  [K in keyof Fields]: z.ZodMiniOptional<Fields[K]>;
});

export const CreateAgentBody = /* @__PURE__ */ named('CreateAgentRequest', () => z.strictObject({ ...optionalFields, name: agentFields.name }));
export const UpdateAgentBody = /* @__PURE__ */ named('UpdateAgentRequest', () => z.strictObject({
  ...optionalFields,
  /** Which published version conversations use (a rollback names an earlier one); null: the draft. */
  published_version: z.optional(z.nullable(z.int().check(z.minimum(1)))),
  /** A precondition: the change applies only while `published_version` is this (null: the draft); 409 otherwise. */
  expected_published_version: z.optional(z.nullable(z.int().check(z.minimum(1)))),
  /**
   * Splits new conversations that pin no version between published versions by weight (sticky per
   * person); null ends the split. Each change starts a new `traffic_split_id`. Gated like a publish.
   */
  traffic_split: z.optional(z.nullable(TrafficSplit)),
}));
export const AgentStatusBody = /* @__PURE__ */ named('AgentStatusRequest', () => z.strictObject({ status: agentFields.status }));
export const AgentListQuery = /* @__PURE__ */ lazy(() => z.strictObject({ ...pageQueryShape, status: z.optional(z.enum(AGENT_STATUSES)) }));

export type CreateAgentInput = z.output<typeof CreateAgentBody>;
export type UpdateAgentInput = z.output<typeof UpdateAgentBody>;

export const Agent = /* @__PURE__ */ named('Agent', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  ...agentFields,
  /** The version conversations use when they pin none; null: the draft (docs/api.md, "Versions and tests"). */
  published_version: z.nullable(z.int()),
  /** The split of new conversations between published versions (null: none; `published_version` is the fallback). */
  traffic_split: z.nullable(TrafficSplit),
  /** The split's id, new at each change (null without one); each conversation drawn by it records it. */
  traffic_split_id: z.nullable(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'A voice AI agent');
export type Agent = z.output<typeof Agent>;

/** What an agent is when the create body leaves a field out. docs/api.md lists these. */
export const agentDefaults = {
  widget_settings_id: null,
  status: 'AGENT_STATUS_ACTIVE' as AgentStatus,
  /** `""`: the platform's LLM_MODEL, resolved at each use (models.ts), so the setting is never silently ignored. */
  model: '',
  /** `""`: the platform's REALTIME_MODEL. */
  s2s_model: '',
  voice_id: '',
  voice_pipeline: 'realtime' as VoicePipeline,
  language: 'en-US',
  temperature: 0.7,
  reminder_trigger_ms: 10_000,
  reminder_max_count: 1,
  ambient_sound: '',
  ambient_sound_volume: 0.5,
  end_call_after_silence: false,
  max_call_duration_ms: 1_800_000,
  ring_duration_ms: 30_000,
  enable_voicemail_detection: false,
  voicemail_message: '',
  voicemail_detection_timeout_ms: 5_000,
  ivr_options: null,
  /** `""`: the platform's ANALYSIS_MODEL. */
  post_call_analysis_model: '',
  analysis_summary_prompt: '',
  selected_tools: [],
  integrations: null,
  knowledge_base: '',
  begin_message: '',
  prompt: '',
  start_speaker: 'agent' as const,
  analysis_fields: [] as z.output<typeof AnalysisField>[],
  handoff_agents: [] as HandoffAgent[],
  success_criteria: '',
  openai_system_messages: 'demote' as OpenAiSystemMessageRule,
  require_passing_tests: false,
  published_version: null,
  traffic_split: null,
  traffic_split_id: null,
};

/**
 * Which version of its agent a conversation uses, pinned on create: a published version's number,
 * or `"draft"` (the agent as it is now). Absent: the agent's `published_version`, else the draft.
 */
export const AgentVersionPin = /* @__PURE__ */ named('AgentVersionPin', () => z.union([z.int().check(z.minimum(1)), z.literal('draft')]),
  'A published version of the agent (1, 2, …) or "draft"; absent: the agent\'s published_version, else the draft');
export type AgentVersionPin = number | 'draft';
