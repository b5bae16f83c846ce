import Sentiment from 'sentiment';
import type { AnalysisInput, AnalysisPort, CallAnalysis, TranscriptTurn } from './port';

/**
 * The local analyzer: no model and no account, deterministic, so it is the default and what
 * tests run against. Every rule is documented in docs/api.md ("Post-call analysis"):
 *
 * - sentiment: the AFINN-165 lexicon (the `sentiment` package, with its negation handling) over
 *   everything the person (`user`) said; the comparative score (lexicon points per word) at or
 *   above +0.05 is `positive`, at or below -0.05 `negative`, else `neutral` (no words: `neutral`);
 * - successful: the call ended `completed`, lasted at least MIN_SUCCESS_SECONDS, the person said
 *   something, and the sentiment is not `negative`;
 * - summary: extractive: how the call ended, the agent's opening turn, the person's key turn
 *   (the one the lexicon scores strongest, the first on a tie) and the last turn, each quoted and
 *   clipped, at most SUMMARY_MAX characters;
 * - custom: counts (turns, words per role) and the raw sentiment scores.
 * The agent's `analysis_summary_prompt` and model need a language model: the local analyzer
 * cannot follow them and says so in `custom.summary_prompt_ignored` (true when a prompt was set).
 */
export const SENTIMENT_THRESHOLD = 0.05;
export const MIN_SUCCESS_SECONDS = 2;
export const SUMMARY_MAX = 600;
const QUOTE_MAX = 160;

const lexicon = new Sentiment();

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

const quote = (turn: TranscriptTurn) => `"${clip(turn.text, QUOTE_MAX)}"`;

function outcome(input: AnalysisInput): string {
  const reason = input.disconnectionReason.replace(/_/g, ' ');
  return input.durationSec > 0 ? `The call ended ${reason} after ${Math.round(input.durationSec)} s.` : `The call ended ${reason} without a conversation.`;
}

function summarize(input: AnalysisInput, keyUserTurn: TranscriptTurn | undefined): string {
  const turns = input.transcript.filter((t) => t.text.trim());
  const parts = [outcome(input)];
  const opening = turns.find((t) => t.role === 'agent');
  if (opening) parts.push(`The agent opened with ${quote(opening)}.`);
  if (keyUserTurn) parts.push(`The person said ${quote(keyUserTurn)}.`);
  const last = turns.at(-1);
  if (last && last !== opening && last !== keyUserTurn) parts.push(`The last word was the ${last.role === 'agent' ? 'agent' : 'person'}'s: ${quote(last)}.`);
  return clip(parts.join(' '), SUMMARY_MAX);
}

/** The analyzer's result for one call; pure, so unit tests call it directly. */
export function analyzeLocally(input: AnalysisInput): CallAnalysis {
  const userTurns = input.transcript.filter((t) => t.role === 'user' && t.text.trim());
  const agentTurns = input.transcript.filter((t) => t.role === 'agent' && t.text.trim());
  const scored = userTurns.map((turn) => ({ turn, score: lexicon.analyze(turn.text).score }));
  const overall = lexicon.analyze(userTurns.map((t) => t.text).join('\n'));
  const sentiment = overall.comparative >= SENTIMENT_THRESHOLD ? 'positive' : overall.comparative <= -SENTIMENT_THRESHOLD ? 'negative' : 'neutral';
  // The strongest-scored turn; with no lexicon words at all, the person's first turn.
  const key = scored.reduce<(typeof scored)[number] | undefined>((best, s) => (!best || Math.abs(s.score) > Math.abs(best.score) ? s : best), undefined);
  const successful =
    input.disconnectionReason === 'completed' && input.durationSec >= MIN_SUCCESS_SECONDS && userTurns.length > 0 && sentiment !== 'negative';
  return {
    summary: summarize(input, key?.turn),
    sentiment,
    successful,
    custom: {
      analyzer: 'local',
      turns: userTurns.length + agentTurns.length,
      agent_words: agentTurns.reduce((n, t) => n + words(t.text), 0),
      user_words: userTurns.reduce((n, t) => n + words(t.text), 0),
      sentiment_score: overall.score,
      sentiment_comparative: Number(overall.comparative.toFixed(4)),
      summary_prompt_ignored: !!input.summaryPrompt?.trim(),
    },
  };
}

export function localAnalyzer(): AnalysisPort {
  return { name: 'local', analyze: async (input) => analyzeLocally(input) };
}
