import { v7 as uuidv7 } from 'uuid';
import { llm } from '../../adapters/llm';
import { isRetryable, LlmError, permanentReason } from '../../adapters/llm/port';
import { clockNow } from '../../clock';
import { tableName } from '../../db/client';
import { keys } from '../../db/keys';
import { transact } from '../../db/store';
import { AppError, BadGatewayError, UnavailableError, ValidationError } from '../../errors';
import { logger } from '../../logger';
import type { Agent } from '../agents/schemas';
import { effectiveModel } from '../agents/models';
import { findAgent, isActive } from '../chats/store';
import { rawBody, type RawBody } from '../common/raw-body';
import { streamBodyOf, TextChannel, type StreamBody } from '../common/stream-body';
import { runTurn, TurnDeadlineError, type ConversationMessage, type TurnOutput } from '../conversations/engine';
import { toolsForAgent, type RunnableTool } from '../conversations/tools/catalog';
import { conversationSetup } from '../conversations/variables';
import { openAiErrorBody } from './errors';
import type { ChatCompletionBody } from './schemas';

/**
 * The agent as an OpenAI model (docs/api.md, "The agent as an OpenAI model"): one Chat Completions
 * request is one turn of the conversation engine, stateless (nothing is stored but usage). The
 * agent's filled prompt is the system message (the caller's own system and developer messages
 * follow it), its knowledge base grounds the caller's latest user message, its webhook tools and
 * built-ins run on the platform, and its `function` tools and the caller's `tools` come back as
 * `tool_calls` (finish_reason `tool_calls`) for the caller to answer in its next request, as
 * OpenAI does. `stream: true` answers `chat.completion.chunk`s ending `data: [DONE]`.
 */

/** The same budget as a chat turn (API Gateway answers 504 at 30 s). */
const BUDGET_MS = 25_000;

const notFound = (model: string) =>
  new AppError(404, 'NOT_FOUND', `The model \`${model}\` does not exist or you do not have access to it (model is the id of one of your active agents; GET /openai/v1/models lists them)`, { param: 'model', resource: 'Agent', id: model });

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p: { type?: string; text?: string }) => (p.type === 'text' && p.text ? p.text : '')).join('') : '';

/** The caller's messages as the engine's history, with the system text the caller added. */
function conversationOf(messages: ChatCompletionBody['messages']): { system: string[]; history: ConversationMessage[] } {
  const system: string[] = [];
  const history: ConversationMessage[] = [];
  const callNames = new Map<string, string>();
  messages.forEach((m, i) => {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content));
    else if (m.role === 'user') history.push({ role: 'user', content: textOf(m.content) });
    else if (m.role === 'assistant') {
      const text = textOf(m.content);
      if (text || !m.tool_calls?.length) history.push({ role: 'agent', content: text });
      for (const c of m.tool_calls ?? []) {
        let args: Record<string, unknown> = {};
        try {
          const parsed: unknown = JSON.parse(c.function.arguments || '{}');
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
        } catch {
          // The model's text that did not parse: kept as {} (the engine never runs it again).
        }
        callNames.set(c.id, c.function.name);
        history.push({ role: 'tool_call', content: '', tool_call_id: c.id, name: c.function.name, arguments: args });
      }
    } else {
      if (!m.tool_call_id) throw ValidationError.field(`messages.${i}.tool_call_id`, 'required on a tool message');
      const name = callNames.get(m.tool_call_id);
      if (!name) throw ValidationError.field(`messages.${i}.tool_call_id`, `"${m.tool_call_id}" answers no tool call of an earlier assistant message`);
      const text = textOf(m.content);
      let result: unknown = text;
      try {
        result = JSON.parse(text);
      } catch {
        // Plain text: kept as it is.
      }
      history.push({ role: 'tool_result', content: '', tool_call_id: m.tool_call_id, name, result });
    }
  });
  const last = history.at(-1);
  if (!last || (last.role !== 'user' && last.role !== 'tool_result')) throw ValidationError.field('messages', 'the last message must be the user\'s or a tool\'s');
  return { system, history };
}

/** A failed model as the turn answers it: 503 when retrying may cure it, else 502. */
function modelFailure(err: LlmError | TurnDeadlineError): AppError {
  if (err instanceof LlmError && !isRetryable(err)) {
    return new BadGatewayError(`The agent's model refused the request (${permanentReason(err)})`, { reason: permanentReason(err), provider_message: err.details.providerMessage ?? err.message });
  }
  const retryAfter = (err instanceof LlmError ? err.details.retryAfterSeconds : undefined) ?? 5;
  return new UnavailableError('The agent\'s model did not answer; retry later', { reason: err instanceof LlmError ? err.reason : 'timeout' }, retryAfter);
}

/** Counts one request in the agent's usage: the `openai` channel's day counters of the agent and of ALL agents (docs/data-model.md). */
async function countUsage(orgId: string, agentId: string, usage: TurnOutput['usage']): Promise<void> {
  const day = clockNow().toISOString().slice(0, 10);
  const adds = { openai_requests: 1, llm_requests: usage.requests, prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens };
  const names: Record<string, string> = { '#entity': 'entity', '#day': 'day' };
  const values: Record<string, unknown> = { ':entity': 'STATS', ':day': day };
  const expression = Object.entries(adds).map(([name, n], i) => {
    names[`#a${i}`] = name;
    values[`:a${i}`] = n;
    return `#a${i} :a${i}`;
  });
  await transact(
    [agentId, 'ALL'].map((agent) => ({
      Update: {
        TableName: tableName(),
        Key: keys.conversationStatsDay(orgId, agent, 'openai', day),
        UpdateExpression: `SET #entity = :entity, #day = :day ADD ${expression.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    })),
  ).catch((err: unknown) => logger.warn('An OpenAI-compatible request could not be counted', { agent_id: agentId, error: err as Error }));
}

interface Prepared {
  agent: Agent;
  run: (onDelta?: (delta: string, id: string) => void) => Promise<TurnOutput>;
}

async function prepare(orgId: string, body: ChatCompletionBody): Promise<Prepared> {
  const agent = await findAgent(orgId, body.model);
  if (!agent || !isActive(agent)) throw notFound(body.model);
  const { system: callerSystem, history } = conversationOf(body.messages);
  const setup = conversationSetup({ agent, now: clockNow() });
  const agentTools = await toolsForAgent(orgId, (agent.selected_tools ?? []) as Record<string, unknown>[], 'chat');
  const taken = new Set(agentTools.map((t) => t.name));
  const callerTools: RunnableTool[] = (body.tools ?? []).map((t, i) => {
    if (taken.has(t.function.name)) throw ValidationError.field(`tools.${i}.function.name`, `"${t.function.name}" is already a tool of the agent`);
    taken.add(t.function.name);
    return { kind: 'function', name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? { type: 'object', properties: {} }, selection: {} };
  });
  // `tool_choice: "none"` offers no tool, as OpenAI does.
  const tools = body.tool_choice === 'none' ? [] : [...agentTools, ...callerTools];
  const lastUser = [...history].reverse().find((m) => m.role === 'user')?.content ?? '';
  const passages = agent.knowledge_base && lastUser ? await import('../conversations/grounding').then((g) => g.groundingPassages(orgId, agent.knowledge_base!, lastUser)) : [];
  const id = `chatcmpl-${uuidv7()}`;
  return {
    agent,
    run: (onDelta) =>
      runTurn({
        llm: llm(),
        model: effectiveModel(agent),
        temperature: body.temperature ?? agent.temperature,
        system: [setup.system, ...callerSystem].filter((s) => s.trim()).join('\n\n'),
        tools,
        conversation: { type: 'chat', id, organization_id: orgId, agent_id: agent.id, contact_id: null, dynamic_variables: {}, metadata: { channel: 'openai' }, timezone: setup.timezone },
        history,
        passages,
        deadlineMs: Date.now() + BUDGET_MS,
        ...(onDelta ? { stream: { onDelta } } : {}),
      }),
  };
}

/** What the turn answers: the reply text (every step's, in order) and the tool calls the caller must answer. */
function answerOf(out: TurnOutput) {
  const text = out.messages.filter((m) => m.role === 'agent').map((m) => m.content).filter(Boolean).join('\n\n');
  const toolCalls = out.pending.map((p, index) => ({ index, id: p.id, type: 'function' as const, function: { name: p.name, arguments: JSON.stringify(p.arguments) } }));
  const usage = { prompt_tokens: out.usage.promptTokens, completion_tokens: out.usage.completionTokens, total_tokens: out.usage.promptTokens + out.usage.completionTokens };
  return { text, toolCalls, usage, finish: toolCalls.length ? 'tool_calls' : 'stop' };
}

export async function chatCompletion(orgId: string, body: ChatCompletionBody): Promise<RawBody | StreamBody> {
  const { agent, run } = await prepare(orgId, body);
  const id = `chatcmpl-${uuidv7()}`;
  const created = Math.floor(clockNow().getTime() / 1000);
  if (!body.stream) {
    let out: TurnOutput;
    try {
      out = await run();
    } catch (err) {
      throw err instanceof LlmError || err instanceof TurnDeadlineError ? modelFailure(err) : err;
    }
    await countUsage(orgId, agent.id, out.usage);
    const a = answerOf(out);
    const message = { role: 'assistant', content: a.text || null, refusal: null, ...(a.toolCalls.length ? { tool_calls: a.toolCalls.map(({ index: _i, ...c }) => c) } : {}) };
    return rawBody('application/json', JSON.stringify({ id, object: 'chat.completion', created, model: agent.id, choices: [{ index: 0, message, logprobs: null, finish_reason: a.finish }], usage: a.usage, system_fingerprint: null }));
  }

  const channel = new TextChannel();
  const base = { id, object: 'chat.completion.chunk', created, model: agent.id, system_fingerprint: null };
  const send = (json: unknown) => channel.push(`data: ${JSON.stringify(json)}\n\n`);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => send({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  let plain = { statusCode: 200, body: '' };
  chunk({ role: 'assistant', content: '' });
  let lastMessage: string | undefined;
  run((delta, messageId) => {
    // A second reply of the turn (after platform tools ran) is set apart from the first.
    if (lastMessage && lastMessage !== messageId) chunk({ content: '\n\n' });
    lastMessage = messageId;
    chunk({ content: delta });
  }).then(
    async (out) => {
      await countUsage(orgId, agent.id, out.usage);
      const a = answerOf(out);
      if (a.toolCalls.length) chunk({ tool_calls: a.toolCalls });
      chunk({}, a.finish);
      if (body.stream_options?.include_usage) send({ ...base, choices: [], usage: a.usage });
      channel.push('data: [DONE]\n\n');
      channel.end();
    },
    (err: unknown) => {
      const failure = err instanceof LlmError || err instanceof TurnDeadlineError ? modelFailure(err) : err instanceof AppError ? err : undefined;
      if (!failure) logger.error('An OpenAI-compatible stream failed', { error: err as Error });
      const error = openAiErrorBody(failure ?? { code: 'INTERNAL', message: 'Internal server error', details: {} });
      plain = { statusCode: failure?.statusCode ?? 500, body: JSON.stringify(error) };
      // As OpenAI does: an `error` object in the stream, which its SDKs raise.
      send(error);
      channel.end();
    },
  );
  return streamBodyOf(channel, 'text/event-stream; charset=utf-8', () => plain);
}

/** The organization's active agents as models. */
export async function listModels(orgId: string): Promise<RawBody> {
  const { listAgents } = await import('../agents/service');
  const data: { id: string; object: 'model'; created: number; owned_by: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = (await listAgents(orgId, { limit: 100, ...(cursor ? { cursor } : {}), status: 'AGENT_STATUS_ACTIVE' } as never)) as unknown as { items: Agent[]; meta: { next_cursor: string | null } };
    for (const a of page.items) data.push({ id: a.id, object: 'model', created: Math.floor(Date.parse(a.created_at ?? '') / 1000) || 0, owned_by: orgId });
    cursor = page.meta?.next_cursor ?? undefined;
  } while (cursor);
  return rawBody('application/json', JSON.stringify({ object: 'list', data }));
}
