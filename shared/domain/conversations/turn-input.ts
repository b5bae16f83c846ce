import { llm } from '../../adapters/llm';
import type { LlmPassage } from '../../adapters/llm/port';
import { effectiveModel } from '../agents/models';
import type { ConversationMessage, TurnInput } from './engine';
import type { RunnableTool } from './tools/catalog';
import type { ConversationRef } from './types';

/** What stays the same across the turns of one agent's conversation run in one go (an agent test, a simulated call). */
export interface AgentConversation {
  agent: { model?: string | null; temperature: number };
  /** The agent's filled prompt. */
  system: string;
  tools: RunnableTool[];
  conversation: ConversationRef;
  /** Everything said so far, oldest first; the caller appends each turn's messages. */
  history: ConversationMessage[];
  /** How long each turn may take, counted from when its input is made. */
  turnBudgetMs: number;
  /** Runs the platform's tool calls instead of the real executor (agent tests). */
  executeTool?: TurnInput['executeTool'];
}

/** The engine's input for the user's next words in `run`: the agent's effective model and temperature, its prompt and tools, the turn's passages and deadline. */
export function agentTurnInput(run: AgentConversation, userText: string, passages: LlmPassage[]): TurnInput {
  const { agent, turnBudgetMs, ...rest } = run;
  return { ...rest, llm: llm(), model: effectiveModel(agent), temperature: agent.temperature, userText, passages, deadlineMs: Date.now() + turnBudgetMs };
}
