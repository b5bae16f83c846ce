import { LlmError, type LlmMessage, type LlmPassage, type LlmPort, type LlmToolCall, type LlmUsage, type LlmCallOptions } from '../../adapters/llm/port';
import { agentTurnSpan } from '../../telemetry/genai';
import { contextTokenLimit, fitHistory } from './context-budget';
import type { executeTool, ExecutedTool, ToolEffect } from './tools/executor';
import { capResult } from './tools/results';
import { checkToolArguments, parseArguments } from './tools/arguments';
import type { RunnableTool } from './tools/catalog';
import type { ConversationRef } from './types';
import type { Segment } from './segments';
import type { ReplyLatency, ReplyTimer } from './latency';
import { v7 as uuidv7 } from 'uuid';

/**
 * The conversation engine: one turn of any conversation (a chat message, a simulated caller's
 * line), storage-agnostic. It grounds the user's words in the knowledge base (the caller passes
 * the passages), runs the model with the agent's tools for at most MAX_TOOL_ROUNDS rounds, runs
 * webhook tools and built-ins itself and stops at `function` tools, which the API caller answers.
 * It returns the messages the turn adds; the channel stores them at once. When the model fails
 * after platform tools ran, the error carries what the turn did (keptTurnOf), so the channel can
 * keep it and a retry continue from it instead of running the tools again. Each model request
 * holds as much recent history as fits the context budget (context-budget.ts).
 */

/**
 * `executeTool`, its module (webhook requests and their egress checks, the built-in tools)
 * imported by the first tool call a process runs: a turn that calls no tool never needs it, and
 * every chat, widget and call function would otherwise compile it on each cold start.
 */
export const executeToolOnDemand: typeof executeTool = async (...args) => (await import('./tools/executor')).executeTool(...args);

/** Rounds of tool calls one turn may make before the model must answer in text. */
export const MAX_TOOL_ROUNDS = 5;
/** Tool calls of one model step that run; a model asking for more gets the first ones (the rest are not shown back to it). */
export const MAX_CALLS_PER_STEP = 8;

/** A message of a conversation as the engine sees it (chats store these; calls turn them into a transcript). */
export interface ConversationMessage {
  role: 'agent' | 'user' | 'tool_call' | 'tool_result';
  content: string;
  /** tool_call and tool_result: the model's call id. */
  tool_call_id?: string;
  /** tool_call and tool_result: the tool's name. */
  name?: string;
  /** tool_call: the arguments as parsed (an object; `{}` when the model's text did not parse). */
  arguments?: Record<string, unknown>;
  /** tool_result: what the tool answered, or `{ error }`. */
  result?: unknown;
  /** agent: the knowledge-base passages that grounded the reply. */
  sources?: { doc_id: string; url: string | null; score: number }[];
  /** agent: the agent that produced the reply (the one handling the conversation then: after a hand-off, the agent handed to). */
  agent_id?: string;
  /** Set when the turn streams (TurnInput.stream): the id the message is stored under, known before it is complete. */
  id?: string;
  /** Set by a channel that told the message to its caller before storing it: the time it was told. */
  created_at?: string;
  /** agent: where the reply's time went (latency.ts), when the turn was timed (TurnInput.timer). */
  latency_ms?: ReplyLatency;
}

/**
 * A streaming turn's listener (chats' SSE, the voice relay): `onDelta` gets the agent's reply text
 * as the model produces it, with the id its message will have; `onMessage` gets each message the
 * turn adds once it is complete (the agent's reply, every tool call, every tool result), the
 * user's excepted. Messages of a turn that then fails are kept only as the turn's rules say
 * (keptTurnOf): a listener must treat what it heard of a failed turn as not said.
 */
export interface TurnStream {
  onDelta?(delta: string, messageId: string): void;
  onMessage?(message: ConversationMessage): void;
}

/** The built-in every agent with `handoff_agents` is offered (handoff.ts builds it and the hook that runs it). */
export const HANDOFF_TOOL = 'handoff_to_agent';

/**
 * A hand-off the hook made: what the turn's following model requests use instead of the input's
 * (the agent handed to: its filled prompt, tools, model, temperature, knowledge-base passages and
 * the conversation as its tools see it), what the model is told, and the segment it opened.
 */
export interface HandoffSwitch {
  system: string;
  tools: RunnableTool[];
  model: string;
  temperature: number;
  passages: LlmPassage[];
  conversation: ConversationRef;
  /** The tool result the model sees. */
  result: unknown;
  /** The agent handed from. */
  from: { agent_id: string; agent_version: number | null };
  /** The segment the hand-off opened (the agent handed to, its version, when, why). */
  segment: Segment;
}

/**
 * Runs a `handoff_to_agent` call (handoff.ts, `handoffSession`): a switch, or `{ refused }`, the
 * error the model hears (a loop, the cap, an agent not listed or gone). The engine calls it for at
 * most one hand-off per model step; it is stateful (it knows the chain so far).
 */
export type HandoffHook = (agentId: string, reason: string | null) => Promise<HandoffSwitch | { refused: string }>;

/** A `function` tool call waiting for the API caller's answer. */
export interface PendingToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface TurnInput {
  llm: LlmPort;
  model: string;
  temperature: number;
  /** The agent's filled prompt. */
  system: string;
  tools: RunnableTool[];
  conversation: ConversationRef;
  /** Everything said before this turn, oldest first. */
  history: ConversationMessage[];
  /** The user's new words; absent when the turn resumes with tool results. */
  userText?: string;
  /** Resuming a turn stopped at `function` tools: the caller's answers, one per pending call. */
  toolResults?: { tool_call_id: string; name: string; output: unknown }[];
  /** Knowledge-base passages for this turn (already ranked). */
  passages: LlmPassage[];
  /** Rounds this turn already used before it stopped for function tools. */
  roundsUsed?: number;
  /** Epoch ms by which the turn must be done: every model request gets what remains; a tool still running then is cancelled. */
  deadlineMs: number;
  /** Estimated tokens one model request may hold (default LLM_CONTEXT_TOKENS). */
  contextTokens?: number;
  /** Runs the platform's tool calls instead of `executeTool` (agent tests: mocks, nothing acts on the world). */
  executeTool?: typeof executeTool;
  /** Streams the turn (see TurnStream): the model is asked to stream and every message gets its id at once. */
  stream?: TurnStream;
  /** The OpenAI-compatible endpoint's request fields, sent with every model request of the turn. */
  modelOptions?: LlmCallOptions;
  /**
   * Runs `handoff_to_agent` (handoff.ts): on a switch the following model requests of this turn use
   * the agent handed to (the same turn may go on with it). Without it the tool is not run here.
   */
  handoff?: HandoffHook;
  /**
   * Times the turn's replies (latency.ts): started by the channel at the end of the user's turn,
   * its knowledge-base time already added; each agent reply gets `latency_ms`, its first piece sent
   * at its first delta (a streamed turn) or when it is ready (a turn answered whole).
   */
  timer?: ReplyTimer;
}

export interface TurnOutput {
  /** The messages this turn adds, in order (the user's first, when there is one). */
  messages: ConversationMessage[];
  /** Set when the turn stopped at `function` tools. */
  pending: PendingToolCall[];
  roundsUsed: number;
  effect: ToolEffect;
  usage: LlmUsage & { requests: number };
  /** The hand-offs this turn made, in order ([] when none): the channel records their segments and events. */
  handoffs: HandoffSwitch[];
}

/** The turn ran out of its time budget: the channel answers 503 (and keeps what keptTurnOf gives). */
export class TurnDeadlineError extends Error {
  constructor() {
    super('The conversation turn ran out of time');
    this.name = 'TurnDeadlineError';
  }
}

/** What a turn did before its model failed: set on the LlmError or TurnDeadlineError it throws. */
export interface KeptTurn {
  /** The messages added so far (the user's first, then whole tool rounds: every call with its result). */
  messages: ConversationMessage[];
  roundsUsed: number;
  usage: LlmUsage & { requests: number };
  /** Tool calls the platform ran (webhook tools and built-ins); 0 means nothing is worth keeping. */
  toolsRan: number;
  /** The hand-offs made before the failure (the kept messages include their calls). */
  handoffs: HandoffSwitch[];
}

const KEPT = Symbol('keptTurn');

/** What the failed turn had done (see KeptTurn), when `err` is a model failure or deadline thrown by runTurn. */
export function keptTurnOf(err: unknown): KeptTurn | undefined {
  return err && typeof err === 'object' ? (err as { [KEPT]?: KeptTurn })[KEPT] : undefined;
}

/** The error result of a tool cancelled at the turn's deadline. */
export const timedOutResult = (ms: number) => ({ error: `timed out: the tool did not answer within the turn's remaining ${Math.max(0, Math.round(ms))} ms and was cancelled` });

const toolText = (result: unknown): string => (typeof result === 'string' ? result : JSON.stringify(result ?? null));

/** The stored conversation as Chat Completions messages: an agent reply and the tool calls right after it are one assistant message. */
export function toLlmMessages(messages: ConversationMessage[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'agent') out.push({ role: 'assistant', content: m.content });
    else if (m.role === 'tool_call') {
      const call: LlmToolCall = { id: m.tool_call_id!, name: m.name!, arguments: JSON.stringify(m.arguments ?? {}) };
      const last = out[out.length - 1];
      if (last?.role === 'assistant') (last.toolCalls ??= []).push(call);
      else out.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else out.push({ role: 'tool', toolCallId: m.tool_call_id!, name: m.name!, content: toolText(m.result) });
  }
  return out;
}

/** Runs one turn (see the module comment). Model failures (LlmError) and TurnDeadlineError propagate, carrying what the turn did (keptTurnOf). */
export function runTurn(input: TurnInput): Promise<TurnOutput> {
  // The turn's span (GenAI `invoke_agent`): its model requests and tool calls are its children; a
  // turn with no request around it (a relay call's) starts its own trace.
  return agentTurnSpan(input.conversation, input.model, () => runTurnUntraced(input));
}

async function runTurnUntraced(input: TurnInput): Promise<TurnOutput> {
  const progress = { rounds: input.roundsUsed ?? 0, toolsRan: 0 };
  const added: ConversationMessage[] = [];
  const usage = { requests: 0, promptTokens: 0, completionTokens: 0 };
  const handoffs: HandoffSwitch[] = [];
  try {
    return await turnLoop(input, added, usage, progress, handoffs);
  } catch (err) {
    if (err instanceof LlmError || err instanceof TurnDeadlineError) {
      const kept: KeptTurn = { messages: added, roundsUsed: progress.rounds, usage, toolsRan: progress.toolsRan, handoffs };
      Object.defineProperty(err, KEPT, { value: kept, enumerable: false });
    }
    throw err;
  }
}

async function turnLoop(
  input: TurnInput,
  added: ConversationMessage[],
  usage: { requests: number; promptTokens: number; completionTokens: number },
  progress: { rounds: number; toolsRan: number },
  handoffs: HandoffSwitch[],
): Promise<TurnOutput> {
  const effect: ToolEffect = {};
  const contextTokens = input.contextTokens ?? contextTokenLimit();
  // What a hand-off replaces for the following model requests (the agent handed to).
  const cur = { system: input.system, tools: input.tools, model: input.model, temperature: input.temperature, passages: input.passages, conversation: input.conversation };
  const sourcesOf = (passages: LlmPassage[]) => passages.map((p) => ({ doc_id: p.doc_id, url: p.url, score: p.score }));
  let sources = sourcesOf(cur.passages);
  if (input.userText !== undefined) added.push({ role: 'user', content: input.userText });
  for (const r of input.toolResults ?? []) added.push({ role: 'tool_result', content: '', tool_call_id: r.tool_call_id, name: r.name, result: capResult(r.output) });
  let rounds = progress.rounds;
  let byName = new Map(cur.tools.map((t) => [t.name, t]));

  for (;;) {
    const remaining = input.deadlineMs - Date.now();
    if (remaining <= 0) throw new TurnDeadlineError();
    const offerTools = rounds < MAX_TOOL_ROUNDS && !effect.end && !effect.transferTo;
    const tools = offerTools ? cur.tools.map(({ name, description, parameters }) => ({ name, description, parameters })) : [];
    const fitted = fitHistory({ system: cur.system, passages: cur.passages, tools, messages: toLlmMessages([...input.history, ...added]) }, contextTokens);
    const stream = input.stream;
    // The id the step's reply will be stored under, told with each piece of its text.
    const replyId = stream ? uuidv7() : undefined;
    let streamed = false;
    // The reply's first piece: its first token from the model, and when it went towards the user.
    // From the request leaving for the model (the adapter says when: after its key read and the body built), else from here.
    // The model's time is taken on the monotonic clock, to the fraction of a millisecond (Date.now's
    // whole milliseconds at both ends would be off by up to one); the first piece's moment stays
    // on Date.now, where the turn's start (e2e's) is.
    let requestedAt = performance.now();
    let firstTokenAt: number | undefined;
    let firstTokenMs: number | undefined;
    const reply = await input.llm.complete({
      onSent: () => void (requestedAt = performance.now()),
      model: cur.model,
      temperature: cur.temperature,
      system: cur.system,
      passages: cur.passages,
      messages: fitted.messages,
      tools,
      timeoutMs: remaining,
      ...(input.modelOptions ? { options: input.modelOptions } : {}),
      ...(stream
        ? {
            onDelta: (delta: string) => {
              if (!delta) return;
              firstTokenAt ??= performance.now();
              firstTokenMs ??= Date.now();
              streamed = true;
              stream.onDelta?.(delta, replyId!);
            },
          }
        : {}),
    });
    // Waited on the model before the reply: to its first token, or whole when the request asked only for tools.
    input.timer?.addModel((reply.text ? (firstTokenAt ?? performance.now()) : performance.now()) - requestedAt);
    usage.requests++;
    usage.promptTokens += reply.usage.promptTokens;
    usage.completionTokens += reply.usage.completionTokens;
    const calls = offerTools ? reply.toolCalls.slice(0, MAX_CALLS_PER_STEP) : [];
    const add = (message: ConversationMessage) => {
      if (stream) message.id ??= uuidv7();
      added.push(message);
      stream?.onMessage?.(message);
    };
    if (reply.text || !calls.length) {
      // A model that could not stream is passed on whole.
      const sentMs = firstTokenMs ?? Date.now();
      if (stream && !streamed && reply.text) stream.onDelta?.(reply.text, replyId!);
      add({
        role: 'agent', content: reply.text, sources: calls.length ? [] : sources, agent_id: cur.conversation.agent_id, ...(replyId ? { id: replyId } : {}),
        ...(input.timer ? { latency_ms: input.timer.figures(sentMs) } : {}),
      });
    }
    if (!calls.length) return { messages: added, pending: [], roundsUsed: rounds, effect, usage, handoffs };

    rounds++;
    progress.rounds = rounds;
    // The step's calls first, then their results in the same order: one assistant message with
    // every call, then one tool message each (what Chat Completions expects). A stream is told each
    // result the moment its tool answers (docs/api.md, "Streaming a turn"); it is filed in call order.
    const pending: PendingToolCall[] = [];
    const told: (ConversationMessage | undefined)[] = [];
    // One hand-off per step: a second one in the same step is refused (the model asked for two agents at once).
    let switched: HandoffSwitch | undefined;
    let handingOff = false;
    const tell = (call: LlmToolCall, i: number, result: unknown): unknown => {
      if (stream && result !== undefined) {
        const message: ConversationMessage = { role: 'tool_result', content: '', tool_call_id: call.id, name: call.name, result, id: uuidv7() };
        stream.onMessage?.(message);
        told[i] = message;
      }
      return result;
    };
    const toolsStartedMs = Date.now();
    const results: (unknown | undefined)[] = await Promise.all(
      calls.map(async (call, i) => tell(call, i, await (async () => {
        const tool = byName.get(call.name);
        // The one argument check of chats and calls: text that is not a JSON object valid for the
        // tool is an error the model hears; the tool never runs (function tools are not handed out).
        const checked = checkToolArguments(tool?.parameters, call.arguments);
        const args = checked.args ?? parseArguments(call.arguments).args ?? {};
        add({ role: 'tool_call', content: '', tool_call_id: call.id, name: call.name, arguments: args });
        if (!tool) return { error: `there is no tool named ${call.name}` };
        if (checked.error !== undefined) return { error: checked.error };
        if (call.name === HANDOFF_TOOL && input.handoff) {
          if (handingOff) return { error: 'only one hand-off per step: this one was not made' };
          handingOff = true;
          const answer = await input.handoff(String(args.agent_id ?? ''), typeof args.reason === 'string' && args.reason.trim() ? args.reason.trim() : null);
          progress.toolsRan++;
          if ('refused' in answer) return { error: answer.refused };
          switched = answer;
          return capResult(answer.result);
        }
        if (tool.kind === 'function') {
          pending.push({ id: call.id, name: call.name, arguments: args });
          return undefined;
        }
        // A tool gets what remains of the turn's budget at most: then it is cancelled (its request
        // aborted) and its call recorded as timed out.
        const run = input.executeTool ?? executeToolOnDemand;
        const left = input.deadlineMs - Date.now();
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), Math.max(0, left));
        const late = new Promise<ExecutedTool>((resolve) => {
          abort.signal.addEventListener('abort', () => resolve({ ok: false, result: timedOutResult(left) }), { once: true });
        });
        const outcome = await Promise.race([run(tool, { id: call.id, name: call.name, arguments: args }, cur.conversation, { signal: abort.signal }), late]).finally(() => clearTimeout(timer));
        progress.toolsRan++;
        if (outcome.effect?.end) effect.end = outcome.effect.end;
        if (outcome.effect?.transferTo) Object.assign(effect, { transferTo: outcome.effect.transferTo, transferMode: outcome.effect.transferMode, transferDescription: outcome.effect.transferDescription, transferReason: outcome.effect.transferReason });
        return capResult(outcome.result);
      })())),
    );
    input.timer?.addTools(Date.now() - toolsStartedMs);
    calls.forEach((call, i) => {
      if (results[i] === undefined) return;
      if (told[i]) added.push(told[i]!);
      else add({ role: 'tool_result', content: '', tool_call_id: call.id, name: call.name, result: results[i] });
    });
    if (switched) {
      // From the next model request on, the agent handed to answers: its prompt, tools, model, knowledge base.
      const s: HandoffSwitch = switched;
      Object.assign(cur, { system: s.system, tools: s.tools, model: s.model, temperature: s.temperature, passages: s.passages, conversation: s.conversation });
      byName = new Map(cur.tools.map((t) => [t.name, t]));
      sources = sourcesOf(cur.passages);
      handoffs.push(s);
    }
    if (pending.length) return { messages: added, pending, roundsUsed: rounds, effect, usage, handoffs };
  }
}
