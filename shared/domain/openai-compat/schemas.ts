import * as z from 'zod/mini';
import { lazy } from '../common/lazy';
import { named } from '../common/named';

/**
 * What POST /openai/v1/chat/completions reads of OpenAI's Chat Completions request. The other
 * members are read by request-fields.ts, which honours each (`max_completion_tokens`,
 * `response_format`, `tool_choice`, sampling) or refuses it with a 400 naming it (`n` above 1,
 * `logprobs`, audio, a member OpenAI does not have); `temperature` overrides the agent's.
 */
const part = () => z.looseObject({ type: z.string(), text: z.optional(z.string()) });
const content = () => z.optional(z.nullable(z.union([z.string(), z.array(part())])));
const toolCall = () =>
  z.looseObject({ id: z.string().check(z.minLength(1)), type: z.optional(z.literal('function')), function: z.looseObject({ name: z.string().check(z.minLength(1)), arguments: z.string() }) });

export const ChatCompletionMessage = () =>
  z.looseObject({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: content(),
    name: z.optional(z.string()),
    tool_calls: z.optional(z.nullable(z.array(toolCall()))),
    tool_call_id: z.optional(z.string()),
  });

export const ChatCompletionBody = /* @__PURE__ */ named('ChatCompletionRequest', () =>
  z.looseObject({
    /** The agent's id. */
    model: z.string().check(z.minLength(1)),
    messages: z.array(ChatCompletionMessage()).check(z.minLength(1), z.maxLength(500)),
    tools: z.optional(
      z
        .array(
          z.looseObject({
            type: z.literal('function'),
            function: z.looseObject({
              name: z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - (at most 64)')),
              description: z.optional(z.string()),
              parameters: z.optional(z.record(z.string(), z.unknown())),
            }),
          }),
        )
        .check(z.maxLength(64)),
    ),
    tool_choice: z.optional(z.unknown()),
    stream: z.optional(z.nullable(z.boolean())),
    stream_options: z.optional(z.nullable(z.looseObject({ include_usage: z.optional(z.boolean()) }))),
    temperature: z.optional(z.nullable(z.number().check(z.gte(0), z.lte(2)))),
  }),
  'OpenAI Chat Completions request; `model` is an agent id',
);
export type ChatCompletionBody = z.output<typeof ChatCompletionBody>;

export const ModelParams = /* @__PURE__ */ lazy(() => z.strictObject({
  /** An agent's id, optionally `@<version>` or `@draft`. */
  model: z.string().check(z.minLength(1), z.maxLength(100)),
}));
