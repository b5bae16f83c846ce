import * as z from 'zod/mini';
import { named } from '../common/named';
import { DynamicVariables, freeFormObject, pageQueryShape, uuid } from '../common/schemas';
import { e164 } from '../common/phone-field';
import { instant } from '../scheduling/time';
import { lazy } from '../common/lazy';

export const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'ended'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

export const DISCONNECTION_REASONS = ['completed', 'no_answer', 'busy', 'voicemail', 'failed', 'canceled', 'transferred'] as const;
export type DisconnectionReason = (typeof DISCONNECTION_REASONS)[number];

/** Bounds of the free-form members of a call (stored on the call item, which DynamoDB caps at 400 KB). */
export const MAX_METADATA_BYTES = 16_384;
export { MAX_DYNAMIC_VARIABLES } from '../common/schemas';

export const CreateCallBody = named('CreateCallRequest', () => z.strictObject({
  agent_id: uuid(),
  from_phone_number: e164(),
  to_phone_number: e164(),
  contact_id: z.optional(uuid()),
  metadata: z.optional(freeFormObject()),
  /** Filled into the agent's `{{name}}` placeholders (begin message, prompt). */
  dynamic_variables: z.optional(DynamicVariables),
}), 'An outbound call to place');
export type CreateCallInput = z.output<typeof CreateCallBody>;

export const CallListQuery = lazy(() => z.strictObject({
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

/** One turn; `interrupted` (voice runtime): the caller cut the agent off, and `text` holds only the words they heard. */
export const TranscriptTurn = lazy(() => z.object({ role: z.enum(['agent', 'user']), text: z.string(), time_sec: z.number(), interrupted: z.optional(z.boolean()) }));

/** A tool the agent called during the call: what it asked, what it got, when (seconds from the answer). */
export const CallToolCall = lazy(() => z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()), result: z.unknown(), time_sec: z.number() }));

export const CallAnalysis = lazy(() => z.object({
  summary: z.string(),
  sentiment: z.enum(['positive', 'neutral', 'negative']),
  successful: z.boolean(),
  custom: z.record(z.string(), z.unknown()),
}));

/** The call session. */
export const Call = named('Call', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.string(),
  campaign_id: z.nullable(z.string()),
  contact_id: z.nullable(z.string()),
  direction: z.enum(['outbound', 'inbound']),
  from_phone_number: z.string(),
  to_phone_number: z.string(),
  status: z.enum(CALL_STATUSES),
  disconnection_reason: z.nullable(z.enum(DISCONNECTION_REASONS)),
  /** Why the call ended as it did when the carrier did not say (do-not-call, carrier error, recovery sweep), else null. */
  error_message: z.nullable(z.string()),
  /** When dialing started (null while queued). */
  started_at: z.nullable(z.string()),
  answered_at: z.nullable(z.string()),
  ended_at: z.nullable(z.string()),
  duration_sec: z.number(),
  transcript: z.array(TranscriptTurn),
  /** The tools the agent called, in order (webhook tools and built-ins). */
  tool_calls: z.array(CallToolCall),
  /** A presigned GET link (15 minutes), made afresh on every read; null without a recording. */
  recording_url: z.nullable(z.string()),
  analysis: z.nullable(CallAnalysis),
  /** Why the last analysis attempt failed (null once it succeeded or before any attempt). */
  analysis_error: z.nullable(z.string()),
  metadata: z.record(z.string(), z.unknown()),
  dynamic_variables: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'A call session: its course, transcript, recording link and analysis');
export type Call = z.output<typeof Call>;
export type Transcript = z.output<typeof TranscriptTurn>[];
export type CallToolCalls = z.output<typeof CallToolCall>[];
export type CallAnalysisValue = z.output<typeof CallAnalysis>;
