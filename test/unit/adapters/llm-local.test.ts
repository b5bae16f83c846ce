import {
  GOODBYE,
  MAX_ANSWER_CHARS,
  NO_ANSWER,
  answerFromPassages,
  keyValueArguments,
  localModel,
  localStep,
  sentences,
} from '../../../shared/adapters/llm/local';
import type { LlmMessage, LlmPassage, LlmRequest, LlmTool } from '../../../shared/adapters/llm/port';

const tool = (name: string): LlmTool => ({ name, description: `${name} tool`, parameters: { type: 'object', properties: {} } });
const passage = (text: string, score = 1, doc_id = 'doc-1'): LlmPassage => ({ doc_id, url: null, text, score });

let n = 0;
const ids = () => `call_${++n}`;
beforeEach(() => {
  n = 0;
});

function step(messages: LlmMessage[] | string, over: Partial<LlmRequest> = {}) {
  const list: LlmMessage[] = typeof messages === 'string' ? [{ role: 'user', content: messages }] : messages;
  return localStep({ model: '', temperature: 0.7, system: 'You are helpful.', passages: [], messages: list, tools: [], ...over }, ids);
}

const HOURS =
  'Acme Dental is a family practice in Springfield. Our opening hours are Monday to Friday, 8 am to 6 pm. ' +
  'On Saturdays we open from 9 am to noon. We are closed on Sundays and public holidays! Parking is free behind the building.';

describe('the local model: answers from the knowledge base', () => {
  it('answers with the best passage\'s sentences that share the most words with the question, in the passage\'s order', () => {
    const out = step('What are your opening hours on Saturdays?', { passages: [passage('Unrelated text about billing.', 0.2, 'other'), passage(HOURS, 3)] });
    expect(out).toEqual({
      text: 'Our opening hours are Monday to Friday, 8 am to 6 pm. On Saturdays we open from 9 am to noon.',
      toolCalls: [],
      usage: { promptTokens: 0, completionTokens: 0 },
    });
  });

  it('keeps at most two sentences, and the single best one when only one shares a word', () => {
    expect(answerFromPassages([passage(HOURS)], 'Where do I park?')).toBe('Parking is free behind the building.');
    expect(sentences(answerFromPassages([passage(HOURS)], 'hours Saturdays closed Sundays parking free practice'))).toHaveLength(2);
  });

  it('picks the highest-scored passage, not the first one', () => {
    expect(answerFromPassages([passage('Refunds take 5 days.', 0.5), passage('Refunds take 10 days to arrive.', 2)], 'refunds')).toBe('Refunds take 10 days to arrive.');
  });

  it('answers with the first sentence of the best passage when no sentence shares a word', () => {
    expect(answerFromPassages([passage(HOURS)], 'xyzzy')).toBe('Acme Dental is a family practice in Springfield.');
  });

  it('says it has no answer when there is no passage', () => {
    expect(step('What are your opening hours?').text).toBe(NO_ANSWER);
    expect(NO_ANSWER).toBe("I'm sorry, I don't have information about that.");
  });

  it('clips a very long sentence', () => {
    const text = answerFromPassages([passage(`${'word '.repeat(400)}.`)], 'word');
    expect(text.length).toBe(MAX_ANSWER_CHARS);
    expect(text.endsWith('…')).toBe(true);
  });

  it('is deterministic: the same request gives the same reply', async () => {
    const model = localModel();
    const request: LlmRequest = { model: '', temperature: 1, system: '', passages: [passage(HOURS)], messages: [{ role: 'user', content: 'hours' }], tools: [] };
    expect(await model.complete(request)).toEqual(await model.complete(request));
    expect(model.name).toBe('local');
  });
});

describe('the local model: tools', () => {
  it('calls end_call when the user says goodbye and end_call is offered, then says goodbye after its result', () => {
    const tools = [tool('end_call'), tool('lookup')];
    for (const said of ['Thanks, bye!', 'Goodbye', 'ok good bye then', 'BYE']) {
      const out = step(said, { tools });
      expect([said, out.text, out.toolCalls.map((c) => [c.name, c.arguments])]).toEqual([said, '', [['end_call', '{}']]]);
    }
    const after = step(
      [
        { role: 'user', content: 'bye' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'end_call', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'call_1', name: 'end_call', content: '{"ok":true}' },
      ],
      { tools: [] },
    );
    expect(after).toEqual({ text: GOODBYE, toolCalls: [], usage: { promptTokens: 0, completionTokens: 0 } });
  });

  it('says goodbye in text when end_call is not offered, and does not take "bye" inside a word for a goodbye', () => {
    expect(step('bye now', { tools: [tool('lookup')] })).toMatchObject({ text: GOODBYE, toolCalls: [] });
    expect(step('I want to buy a byeducation plan', { tools: [tool('end_call')] }).toolCalls).toEqual([]);
  });

  it('calls a tool whose function name the message contains, with its key=value pairs typed', () => {
    const out = step('please get_weather city=Paris days=3 metric=true ratio=0.5 zip=02134 note="two words" who=\'Ada L\'', {
      tools: [tool('get_weather'), tool('get'), tool('end_call')],
    });
    expect(out.text).toBe('');
    expect(out.toolCalls).toEqual([{ id: 'call_1', name: 'get_weather', arguments: expect.any(String) }]);
    expect(JSON.parse(out.toolCalls[0].arguments)).toEqual({ city: 'Paris', days: 3, metric: true, ratio: 0.5, zip: '02134', note: 'two words', who: 'Ada L' });
  });

  it('matches the function name as a whole word in any case, and calls every tool the message names', () => {
    expect(step('use lookup_order_v2 id=1', { tools: [tool('lookup_order')] }).toolCalls).toEqual([]);
    expect(step('CHECK_AVAILABILITY start_date=2026-12-01', { tools: [tool('check_availability')] }).toolCalls[0]).toMatchObject({
      name: 'check_availability',
      arguments: '{"start_date":"2026-12-01"}',
    });
    n = 0;
    const both = step('lookup and then notify, id=7', { tools: [tool('lookup'), tool('notify'), tool('other')] });
    expect(both.toolCalls.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ['call_1', 'lookup', '{"id":7}'],
      ['call_2', 'notify', '{"id":7}'],
    ]);
  });

  it('does not call a tool that is not offered (the last round answers in text)', () => {
    expect(step('get_weather city=Paris', { tools: [], passages: [] })).toMatchObject({ text: NO_ANSWER, toolCalls: [] });
  });

  it('answers in text after tool results, summarising each result of the step, and never calls a tool again', () => {
    const messages: LlmMessage[] = [
      { role: 'user', content: 'get_weather city=Paris and lookup id=1' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'b', name: 'lookup', arguments: '{"id":1}' },
          { id: 'c', name: 'notes', arguments: '{}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', name: 'get_weather', content: '{"temp_c": 21, "sky": "clear"}' },
      { role: 'tool', toolCallId: 'b', name: 'lookup', content: '{"error":"the tool did not answer within 10000 ms"}' },
      { role: 'tool', toolCallId: 'c', name: 'notes', content: 'plain   text\nanswer' },
    ];
    const out = step(messages, { tools: [tool('get_weather'), tool('lookup'), tool('notes')] });
    expect(out.toolCalls).toEqual([]);
    expect(out.text).toBe(
      'The get_weather tool answered: {"temp_c":21,"sky":"clear"} The lookup tool failed: the tool did not answer within 10000 ms. The notes tool answered: plain text answer',
    );
  });

  it('summarises only the latest step\'s results', () => {
    const out = step([
      { role: 'user', content: 'lookup id=1' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 'lookup', arguments: '{"id":1}' }] },
      { role: 'tool', toolCallId: 'a', name: 'lookup', content: '"first"' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'b', name: 'lookup', arguments: '{"id":2}' }] },
      { role: 'tool', toolCallId: 'b', name: 'lookup', content: '"second"' },
    ]);
    expect(out.text).toBe('The lookup tool answered: second');
  });

  it('clips a long tool result', () => {
    const out = step([
      { role: 'user', content: 'dump' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 'dump', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'a', name: 'dump', content: JSON.stringify({ data: 'x'.repeat(2000) }) },
    ]);
    expect(out.text.length).toBeLessThan(600);
    expect(out.text.endsWith('…')).toBe(true);
  });

  it('gives each tool call its own id by default', async () => {
    const model = localModel();
    const request: LlmRequest = { model: '', temperature: 0, system: '', passages: [], messages: [{ role: 'user', content: 'lookup' }], tools: [tool('lookup')] };
    const [a, b] = [await model.complete(request), await model.complete(request)];
    expect(a.toolCalls[0].id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(a.toolCalls[0].id).not.toBe(b.toolCalls[0].id);
  });
});

describe('key=value arguments', () => {
  it('types bare numbers and booleans, keeps quoted values, leading zeros and phone numbers as text, and drops trailing punctuation', () => {
    expect(keyValueArguments('a=1, b=-2.5; c=TRUE d=false. e="1" f=007 g=+14155550100 h=x@y.com. i="say \\"hi\\""')).toEqual({
      a: 1, b: -2.5, c: true, d: false, e: '1', f: '007', g: '+14155550100', h: 'x@y.com', i: 'say "hi"',
    });
  });

  it('finds nothing in a message without pairs, and ignores a pair glued to a word', () => {
    expect(keyValueArguments('what is 2+2=4?')).toEqual({});
    expect(keyValueArguments('no pairs here')).toEqual({});
  });
});
