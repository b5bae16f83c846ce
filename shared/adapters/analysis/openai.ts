import * as z from 'zod/mini';
import { config } from '../../config';
import { apiKeySource, MAX_PROVIDER_MESSAGE, providerFailure } from '../openai-compatible';
import { checkedData, dataSchema, dataTypes } from './fields';
import { AnalysisError, SENTIMENTS, type AnalysisField, type AnalysisInput, type AnalysisPort, type CallAnalysis } from './port';

/**
 * Post-call analysis through any OpenAI-compatible chat-completions API with structured output:
 * `POST {baseUrl}/chat/completions` with the agent's model (or the configured default), its
 * `analysis_summary_prompt` as the system message (or DEFAULT_INSTRUCTIONS), the transcript as
 * the user message, and `response_format` `json_schema` (strict) holding CALL_ANALYSIS_SCHEMA, so
 * the model can only answer with a CallAnalysis. The answer is validated again here: a refusal,
 * a truncated or malformed answer is an AnalysisError, never a half-filled analysis.
 *
 * Strict structured output needs every object closed (`additionalProperties: false`) with all
 * properties required, so the free-form `custom` object travels as a list of name/value pairs
 * and becomes an object here (a later pair wins over an earlier one of the same name).
 *
 * Key: ANALYSIS_SECRET_ARN (deployed: a Secrets Manager JSON `{"api_key": "..."}`, read once per
 * container) or ANALYSIS_API_KEY (local). Base URL, default model and timeout: shared/config.ts.
 */
export interface OpenAiAnalyzerOptions {
  baseUrl?: string;
  defaultModel?: string;
  timeoutMs?: number;
  apiKey?: () => Promise<string>;
}

export const DEFAULT_INSTRUCTIONS =
  'You analyse a finished phone call between a voice AI agent and a person. Summarize what happened in at most three ' +
  'sentences, judge the sentiment the person showed, decide whether the call achieved its purpose, and list any other ' +
  'facts worth keeping (an appointment booked, a callback requested, an objection) as name/value pairs.';

/** The longest transcript text sent; a longer one is cut and marked. */
const MAX_TRANSCRIPT_CHARS = 100_000;

/** The JSON schema the model must answer with (OpenAI strict mode: closed objects, every property required). */
export const CALL_ANALYSIS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['summary', 'sentiment', 'successful', 'success_rationale', 'custom'],
  properties: {
    summary: { type: 'string', description: 'What happened on the call, in a few sentences.' },
    sentiment: { type: 'string', enum: [...SENTIMENTS], description: 'The sentiment the person (not the agent) showed.' },
    successful: { type: 'boolean', description: 'Whether the call achieved its purpose (judged against the success criteria when given).' },
    success_rationale: { type: 'string', description: 'Why the call did or did not succeed, in one or two sentences.' },
    custom: {
      type: 'array',
      description: 'Further facts worth keeping, as name/value pairs; empty when there are none.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'value'],
        properties: { name: { type: 'string' }, value: { type: 'string' } },
      },
    },
  },
} as const;

/**
 * The schema for one conversation: CALL_ANALYSIS_SCHEMA and, with analysis fields, `data` (one
 * required, nullable property per field: dataSchema).
 */
export function analysisSchema(fields: AnalysisField[] = []): Record<string, unknown> {
  if (!fields.length) return CALL_ANALYSIS_SCHEMA;
  return {
    ...CALL_ANALYSIS_SCHEMA,
    required: [...CALL_ANALYSIS_SCHEMA.required, ...(fields.length ? ['data'] : [])],
    properties: {
      ...CALL_ANALYSIS_SCHEMA.properties,
      ...(fields.length ? { data: dataSchema(fields) } : {}),
    },
  };
}

/** The system message: the agent's summary prompt (or DEFAULT_INSTRUCTIONS), then its success criteria and fields. */
export function instructions(input: AnalysisInput): string {
  const parts = [input.summaryPrompt?.trim() || DEFAULT_INSTRUCTIONS];
  const criteria = input.successCriteria?.trim();
  if (criteria) parts.push(`Judge "successful" against these success criteria, and give your reason in "success_rationale":\n${criteria}`);
  if ((input.segments?.length ?? 0) > 1) {
    parts.push(`The conversation was handed from agent to agent; in order (the fields and criteria above are the last agent's):\n${input.segments!
      .map((s) => `- agent ${s.agent_id}${s.agent_version === null ? ' (draft)' : ` v${s.agent_version}`} from ${s.started_at}${s.reason ? `: ${s.reason}` : ''}`)
      .join('\n')}`);
  }
  const fields = input.fields ?? [];
  if (fields.length) {
    parts.push(`Fill "data" with one value per field, as the conversation shows it; null when it does not:\n${fields
      .map((f) => `- ${f.name} (${f.type === 'enum' ? `one of ${(f.options ?? []).join(', ')}` : f.type}): ${f.description}`)
      .join('\n')}`);
  }
  return parts.join('\n\n');
}

/** What a chat completion must hold for us (other members are ignored). */
const ChatCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.optional(z.nullable(z.string())), refusal: z.optional(z.nullable(z.string())) }),
        finish_reason: z.optional(z.nullable(z.string())),
      }),
    )
    .check(z.minLength(1)),
});

/** The model's answer, checked against the same rules as the schema it was given. */
const AnalysisAnswer = z.strictObject({
  summary: z.string().check(z.maxLength(10_000)),
  sentiment: z.enum(SENTIMENTS),
  successful: z.boolean(),
  custom: z.array(z.strictObject({ name: z.string().check(z.minLength(1), z.maxLength(200)), value: z.string().check(z.maxLength(2000)) })).check(z.maxLength(100)),
  // Optional here: a provider that ignores the schema may leave it out (null is kept then).
  success_rationale: z.optional(z.nullable(z.string().check(z.maxLength(5000)))),
  // Checked field by field (checkedData): one wrong value never throws the whole analysis away.
  data: z.optional(z.unknown()),
});

/** The user message: the outcome, then one line per turn. */
export function transcriptMessage(input: AnalysisInput): string {
  const lines = input.transcript.map((t) => `[${t.time_sec.toFixed(1)} s] ${t.role === 'agent' ? 'Agent' : t.role === 'system' ? 'Platform' : 'Person'}: ${t.text.replace(/\s+/g, ' ').trim()}`);
  let transcript = lines.length ? lines.join('\n') : '(no one spoke)';
  if (transcript.length > MAX_TRANSCRIPT_CHARS) transcript = `${transcript.slice(0, MAX_TRANSCRIPT_CHARS)}\n[transcript truncated]`;
  return `The call ended "${input.disconnectionReason}" after ${Math.round(input.durationSec)} seconds.\n\nTranscript:\n${transcript}`;
}

const keySource = apiKeySource({
  providerVariable: 'ANALYSIS_PROVIDER',
  arnVariable: 'ANALYSIS_SECRET_ARN',
  keyVariable: 'ANALYSIS_API_KEY',
  what: 'The analysis API key',
  notConfigured: (message, cause) => new AnalysisError('not_configured', message, { provider: 'openai' }, { cause }),
});

/** The API key from Secrets Manager (once per container) or the environment. */
export const analysisKeyFromEnvironment = keySource.read;

/** Forget the cached key (tests). */
export const resetAnalysisKey = keySource.reset;

function httpFailure(status: number, body: string): AnalysisError {
  const { reason, said } = providerFailure(status, body);
  return new AnalysisError(reason, `The analysis provider answered HTTP ${status}${said}`, { provider: 'openai', status });
}

const malformed = (message: string, cause?: unknown) => new AnalysisError('malformed', message, { provider: 'openai' }, { cause });

/** The CallAnalysis in a chat completion's text; an AnalysisError when there is none. */
export function parseCompletion(text: string, fields: AnalysisField[] = []): CallAnalysis {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw malformed('The analysis provider answered with something that is not JSON', err);
  }
  const completion = ChatCompletion.safeParse(json);
  if (!completion.success) throw malformed('The analysis provider\'s answer is not a chat completion');
  const choice = completion.data.choices[0];
  if (choice.message.refusal) {
    throw new AnalysisError('refused', `The model declined to analyse the call: ${choice.message.refusal.slice(0, MAX_PROVIDER_MESSAGE)}`, { provider: 'openai' });
  }
  if (choice.finish_reason === 'length') throw malformed('The model\'s answer was cut off (finish_reason "length")');
  if (!choice.message.content) throw malformed('The model\'s answer is empty');
  let content: unknown;
  try {
    content = JSON.parse(choice.message.content);
  } catch (err) {
    throw malformed('The model\'s answer is not JSON', err);
  }
  const answer = AnalysisAnswer.safeParse(content);
  if (!answer.success) {
    const where = answer.error.issues.map((i) => `${i.path.join('.') || '(answer)'}: ${i.message}`).join('; ');
    throw malformed(`The model's answer does not match the CallAnalysis schema (${where})`);
  }
  const { summary, sentiment, successful, custom, success_rationale } = answer.data;
  // Every value is checked against its field's type: a wrong one is kept as null and named in data_errors.
  const { data, data_errors } = checkedData(fields, answer.data.data);
  return {
    summary,
    sentiment,
    successful,
    custom: Object.fromEntries(custom.map((pair) => [pair.name, pair.value])),
    data,
    data_types: dataTypes(fields),
    data_errors,
    success_rationale: success_rationale ?? null,
  };
}

export function openAiAnalyzer(options: OpenAiAnalyzerOptions = {}): AnalysisPort {
  const settings = () => {
    const { analysis } = config();
    return {
      baseUrl: (options.baseUrl ?? analysis.baseUrl).replace(/\/+$/, ''),
      defaultModel: options.defaultModel ?? analysis.defaultModel,
      timeoutMs: options.timeoutMs ?? analysis.timeoutMs,
    };
  };
  const apiKey = options.apiKey ?? analysisKeyFromEnvironment;

  return {
    name: 'openai',
    async analyze(input) {
      const { baseUrl, defaultModel, timeoutMs } = settings();
      const key = await apiKey();
      const body = {
        model: input.model?.trim() || defaultModel,
        messages: [
          { role: 'system', content: instructions(input) },
          { role: 'user', content: transcriptMessage(input) },
        ],
        response_format: { type: 'json_schema', json_schema: { name: 'call_analysis', strict: true, schema: analysisSchema(input.fields) } },
      };
      let status: number;
      let text: string;
      try {
        // One signal bounds the whole exchange, the body included.
        const response = await fetch(`${baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        status = response.status;
        text = await response.text();
      } catch (err) {
        const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
        throw timedOut
          ? new AnalysisError('timeout', `The analysis provider did not answer within ${timeoutMs} ms`, { provider: 'openai' }, { cause: err })
          : new AnalysisError('unreachable', 'The analysis provider could not be reached', { provider: 'openai' }, { cause: err });
      }
      if (status < 200 || status >= 300) throw httpFailure(status, text);
      return parseCompletion(text, input.fields);
    },
  };
}
