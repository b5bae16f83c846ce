import Sentiment from 'sentiment';
import { dataTypes, nullData } from './fields';
import type { AnalysisInput, AnalysisPort, CallAnalysis, TranscriptTurn } from './port';

/**
 * The local analyzer: no model and no account, deterministic, so it is the default and what
 * tests run against. It analyses calls and chats alike. Every rule is documented in docs/api.md
 * ("Post-call analysis"):
 *
 * - sentiment: the AFINN-165 lexicon (the `sentiment` package, with its negation handling) over
 *   everything the person (`user`) said; the comparative score (lexicon points per word) at or
 *   above +0.05 is `positive`, at or below -0.05 `negative`, else `neutral` (no words: `neutral`);
 * - successful: the conversation ended normally (SUCCESSFUL_ENDINGS: a call `completed`; a chat
 *   ended by the user, the agent or inactivity), lasted at least MIN_SUCCESS_SECONDS, the person
 *   said something, and the sentiment is not `negative`;
 * - summary: one sentence on the conversation itself, one on how it ended. The first quotes the
 *   person's first question and the agent's answer to it; with no question from the person, the
 *   person's key turn (the one the lexicon scores strongest, the first on a tie) with the agent's
 *   question before it and the agent's reply after it; when the person never spoke, the agent's
 *   first words. Quotes are clipped to QUOTE_MAX characters, a question turn to its question;
 *   the whole is at most SUMMARY_MAX characters;
 * - custom: counts (turns, words per role), the raw sentiment scores, and what it made of the
 *   agent's `analysis_summary_prompt`.
 *
 * The summary prompt needs a language model; the local analyzer follows only the length limits
 * it can recognise in it (summaryLimits: "in 20 words", "at most 50 words", "a 30-word summary",
 * "in one sentence", "in 200 characters"…) and ignores everything else (what to look for, a
 * language, a tone, a format). `custom.summary_prompt_applied` lists the limits it applied and
 * `custom.summary_prompt_ignored` is true when a prompt was set and none could be applied.
 */
export const SENTIMENT_THRESHOLD = 0.05;
export const MIN_SUCCESS_SECONDS = 2;
export const SUMMARY_MAX = 600;
const QUOTE_MAX = 160;
/** Endings after which a conversation may count as successful: a call's, then a chat's. */
export const SUCCESSFUL_ENDINGS: ReadonlySet<string> = new Set(['completed', 'user_ended', 'agent_ended', 'inactivity']);
/** A chat's end reasons (`end_reason`), which tell a chat from a call. */
const CHAT_ENDINGS: ReadonlySet<string> = new Set(['user_ended', 'agent_ended', 'inactivity', 'max_turns']);

const lexicon = new Sentiment();

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

const isQuestion = (turn: TranscriptTurn) => turn.text.includes('?');

/** A turn as quoted: a question turn by its last question ("Hi, I am Sam. Is now a good time?" → "Is now a good time?"). */
function quote(turn: TranscriptTurn, questionOnly = false): string {
  const flat = turn.text.replace(/\s+/g, ' ').trim();
  if (questionOnly) {
    const questions = flat.match(/[^.!?]*\?/g)?.map((q) => q.trim()).filter(Boolean);
    if (questions?.length) return `"${clip(questions.at(-1)!, QUOTE_MAX)}"`;
  }
  return `"${clip(flat, QUOTE_MAX)}"`;
}

function ending(input: AnalysisInput, spoke: boolean): string {
  const noun = CHAT_ENDINGS.has(input.disconnectionReason) ? 'chat' : 'call';
  const reason = input.disconnectionReason.replace(/_/g, ' ');
  return spoke && input.durationSec > 0
    ? `The ${noun} ended after ${Math.round(input.durationSec)} s (${reason}).`
    : `The ${noun} ended without a conversation (${reason}).`;
}

/** Ends a sentence with a period unless it already ends in punctuation (inside a closing quote too). */
const period = (text: string) => (/[.!?…]"?$/.test(text) ? text : `${text}.`);

/** The sentence on what was said: the person's question and the agent's answer, or the key exchange. */
function exchange(turns: TranscriptTurn[], keyUserTurn: TranscriptTurn | undefined): string | undefined {
  const after = (turn: TranscriptTurn) => turns.slice(turns.indexOf(turn) + 1).find((t) => t.role === 'agent');
  const question = turns.find((t) => t.role === 'user' && isQuestion(t));
  if (question) {
    const answer = after(question);
    return period(answer ? `The person asked ${quote(question, true)} and the agent answered ${quote(answer)}` : `The person asked ${quote(question, true)} and got no answer`);
  }
  if (keyUserTurn) {
    const before = turns.slice(0, turns.indexOf(keyUserTurn)).reverse().find((t) => t.role === 'agent');
    const reply = after(keyUserTurn);
    const lead = before && isQuestion(before) ? `When the agent asked ${quote(before, true)}, the person answered` : 'The person said';
    return period(`${lead} ${quote(keyUserTurn)}${reply ? ` and the agent replied ${quote(reply)}` : ''}`);
  }
  const opening = turns.find((t) => t.role === 'agent');
  return opening ? period(`Only the agent spoke: ${quote(opening)}`) : undefined;
}

const NUMBER_WORDS: Record<string, number> = {
  one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12,
  fifteen: 15, twenty: 20, 'twenty-five': 25, thirty: 30, forty: 40, fifty: 50, sixty: 60, hundred: 100, 'a hundred': 100, 'one hundred': 100,
};
const NUMBER = '(\\d+|(?:a |one )?hundred|twenty-five|[a-z]+)';
const AT_MOST = '(?:in|within|under|below|at most|no more than|not more than|max(?:imum)?(?: of)?|up to|fewer than|less than|using)';

const count = (raw: string | undefined): number | undefined => {
  if (!raw) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : NUMBER_WORDS[raw.toLowerCase()];
  return n && n > 0 ? n : undefined;
};

/** The length limits the local analyzer can follow in a summary prompt; `applied` describes them. */
export function summaryLimits(prompt: string | null | undefined): { maxWords?: number; maxSentences?: number; maxChars?: number; applied: string[] } {
  const text = (prompt ?? '').toLowerCase();
  const limit = (unit: string) => {
    const found =
      // A range ("2-3 sentences", "50 to 80 words"): its upper bound.
      text.match(new RegExp(`\\b\\d+\\s*(?:-|–|to)\\s*${NUMBER}\\s+${unit}s?\\b`)) ??
      text.match(new RegExp(`\\b${AT_MOST}\\s+${NUMBER}\\s+${unit}s?\\b`)) ??
      text.match(new RegExp(`\\b${NUMBER}[\\s-]${unit}s?\\s+or\\s+(?:less|fewer)\\b`)) ??
      text.match(new RegExp(`\\b${NUMBER}-${unit}\\b`)) ??
      text.match(new RegExp(`\\b(?:a|one) single ${unit}\\b|\\bin (a|one) ${unit}\\b`));
    if (!found) return undefined;
    return found[1] === undefined || found[1] === 'a' ? 1 : count(found[1]);
  };
  const maxWords = limit('word');
  const maxSentences = limit('sentence');
  const maxChars = limit('character') ?? limit('char');
  const applied: string[] = [];
  if (maxSentences) applied.push(`at most ${maxSentences} sentence${maxSentences > 1 ? 's' : ''}`);
  if (maxWords) applied.push(`at most ${maxWords} word${maxWords > 1 ? 's' : ''}`);
  if (maxChars) applied.push(`at most ${maxChars} characters`);
  return { maxWords, maxSentences, maxChars, applied };
}

function limited(sentences: string[], limits: ReturnType<typeof summaryLimits>): string {
  let text = sentences.slice(0, limits.maxSentences ?? sentences.length).join(' ');
  if (limits.maxWords) {
    const all = text.split(/\s+/).filter(Boolean);
    if (all.length > limits.maxWords) text = `${all.slice(0, limits.maxWords).join(' ')}…`;
  }
  return clip(text, Math.min(SUMMARY_MAX, limits.maxChars ?? SUMMARY_MAX));
}

function summarize(input: AnalysisInput, keyUserTurn: TranscriptTurn | undefined, limits: ReturnType<typeof summaryLimits>): string {
  const turns = input.transcript.filter((t) => t.text.trim());
  const said = exchange(turns, keyUserTurn);
  return limited(said ? [said, ending(input, true)] : [ending(input, false)], limits);
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
  const limits = summaryLimits(input.summaryPrompt);
  const successful =
    SUCCESSFUL_ENDINGS.has(input.disconnectionReason) && input.durationSec >= MIN_SUCCESS_SECONDS && userTurns.length > 0 && sentiment !== 'negative';
  const fields = input.fields ?? [];
  const criteria = input.successCriteria?.trim();
  return {
    summary: summarize(input, key?.turn, limits),
    sentiment,
    successful,
    // Typed outcomes need a language model: every field is null, and custom says so.
    data: nullData(fields),
    data_types: dataTypes(fields),
    data_errors: [],
    success_rationale: successful
      ? `Judged by the local rule: the conversation ended normally (${input.disconnectionReason}), lasted at least ${MIN_SUCCESS_SECONDS} s, the person spoke and their sentiment was not negative.`
      : `Judged by the local rule: ${
          !SUCCESSFUL_ENDINGS.has(input.disconnectionReason) ? `it ended ${input.disconnectionReason}`
            : input.durationSec < MIN_SUCCESS_SECONDS ? `it lasted under ${MIN_SUCCESS_SECONDS} s`
              : userTurns.length === 0 ? 'the person said nothing' : 'the person\'s sentiment was negative'
        }.`,
    custom: {
      analyzer: 'local',
      turns: userTurns.length + agentTurns.length,
      agent_words: agentTurns.reduce((n, t) => n + words(t.text), 0),
      user_words: userTurns.reduce((n, t) => n + words(t.text), 0),
      sentiment_score: overall.score,
      sentiment_comparative: Number(overall.comparative.toFixed(4)),
      summary_prompt_applied: limits.applied,
      summary_prompt_ignored: !!input.summaryPrompt?.trim() && limits.applied.length === 0,
      ...(fields.length ? { data_not_evaluated: `The local analyzer has no language model: the ${fields.length} analysis field${fields.length > 1 ? 's are' : ' is'} left null (ANALYSIS_PROVIDER=openai fills them)` } : {}),
      ...(criteria ? { success_criteria_ignored: 'The local analyzer cannot read success_criteria: successful follows its own rule (ANALYSIS_PROVIDER=openai judges against them)' } : {}),
    },
  };
}

export function localAnalyzer(): AnalysisPort {
  return { name: 'local', analyze: async (input) => analyzeLocally(input) };
}
