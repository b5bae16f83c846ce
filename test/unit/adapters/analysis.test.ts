import { analyzer, resetAnalyzer } from '../../../shared/adapters/analysis';
import { MIN_SUCCESS_SECONDS, SUMMARY_MAX, analyzeLocally } from '../../../shared/adapters/analysis/local';
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

  it('summarizes the outcome, the opening, the person\'s key turn and the last word', () => {
    const { summary } = analyzeLocally(call(booking));
    expect(summary).toContain('The call ended completed after 30 s.');
    expect(summary).toContain('The agent opened with "Hi Ada, this is Sam from Acme Dental.');
    // The strongest-scored user turn is the key one.
    expect(summary).toContain('The person said "Yes, that works. Tuesday at three would be great, thank you!"');
    expect(summary).toContain('"Perfect, bye."');
  });

  it('summarizes an unanswered call without inventing a conversation', () => {
    const result = analyzeLocally(call([], { disconnectionReason: 'no_answer', durationSec: 0 }));
    expect(result.summary).toBe('The call ended no answer without a conversation.');
    expect(result).toMatchObject({ sentiment: 'neutral', successful: false });
  });

  it('keeps the summary bounded however long the call', () => {
    const long = Array.from({ length: 200 }, (_, i) => (i % 2 ? user('word '.repeat(300), i) : agent('talk '.repeat(300), i)));
    const { summary } = analyzeLocally(call(long));
    expect(summary.length).toBeLessThanOrEqual(SUMMARY_MAX);
    // Each quoted turn is clipped too.
    expect(summary).toContain('talk talk…"');
  });

  it('counts turns and words in custom, and says when it could not follow a summary prompt', () => {
    expect(analyzeLocally(call(booking)).custom).toMatchObject({ analyzer: 'local', turns: 4, user_words: 13, summary_prompt_ignored: false });
    expect(analyzeLocally(call(booking, { summaryPrompt: 'List the objections' })).custom.summary_prompt_ignored).toBe(true);
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
