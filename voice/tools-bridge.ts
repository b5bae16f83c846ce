import { checkToolArguments } from '../shared/domain/conversations/tools/arguments';
import { groundingPassages } from '../shared/domain/conversations/grounding';
import { agentTools, HANDOFF_TOOL } from '../shared/domain/conversations/handoff';
import type { RunnableTool } from '../shared/domain/conversations/tools/catalog';
import { executeTool, type ToolEffect } from '../shared/domain/conversations/tools/executor';
import { capResult } from '../shared/domain/conversations/tools/results';
import { logger } from '../shared/logger';
import type { CallContext } from './call-context';

/** The knowledge-base search offered when the agent has a knowledge base (a call cannot ground each turn as a chat does). */
export const KB_TOOL = 'search_knowledge_base';

/** A tool as the Realtime API declares it. */
export interface RealtimeTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ToolRun {
  /** What the model is given (and the call keeps). */
  result: unknown;
  effect?: ToolEffect;
  /** The knowledge base's search: its time (the reply's `knowledge_base`, not `tools`). */
  knowledgeBaseMs?: number;
}

/** The call's tools: the catalog's (webhook tools and built-ins for calls) and the knowledge-base search; each run through the engine's executor. */
export interface ToolsBridge {
  definitions: RealtimeTool[];
  /** Built-ins whose effect ends the call (`end_call`, `transfer_call`): run only once the agent's words before them have played. */
  endsCall(name: string): boolean;
  /**
   * The model's arguments text checked against the tool's parameters (the engine's one check,
   * conversations/tools/arguments.ts): an unknown tool or invalid arguments is an error the model
   * hears, never a run with `{}`.
   */
  check(name: string, argumentsText: string | undefined): { args: Record<string, unknown>; error?: undefined } | { args?: undefined; error: string };
  run(name: string, callId: string, args: Record<string, unknown>): Promise<ToolRun>;
}

export interface BridgeOptions {
  /** The agent's tools when already read (a hand-off built them); default: the call's agent's (handoff.ts `agentTools`). */
  catalog?: RunnableTool[];
  /** Runs `handoff_to_agent` (the session switches the call's agent: voice/handoff.ts). */
  handoff?(args: Record<string, unknown>): Promise<ToolRun>;
}

export async function toolsBridge(ctx: CallContext, options: BridgeOptions = {}): Promise<ToolsBridge> {
  const orgId = ctx.conversation.organization_id;
  const catalog: RunnableTool[] = options.catalog ?? (await agentTools(orgId, ctx.agent, 'call'));
  const byName = new Map(catalog.map((t) => [t.name, t]));
  const definitions: RealtimeTool[] = catalog.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.parameters as Record<string, unknown> }));
  const kb = ctx.knowledgeBaseId;
  if (kb && !byName.has(KB_TOOL)) {
    definitions.push({
      type: 'function',
      name: KB_TOOL,
      description: 'Search the knowledge base for facts to answer the caller. Use it before answering questions about the business, its products or policies.',
      parameters: { type: 'object', properties: { query: { type: 'string', description: 'What to look up, in a few words' } }, required: ['query'] },
    });
  }
  const parametersOf = new Map(definitions.map((d) => [d.name, d.parameters]));
  return {
    definitions,
    endsCall: (name) => {
      const builtin = byName.get(name)?.builtin;
      return builtin === 'end_call' || builtin === 'transfer_call';
    },
    check(name, argumentsText) {
      if (!parametersOf.has(name)) return { error: `there is no tool named ${name || '(no name)'}` };
      return checkToolArguments(parametersOf.get(name), argumentsText);
    },
    async run(name, callId, args) {
      try {
        if (name === KB_TOOL && kb) {
          const query = typeof args.query === 'string' ? args.query : '';
          const searchedMs = Date.now();
          const passages = await groundingPassages(orgId, kb, query);
          return { result: { passages: passages.map((p) => ({ text: p.text, source: p.url ?? p.doc_id })) }, knowledgeBaseMs: Date.now() - searchedMs };
        }
        const tool = byName.get(name);
        if (!tool) return { result: { error: `unknown tool ${name}` } };
        if (name === HANDOFF_TOOL) return options.handoff ? await options.handoff(args) : { result: { error: 'handoff_to_agent is not available on this call' } };
        // A web call has no carrier to hand the caller to: the built-in answers so, and the call goes on.
        if (tool.builtin === 'transfer_call' && ctx.call.channel === 'web') {
          return { result: { error: 'transfer_call is not available on a web call (the caller is in a browser, not on a phone line): tell the caller you cannot transfer them and help them yourself' } };
        }
        const outcome = await executeTool(tool, { id: callId, name, arguments: args }, ctx.conversation);
        return { result: capResult(outcome.result), effect: outcome.effect };
      } catch (err) {
        // A tool's own failure is a result; this is ours (a store error): the model still hears something.
        logger.warn('A tool failed on a call', { call_id: ctx.call.id, tool: name, error: err as Error });
        return { result: { error: `${name} failed; try again later` } };
      }
    },
  };
}
