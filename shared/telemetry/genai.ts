import {
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_REQUEST_TEMPERATURE,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';

/** The model port's shape as the spans read it (shared/adapters/llm/port.ts; structural, so telemetry imports no adapter). */
interface LlmRequest {
  model: string;
  temperature: number;
  system: string;
  messages: ({ role: 'user'; content: string } | { role: 'assistant'; content: string; toolCalls?: { id: string; name: string; arguments: string }[] } | { role: 'tool'; toolCallId: string; name: string; content: string })[];
  onDelta?: unknown;
  options?: { maxTokens?: number };
}
interface LlmResponse {
  text: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: { promptTokens: number; completionTokens: number };
  finishReason?: string;
}
interface LlmPort<Req extends LlmRequest = LlmRequest, Res extends LlmResponse = LlmResponse> {
  readonly name: string;
  complete(request: Req): Promise<Res>;
}
import { inSpan, markFailed, SpanKind, storedParent, tracer, tracingActive } from './tracing';

/**
 * GenAI semantic-convention spans (gen-ai-spans: `chat {model}` client spans for model requests,
 * `execute_tool {name}` for tool calls). Message content (the prompt, the messages, the reply,
 * tool arguments and results) is recorded only with
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, as the conventions advise.
 */

/** Whether message content may go into spans. */
export function captureContent(): boolean {
  return (process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? '').trim().toLowerCase() === 'true';
}

/** The model with a client span around each request; the model itself when tracing is off. */
export function tracedModel<P extends LlmPort<any, any>>(port: P): P {
  return {
    name: port.name,
    complete(request: LlmRequest) {
      if (!tracingActive()) return port.complete(request);
      return inSpan(`chat ${request.model}`, { kind: SpanKind.CLIENT, attributes: requestAttributes(port.name, request) }, async (span) => {
        const response = await port.complete(request);
        span?.setAttributes(responseAttributes(response));
        return response;
      });
    },
  } as P;
}

function requestAttributes(provider: string, request: LlmRequest) {
  return {
    [ATTR_GEN_AI_OPERATION_NAME]: 'chat',
    [ATTR_GEN_AI_PROVIDER_NAME]: provider,
    [ATTR_GEN_AI_REQUEST_MODEL]: request.model,
    [ATTR_GEN_AI_REQUEST_TEMPERATURE]: request.temperature,
    [ATTR_GEN_AI_REQUEST_STREAM]: !!request.onDelta,
    ...(request.options?.maxTokens !== undefined ? { [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: request.options.maxTokens } : {}),
    ...(captureContent()
      ? {
          [ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]: JSON.stringify([{ type: 'text', content: request.system }]),
          [ATTR_GEN_AI_INPUT_MESSAGES]: JSON.stringify(request.messages.map(messageOf)),
        }
      : {}),
  };
}

function messageOf(m: LlmRequest['messages'][number]) {
  if (m.role === 'tool') return { role: 'tool', parts: [{ type: 'tool_call_response', id: m.toolCallId, response: m.content }] };
  const parts: unknown[] = m.content ? [{ type: 'text', content: m.content }] : [];
  if (m.role === 'assistant') for (const c of m.toolCalls ?? []) parts.push({ type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments });
  return { role: m.role, parts };
}

function responseAttributes(response: LlmResponse) {
  const finish = response.finishReason ?? (response.toolCalls.length ? 'tool_calls' : 'stop');
  return {
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: response.usage.promptTokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: response.usage.completionTokens,
    [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [finish],
    ...(captureContent()
      ? {
          [ATTR_GEN_AI_OUTPUT_MESSAGES]: JSON.stringify([
            { role: 'assistant', parts: [...(response.text ? [{ type: 'text', content: response.text }] : []), ...response.toolCalls.map((c) => ({ type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments }))], finish_reason: finish },
          ]),
        }
      : {}),
  };
}

/** Runs one tool call inside an `execute_tool` span (the call itself when tracing is off). */
export function toolSpan<T extends { ok: boolean; result: unknown }>(
  call: { id: string; name: string; arguments: Record<string, unknown> },
  kind: string,
  run: () => Promise<T>,
): Promise<T> {
  if (!tracingActive()) return run();
  const attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
    [ATTR_GEN_AI_TOOL_NAME]: call.name,
    [ATTR_GEN_AI_TOOL_CALL_ID]: call.id,
    // The conventions' types: a webhook tool is an extension (the agent calls out); a built-in runs here.
    [ATTR_GEN_AI_TOOL_TYPE]: kind === 'webhook' ? 'extension' : 'function',
    ...(captureContent() ? { [ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]: JSON.stringify(call.arguments) } : {}),
  };
  return inSpan(`execute_tool ${call.name}`, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
    const outcome = await run();
    if (!outcome.ok) span?.setAttribute('error.type', 'tool_error');
    if (captureContent()) span?.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, JSON.stringify(outcome.result));
    return outcome;
  });
}

/** One conversation turn as a GenAI `invoke_agent` span (the turn itself when tracing is off). */
export function agentTurnSpan<T>(conversation: { type: string; id: string; agent_id: string }, model: string, run: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return run();
  const attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: 'invoke_agent',
    [ATTR_GEN_AI_AGENT_ID]: conversation.agent_id,
    [ATTR_GEN_AI_CONVERSATION_ID]: conversation.id,
    [ATTR_GEN_AI_REQUEST_MODEL]: model,
    'conversation.type': conversation.type,
  };
  return inSpan(`invoke_agent ${conversation.agent_id}`, { kind: SpanKind.INTERNAL, attributes }, run);
}

/**
 * One Realtime model response (a call on the voice runtime) as a GenAI client span in the call's
 * trace, recorded when `response.done` comes: from `response.created` on this process's clock to
 * now, with the response's token usage and status as its finish reason. Nothing when tracing is off.
 */
export function recordRealtimeResponse(traceparent: string | undefined, response: { model: string; startMs?: number; status: string; usage?: { input_tokens?: number; output_tokens?: number } }): void {
  if (!tracingActive()) return;
  const span = tracer().startSpan(
    `chat ${response.model}`,
    {
      kind: SpanKind.CLIENT,
      ...(response.startMs !== undefined ? { startTime: response.startMs } : {}),
      attributes: {
        [ATTR_GEN_AI_OPERATION_NAME]: 'chat',
        [ATTR_GEN_AI_PROVIDER_NAME]: 'openai',
        [ATTR_GEN_AI_REQUEST_MODEL]: response.model,
        'gen_ai.output.type': 'speech',
        [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [response.status],
        ...(typeof response.usage?.input_tokens === 'number' ? { [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: response.usage.input_tokens } : {}),
        ...(typeof response.usage?.output_tokens === 'number' ? { [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: response.usage.output_tokens } : {}),
      },
    },
    storedParent(traceparent),
  );
  if (response.status === 'failed') markFailed(span, 'the model response failed');
  span.end();
}
