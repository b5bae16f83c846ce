import * as z from 'zod/mini';
import { named } from '../common/named';
import { DynamicVariables, freeFormObject, pageQueryShape, uuid } from '../common/schemas';
import { e164 } from '../common/phone-field';
import { instant } from '../scheduling/time';
import { lazy } from '../common/lazy';
import { AgentVersionPin } from '../agents/schemas';
import { ConversationLatency, ReplyLatency } from '../conversations/latency-schemas';

export const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'ended'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

/** How the call is carried: `phone` (a carrier; every call before web calls) or `web` (a browser's WebSocket, POST /web-calls). */
export const CALL_CHANNELS = ['phone', 'web'] as const;
export type CallChannel = (typeof CALL_CHANNELS)[number];

export const DISCONNECTION_REASONS = ['completed', 'no_answer', 'busy', 'voicemail', 'failed', 'canceled', 'transferred', 'queue_timeout', 'concurrency_limit', 'forwarded'] as const;
export type DisconnectionReason = (typeof DISCONNECTION_REASONS)[number];

/** `queue_timeout_seconds` of POST /calls: its default and bound (docs/api.md, "Concurrency limits"). */
export const DEFAULT_QUEUE_TIMEOUT_SECONDS = 300;
export const MAX_QUEUE_TIMEOUT_SECONDS = 3600;

/** Bounds of the free-form members of a call (stored on the call item, which DynamoDB caps at 400 KB). */
export const MAX_METADATA_BYTES = 16_384;
export { MAX_DYNAMIC_VARIABLES } from '../common/schemas';

export const CreateCallBody = /* @__PURE__ */ named('CreateCallRequest', () => z.strictObject({
  agent_id: uuid(),
  from_phone_number: e164(),
  to_phone_number: e164(),
  contact_id: z.optional(uuid()),
  metadata: z.optional(freeFormObject()),
  /** Filled into the agent's `{{name}}` placeholders (begin message, prompt). */
  dynamic_variables: z.optional(DynamicVariables),
  /** Pins the agent's version (a number, or "draft"); default its published_version, else the draft. */
  agent_version: z.optional(AgentVersionPin),
  /** At the organization's concurrency limit: wait in its queue (202, `queue_position`) instead of a 429. */
  queue: z.optional(z.boolean()),
  /** How long a call that waits may wait before it ends `queue_timeout` (default 300). */
  queue_timeout_seconds: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_QUEUE_TIMEOUT_SECONDS))),
}), 'An outbound call to place');
export type CreateCallInput = z.output<typeof CreateCallBody>;

export const CallListQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  agent_id: z.optional(uuid()),
  campaign_id: z.optional(uuid()),
  contact_id: z.optional(uuid()),
  status: z.optional(z.enum(CALL_STATUSES)),
  /** Created at or after (inclusive). */
  from: z.optional(instant()),
  /** Created before or at (inclusive). */
  to: z.optional(instant()),
}));
export type CallListInput = z.output<typeof CallListQuery>;

/** One turn; `interrupted` (voice runtime): the caller cut the agent off, and `text` holds only the words they heard. `system`: the platform's own line (a warm transfer's briefing and outcome). */
export const TranscriptTurn = /* @__PURE__ */ lazy(() => z.object({
  role: z.enum(['agent', 'user', 'system']),
  text: z.string(),
  time_sec: z.number(),
  interrupted: z.optional(z.boolean()),
  /** agent lines (in a call's view): the agent that spoke it, from `segments` (after a hand-off, the agent handed to). */
  agent_id: z.optional(z.string()),
  /** agent lines answering the caller: where the reply's time went (docs/api.md, "Latency of every reply"). */
  latency_ms: z.optional(ReplyLatency),
}));

/** How a transfer to a person goes: `cold` (a plain `<Dial>`) or `warm` (a conference, a briefing, the person accepts). */
export const TRANSFER_MODES = ['cold', 'warm'] as const;
export type TransferMode = (typeof TRANSFER_MODES)[number];
/** How a warm transfer's call to the person ended (docs/api.md, "Warm transfer"). */
export const TRANSFER_OUTCOMES = ['connected', 'declined', 'no_answer', 'machine', 'failed'] as const;
export type TransferOutcome = (typeof TRANSFER_OUTCOMES)[number];

/** One transfer of the call to a person (`transfer_call`), in order; `outcome` null while the person's phone rings or hears the briefing. */
export const CallTransfer = /* @__PURE__ */ named('CallTransfer', () => z.object({
  phone_number: z.string(),
  mode: z.enum(TRANSFER_MODES),
  started_at: z.string(),
  outcome: z.nullable(z.enum(TRANSFER_OUTCOMES)),
  /** What the person heard before accepting (warm; '' on a cold transfer). */
  briefing: z.string(),
}), 'A transfer of the call to a person: where, how, when, how it ended, and the briefing the person heard');

/** A tool the agent called during the call: what it asked, what it got, when (seconds from the answer). */
export const CallToolCall = /* @__PURE__ */ lazy(() => z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()), result: z.unknown(), time_sec: z.number() }));

export const CallAnalysis = /* @__PURE__ */ named('ConversationAnalysis', () => z.object({
  summary: z.string(),
  sentiment: z.enum(['positive', 'neutral', 'negative']),
  successful: z.boolean(),
  /** Why `successful` is what it is (judged against the agent's `success_criteria` when set); null when the analyzer gave none. */
  success_rationale: z.nullable(z.string()),
  custom: z.record(z.string(), z.unknown()),
  /** Typed outcomes: one member per analysis field of the agent, its value or null (docs/api.md, "Typed outcomes"). */
  data: z.record(z.string(), z.nullable(z.union([z.string(), z.number(), z.boolean()]))),
  /** The type of each member of `data` as its field was when analysed. */
  data_types: z.record(z.string(), z.enum(['string', 'number', 'integer', 'boolean', 'enum'])),
  /** Values the analyzer gave that were not of their field's type: each kept as null, never as given. */
  data_errors: z.array(z.object({ field: z.string(), message: z.string() })),
}), 'The analysis of an ended call or chat: summary, sentiment, success with its rationale, custom facts and the typed outcomes (`data`)');

/** One agent's part of a conversation (docs/api.md, "Agent-to-agent hand-off"): one from the start, one more per hand-off. */
export const ConversationSegment = /* @__PURE__ */ named('ConversationSegment', () => z.object({
  agent_id: z.string(),
  /** The version the agent ran (null: its draft). */
  agent_version: z.nullable(z.int()),
  started_at: z.string(),
  /** The hand-off's `reason` (null for the first segment, or when none was given). */
  reason: z.nullable(z.string()),
}), 'Which agent (and version) handled the conversation from when, and why it took over');

/** How an inbound call's agent was chosen (docs/api.md, "Per-caller routing"). */
export const CallRouting = /* @__PURE__ */ named('CallRouting', () => z.object({
  /** `webhook`: the number's inbound webhook chose; `fallback`: it failed and the number's agent answered; `number`: the number has no webhook. */
  source: z.enum(['webhook', 'fallback', 'number']),
  /** Why the webhook's answer was not used (`fallback` only): a timeout, an HTTP status, bad JSON, an agent or version that cannot answer. */
  error: z.optional(z.string()),
}), 'How an inbound call\'s agent was chosen: by the number\'s inbound webhook, by the number after the webhook failed, or by the number alone');
export type CallRouting = z.output<typeof CallRouting>;

/** The call session. */
export const Call = /* @__PURE__ */ named('Call', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.string(),
  /** The agent version the call runs (null: the draft). */
  agent_version: z.nullable(z.int()),
  /** The traffic split that drew `agent_version` (null: none; docs/api.md, "Traffic split between versions"). */
  traffic_split_id: z.nullable(z.string()),
  campaign_id: z.nullable(z.string()),
  contact_id: z.nullable(z.string()),
  direction: z.enum(['outbound', 'inbound']),
  /** `phone` or `web` (a browser; stored calls without it are `phone`). */
  channel: z.enum(CALL_CHANNELS),
  /** Null on a web call (no numbers). */
  from_phone_number: z.nullable(z.string()),
  /** Null on a web call (no numbers). */
  to_phone_number: z.nullable(z.string()),
  status: z.enum(CALL_STATUSES),
  /** Only while the call waits in the organization's queue (`"queue": true` at the concurrency limit): 1 is placed next. */
  queue_position: z.optional(z.int()),
  disconnection_reason: z.nullable(z.enum(DISCONNECTION_REASONS)),
  /** Why the call ended as it did when the carrier did not say (do-not-call, carrier error, recovery sweep), else null. */
  error_message: z.nullable(z.string()),
  /** When dialing started (null while queued). */
  started_at: z.nullable(z.string()),
  answered_at: z.nullable(z.string()),
  ended_at: z.nullable(z.string()),
  duration_sec: z.number(),
  transcript: z.array(TranscriptTurn),
  /** The replies' times over the transcript's timed agent lines, once the call has ended (null before, or with none). */
  latency: z.nullable(ConversationLatency),
  /** The tools the agent called, in order (webhook tools and built-ins). */
  tool_calls: z.array(CallToolCall),
  /** Who handled the call: the starting agent's segment, then one per agent-to-agent hand-off (`agent_id` stays the starting agent). */
  segments: z.array(ConversationSegment),
  /** Transfers to a person (`transfer_call`), in order; `[]` when none. */
  transfers: z.array(CallTransfer),
  /** A presigned GET link (15 minutes), made afresh on every read; null without a recording. */
  recording_url: z.nullable(z.string()),
  analysis: z.nullable(CallAnalysis),
  /** Why the last analysis attempt failed (null once it succeeded or before any attempt). */
  analysis_error: z.nullable(z.string()),
  metadata: z.record(z.string(), z.unknown()),
  dynamic_variables: z.record(z.string(), z.string()),
  /** Inbound calls only: how the answering agent was chosen (absent on outbound and web calls, and on inbound calls stored before routing). */
  routing: z.optional(CallRouting),
  /** The OpenTelemetry trace the call was created in (its dial, carrier callbacks, analysis and webhook deliveries join or link to it); null when tracing is off. */
  trace_id: z.nullable(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'A call session: its course, transcript, recording link and analysis');
export type Call = z.output<typeof Call>;
export type Transcript = z.output<typeof TranscriptTurn>[];
export type CallToolCalls = z.output<typeof CallToolCall>[];
export type CallAnalysisValue = z.output<typeof CallAnalysis>;
