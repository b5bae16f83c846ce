import { analyzer, resetAnalyzer } from '../../../shared/adapters/analysis';
import { MIN_SUCCESS_SECONDS, SUMMARY_MAX, analyzeLocally, summaryLimits } from '../../../shared/adapters/analysis/local';
import type { AnalysisInput, TranscriptTurn } from '../../../shared/adapters/analysis/port';
import { resetConfig } from '../../../shared/config';

const agent = (text: string, time_sec = 0): TranscriptTurn => ({ role: 'agent', text, time_sec });
const user = (text: string, time_sec = 1): TranscriptTurn => ({ role: 'user', text, time_sec });

/** A completed call of 30 s with these turns. */
const call = (transcript: TranscriptTurn[], over: Partial<AnalysisInput> = {}): AnalysisInput => ({
  transcript, model: null, summaryPrompt: null, disconnectionReason: 'completed', durationSec: 30, ...over,
});

const booking = [
  agent('Hi Ada, this is Sam from Acme Dental. Is now a good time to book your check-up?'),
  user('Yes, that works. Tuesday at three would be great, thank you!', 4),
  agent('Done: Tuesday at 3 pm. See you then.', 8),
  user('Perfect, bye.', 11),
];
const refusal = [
  agent('Hi, this is Sam from Acme. Do you have a minute?'),
  user('No. I am not interested, this is terrible. Stop calling me.', 3),
];

describe('the local analyzer', () => {
  it('reads a friendly booking as positive and successful', () => {
    const result = analyzeLocally(call(booking));
    expect(result.sentiment).toBe('positive');
    expect(result.successful).toBe(true);
  });

  it('reads a hostile refusal as negative and not successful', () => {
    const result = analyzeLocally(call(refusal));
    expect(result.sentiment).toBe('negative');
    expect(result.successful).toBe(false);
  });

  it('is neutral when the person says nothing the lexicon scores', () => {
    expect(analyzeLocally(call([agent('Hello, is this Ada?'), user('Speaking. Which company?')])).sentiment).toBe('neutral');
  });

  it('judges only the person, never the agent', () => {
    const cheerfulAgent = [agent('Wonderful! Amazing! Great! Fantastic news, we love you!'), user('Which company?')];
    expect(analyzeLocally(call(cheerfulAgent)).sentiment).toBe('neutral');
  });

  it('honours negation ("not happy" is negative)', () => {
    expect(analyzeLocally(call([agent('How was the visit?'), user('I am not happy with it.')])).sentiment).toBe('negative');
  });

  it.each([
    ['ended by voicemail', { disconnectionReason: 'voicemail' }],
    ['too short', { durationSec: MIN_SUCCESS_SECONDS - 1 }],
  ])('is not successful when %s', (_what, over) => {
    expect(analyzeLocally(call(booking, over)).successful).toBe(false);
  });

  it('is not successful when only the agent spoke', () => {
    expect(analyzeLocally(call([agent('Hello? Hello?')])).successful).toBe(false);
  });

  it('summarizes the exchange that mattered and how the call ended: the agent\'s question, the person\'s key answer, the agent\'s reply', () => {
    const { summary } = analyzeLocally(call(booking));
    expect(summary).toBe(
      'When the agent asked "Is now a good time to book your check-up?", the person answered "Yes, that works. Tuesday at three would be great, thank you!" ' +
        'and the agent replied "Done: Tuesday at 3 pm. See you then." The call ended after 30 s (completed).',
    );
  });

  it('summarizes a chat by what the person asked and what the agent answered', () => {
    const chat = [
      agent('Hi Ada, I am Ava. How can I help?'),
      user('Hello. When does the store open on weekdays?', 3),
      agent('We open at 9 am on weekdays.', 4),
      user('And on Sundays?', 9),
      agent('We are closed on Sundays.', 10),
      user('Thanks, goodbye!', 14),
      agent('Thank you for talking with me. Goodbye!', 15),
    ];
    const result = analyzeLocally(call(chat, { disconnectionReason: 'agent_ended', durationSec: 15.4 }));
    expect(result.summary).toBe('The person asked "When does the store open on weekdays?" and the agent answered "We open at 9 am on weekdays." The chat ended after 15 s (agent ended).');
    // A chat the user or the agent ended, or that went idle, may be successful.
    expect(result.successful).toBe(true);
    expect(analyzeLocally(call(chat, { disconnectionReason: 'inactivity' })).successful).toBe(true);
    expect(analyzeLocally(call(chat, { disconnectionReason: 'max_turns' })).successful).toBe(false);
  });

  it('says when a question got no answer, and when only the agent spoke', () => {
    expect(analyzeLocally(call([user('Anyone there?')], { disconnectionReason: 'user_ended' })).summary).toBe(
      'The person asked "Anyone there?" and got no answer. The chat ended after 30 s (user ended).',
    );
    expect(analyzeLocally(call([agent('Hello? Hello?')], { disconnectionReason: 'voicemail', durationSec: 5 })).summary).toBe(
      'Only the agent spoke: "Hello? Hello?" The call ended after 5 s (voicemail).',
    );
  });

  it('summarizes an unanswered call without inventing a conversation', () => {
    const result = analyzeLocally(call([], { disconnectionReason: 'no_answer', durationSec: 0 }));
    expect(result.summary).toBe('The call ended without a conversation (no answer).');
    expect(result).toMatchObject({ sentiment: 'neutral', successful: false });
  });

  it('keeps the summary bounded however long the call', () => {
    const long = Array.from({ length: 200 }, (_, i) => (i % 2 ? user('word '.repeat(300), i) : agent('talk '.repeat(300), i)));
    const { summary } = analyzeLocally(call(long));
    expect(summary.length).toBeLessThanOrEqual(SUMMARY_MAX);
    // Each quoted turn is clipped too.
    expect(summary).toContain('word word…"');
  });

  it('counts turns and words in custom, and says when it could not follow a summary prompt', () => {
    expect(analyzeLocally(call(booking)).custom).toMatchObject({ analyzer: 'local', turns: 4, user_words: 13, summary_prompt_applied: [], summary_prompt_ignored: false });
    expect(analyzeLocally(call(booking, { summaryPrompt: 'List the objections' })).custom).toMatchObject({ summary_prompt_applied: [], summary_prompt_ignored: true });
    expect(analyzeLocally(call(booking, { summaryPrompt: 'Résume l\'appel en français.' })).custom.summary_prompt_ignored).toBe(true);
  });

  it('follows the length limits of a summary prompt, and only those', () => {
    const full = analyzeLocally(call(booking)).summary;
    const inTen = analyzeLocally(call(booking, { summaryPrompt: 'Summarize the call in 10 words, in French.' }));
    expect(inTen.summary).toBe(`${full.split(' ').slice(0, 10).join(' ')}…`);
    expect(inTen.custom).toMatchObject({ summary_prompt_applied: ['at most 10 words'], summary_prompt_ignored: false });

    const oneSentence = analyzeLocally(call(booking, { summaryPrompt: 'Summarize in one sentence and note any objection.' }));
    expect(oneSentence.summary).toBe(full.slice(0, full.indexOf(' The call ended')));
    expect(oneSentence.custom.summary_prompt_applied).toEqual(['at most 1 sentence']);

    expect(analyzeLocally(call(booking, { summaryPrompt: 'At most 80 characters.' })).summary).toHaveLength(80);
    // A limit larger than the summary changes nothing.
    expect(analyzeLocally(call(booking, { summaryPrompt: 'no more than 500 words' })).summary).toBe(full);
  });
});

describe('reading length limits in a summary prompt', () => {
  it.each([
    ['Summarize in 20 words.', { maxWords: 20 }],
    ['Write at most fifty words', { maxWords: 50 }],
    ['A 30-word summary, please', { maxWords: 30 }],
    ['25 words or less', { maxWords: 25 }],
    ['Use 50 to 80 words', { maxWords: 80 }],
    ['Summarize in 2-3 sentences', { maxSentences: 3 }],
    ['Summarize the call in a single sentence', { maxSentences: 1 }],
    ['One-sentence summary within 15 words', { maxSentences: 1, maxWords: 15 }],
    ['Keep it under 140 characters', { maxChars: 140 }],
    ['List the objections the person raised', {}],
    ['Use the words of the customer', {}],
  ])('%s', (prompt, expected) => {
    const { applied, ...limits } = summaryLimits(prompt);
    expect(Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined))).toEqual(expected);
    expect(applied).toHaveLength(Object.keys(expected).length);
  });
});

describe('choosing the analyzer', () => {
  const saved = { ...process.env };
  beforeEach(() => {
    process.env.TABLE_NAME = 't';
    process.env.BUCKET_NAME = 'b';
    resetConfig();
    resetAnalyzer();
  });
  afterEach(() => {
    process.env = { ...saved };
    resetConfig();
    resetAnalyzer();
  });

  it('is local by default', () => {
    delete process.env.ANALYSIS_PROVIDER;
    expect(analyzer().name).toBe('local');
  });

  it('is openai when configured', () => {
    process.env.ANALYSIS_PROVIDER = 'openai';
    expect(analyzer().name).toBe('openai');
  });

  it('fails fast on an unknown provider, naming the setting', () => {
    process.env.ANALYSIS_PROVIDER = 'gpt';
    expect(() => analyzer()).toThrow(/ANALYSIS_PROVIDER must be one of local, openai/);
  });
});
