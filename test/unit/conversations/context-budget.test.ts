import type { LlmMessage } from '../../../shared/adapters/llm/port';
import { ANSWER_RESERVE_TOKENS, contextTokenLimit, DEFAULT_CONTEXT_TOKENS, fitHistory, fixedTokens, messageTokens, turnsOf } from '../../../shared/domain/conversations/context-budget';

const user = (content: string): LlmMessage => ({ role: 'user', content });
const agent = (content: string): LlmMessage => ({ role: 'assistant', content });
const call = (id: string): LlmMessage => ({ role: 'assistant', content: '', toolCalls: [{ id, name: 'lookup', arguments: '{"q":"x"}' }] });
const result = (id: string, content = '{"ok":true}'): LlmMessage => ({ role: 'tool', toolCallId: id, name: 'lookup', content });
const base = { system: 'You are Ava.', passages: [], tools: [] };

describe('the context budget', () => {
  it('cuts a conversation into turns at each user message; what comes before the first is a turn too', () => {
    // Prepare
    const messages = [agent('Hi!'), user('a'), call('c1'), result('c1'), agent('done'), user('b'), agent('ok')];
    // Act
    const turns = turnsOf(messages);
    // Assess
    expect(turns.map((t) => t.length)).toEqual([1, 4, 2]);
  });

  it('keeps everything when it fits', () => {
    const messages = [agent('Hi!'), user('a'), agent('b'), user('c')];
    expect(fitHistory({ ...base, messages })).toEqual({ messages, dropped: 0 });
  });

  it('drops whole turns, oldest first, and never separates a tool call from its result', () => {
    // Prepare: ten turns of ~1,000 estimated tokens each, every one with a tool round in it.
    const long = 'x'.repeat(3_000);
    const messages: LlmMessage[] = [];
    for (let i = 0; i < 10; i++) messages.push(user(`${i} ${long}`), call(`c${i}`), result(`c${i}`, long.slice(0, 600)), agent(`answer ${i}`));
    const limit = 6_000;
    // Act
    const { messages: kept, dropped } = fitHistory({ ...base, messages }, limit);
    // Assess
    expect(dropped).toBeGreaterThan(0);
    expect(kept[0]).toEqual(messages[dropped * 4]); // starts at a user message
    expect(kept).toEqual(messages.slice(dropped * 4)); // the most recent turns, whole and in order
    expect(kept.reduce((n, m) => n + messageTokens(m), 0) + fixedTokens(base) + ANSWER_RESERVE_TOKENS).toBeLessThanOrEqual(limit);
    const calls = new Set(kept.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [])));
    const results = new Set(kept.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
    expect([...results].sort()).toEqual([...calls].sort());
  });

  it('counts the prompt, passages and tools against the budget', () => {
    const messages: LlmMessage[] = [];
    for (let i = 0; i < 6; i++) messages.push(user('y'.repeat(1_500)), agent('ok'));
    const bare = fitHistory({ ...base, messages }, 4_000);
    const heavy = fitHistory(
      { ...base, passages: [{ doc_id: 'd', url: null, text: 'p'.repeat(3_000), score: 1 }], tools: [{ name: 't', description: 'd'.repeat(600), parameters: { type: 'object' } }], messages },
      4_000,
    );
    expect(heavy.dropped).toBeGreaterThan(bare.dropped);
  });

  it('always sends the current turn, even alone over the budget', () => {
    const messages = [user('old'), agent('ok'), user('z'.repeat(40_000))];
    expect(fitHistory({ ...base, messages }, 2_000)).toEqual({ messages: [messages[2]], dropped: 1 });
  });

  it('reads LLM_CONTEXT_TOKENS, default 32,000, and refuses nonsense naming the setting', () => {
    const before = process.env.LLM_CONTEXT_TOKENS;
    try {
      delete process.env.LLM_CONTEXT_TOKENS;
      expect(contextTokenLimit()).toBe(DEFAULT_CONTEXT_TOKENS);
      process.env.LLM_CONTEXT_TOKENS = '128000';
      expect(contextTokenLimit()).toBe(128_000);
      process.env.LLM_CONTEXT_TOKENS = 'lots';
      expect(() => contextTokenLimit()).toThrow(/LLM_CONTEXT_TOKENS/);
    } finally {
      if (before === undefined) delete process.env.LLM_CONTEXT_TOKENS;
      else process.env.LLM_CONTEXT_TOKENS = before;
    }
  });
});
