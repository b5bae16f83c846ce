import type { ServerEvent } from './realtime-client';
import type { ToolRun, ToolsBridge } from './tools-bridge';
import type { TranscriptRecorder } from './transcript';

/**
 * The model's function calls on a call: gathered from the Realtime events, checked, run, and
 * answered with a `function_call_output` each.
 *
 * Where a call's parts are, as the Realtime reference gives them: the function-call item
 * (`response.output_item.added` / `.done`, and `response.done`'s `output`) has `name`, `call_id`
 * and `arguments`; `response.function_call_arguments.done` has `call_id`, `item_id` and the final
 * `arguments`, and no `name`. So each part is taken from wherever it comes first, and a name is
 * never read as empty because one event lacked it.
 */
export interface FunctionCall {
  callId: string;
  name: string;
  /** The arguments text as the model sent it (a JSON object, if the model got it right). */
  arguments: string;
}

/** The function calls of each response, as their events arrive. */
export class FunctionCalls {
  private readonly byResponse = new Map<string, Map<string, { name?: string; arguments?: string; itemId?: string }>>();

  private call(responseId: string, callId: string) {
    let calls = this.byResponse.get(responseId);
    if (!calls) this.byResponse.set(responseId, (calls = new Map()));
    let call = calls.get(callId);
    if (!call) calls.set(callId, (call = {}));
    return call;
  }

  private merge(responseId: string, callId: unknown, part: { name?: unknown; arguments?: unknown; itemId?: unknown }): void {
    if (typeof callId !== 'string' || !callId) return;
    const call = this.call(responseId, callId);
    if (typeof part.name === 'string' && part.name) call.name = part.name;
    // The item's arguments are '' while they stream: only text that came is kept.
    if (typeof part.arguments === 'string' && (part.arguments || call.arguments === undefined)) call.arguments = part.arguments;
    if (typeof part.itemId === 'string') call.itemId = part.itemId;
  }

  /** `response.output_item.added` / `.done`: a function-call item carries the name. */
  item(responseId: string, item: any): void {
    if (item?.type === 'function_call') this.merge(responseId, item.call_id, { name: item.name, arguments: item.arguments, itemId: item.id });
  }

  /** `response.function_call_arguments.done`: the final arguments (a `name` is taken when a server adds one). */
  argumentsDone(responseId: string, e: ServerEvent): void {
    this.merge(responseId, e.call_id, { name: e.name, arguments: e.arguments, itemId: e.item_id });
  }

  /** `response.done`: its `output` completes what the events gave; the response's calls, in order, are handed over once. */
  responseDone(responseId: string, output: unknown): FunctionCall[] {
    for (const item of Array.isArray(output) ? output : []) this.item(responseId, item);
    const calls = this.byResponse.get(responseId);
    this.byResponse.delete(responseId);
    return [...(calls ?? new Map()).entries()].map(([callId, c]) => ({ callId, name: c.name ?? '', arguments: c.arguments ?? '' }));
  }
}

/** A call-ending built-in (`end_call`, `transfer_call`) the model asked for, with its checked arguments. */
export interface EndRequest {
  callId: string;
  name: string;
  args: Record<string, unknown>;
}

export interface ToolCallsDeps {
  tools: ToolsBridge;
  transcript: TranscriptRecorder;
  /** Sends a `function_call_output` to the model. */
  output(callId: string, result: unknown): void;
  /** The call is still live (not ending, not over). */
  live(): boolean;
}

/** Runs a response's function calls; a caller speaking meanwhile drops their late results. */
export class ToolCalls {
  private readonly running = new Map<string, { cancelled: boolean }>();

  constructor(private readonly deps: ToolCallsDeps) {}

  /** A tool is running. */
  get busy(): boolean {
    return this.running.size > 0;
  }

  /** The caller spoke (or the call is over): results still to come are dropped. */
  cancelAll(): void {
    for (const token of this.running.values()) token.cancelled = true;
  }

  /** The calls of a generation the caller cut off are never run (an `end_call` must not hang up on them). */
  refuse(calls: FunctionCall[]): void {
    for (const c of calls) this.deps.output(c.callId, { error: 'not run: the caller interrupted' });
  }

  /**
   * Runs the calls, each answered once. A call with an unknown name or invalid arguments is an
   * error the model hears (and answers). One call-ending built-in is not run here: it is returned,
   * to run once the agent's words before it have played. Returns how many outputs the model
   * should answer, and the end asked for.
   */
  async run(calls: FunctionCall[]): Promise<{ answered: number; end?: EndRequest; knowledgeBaseMs: number }> {
    const { tools, transcript, output } = this.deps;
    const checked = calls.map((c) => ({ ...c, check: tools.check(c.name, c.arguments) }));
    const ending = checked.find((c) => c.check.args && tools.endsCall(c.name));
    // The knowledge base's searches among them (the reply's `knowledge_base` time; they run at once, so the longest).
    let knowledgeBaseMs = 0;
    const runs = checked.map(async (c): Promise<boolean> => {
      if (c.check.error !== undefined) {
        transcript.tool(c.name, {}, { error: c.check.error, arguments_text: c.arguments.slice(0, 500) });
        output(c.callId, { error: c.check.error });
        return true;
      }
      if (c === ending) {
        output(c.callId, { pending: 'runs once your last words have played' });
        return false;
      }
      if (tools.endsCall(c.name)) {
        output(c.callId, { error: 'not run: another call-ending tool was called' });
        return false;
      }
      const token = { cancelled: false };
      this.running.set(c.callId, token);
      const at = Date.now();
      let run: ToolRun;
      try {
        run = await tools.run(c.name, c.callId, c.check.args!);
      } finally {
        this.running.delete(c.callId);
      }
      if (run.knowledgeBaseMs) knowledgeBaseMs = Math.max(knowledgeBaseMs, run.knowledgeBaseMs);
      if (token.cancelled || !this.deps.live()) {
        // The caller spoke while it ran: the late result is dropped (the call keeps what happened).
        transcript.tool(c.name, c.check.args!, { dropped: 'the caller interrupted', result: run.result }, at);
        output(c.callId, { error: 'cancelled: the caller interrupted' });
        return false;
      }
      transcript.tool(c.name, c.check.args!, run.result, at);
      output(c.callId, run.result);
      return true;
    });
    const answered = (await Promise.all(runs)).filter(Boolean).length;
    return { answered, knowledgeBaseMs, ...(ending ? { end: { callId: ending.callId, name: ending.name, args: ending.check.args! } } : {}) };
  }
}
