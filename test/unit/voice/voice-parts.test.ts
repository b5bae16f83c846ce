import { CallEnding, nextSilence, SilenceWatch, type SilenceRules } from '../../../voice/call-ending';
import { FunctionCalls, ToolCalls } from '../../../voice/tool-calls';
import type { ToolsBridge } from '../../../voice/tools-bridge';
import { heardWords, TranscriptRecorder } from '../../../voice/transcript';
import { TurnTaking } from '../../../voice/turn-taking';
import type { ReplyTimer } from '../../../shared/domain/conversations/latency';

describe('heardWords', () => {
  it('keeps the share of the text whose audio played, by whole words (a word counts when half of it was said)', () => {
    const text = 'Let me tell you all about our plans. Goodbye.';
    expect(heardWords(text, 0.15)).toBe('Let me');
    expect(heardWords(text, 0.5)).toBe('Let me tell you all about');
    expect(heardWords(text, 1)).toBe(text);
    expect(heardWords(text, 0)).toBe('');
    expect(heardWords(text, Number.NaN)).toBe('');
    expect(heardWords('  Hello   there  ', 2)).toBe('Hello   there');
  });
});

describe('TranscriptRecorder', () => {
  it('cuts an agent turn to the words heard and marks it interrupted, whether its text came before or after the cut', () => {
    const t = new TranscriptRecorder(0);
    t.agentSaid('a1', 'One two three four', 1000);
    t.interrupted('a1', 0.5);
    t.interrupted('a2', 0.25);
    t.agentSaid('a2', 'Alpha beta gamma delta', 3000);
    t.agentSaid('a3', 'Complete answer.', 5000);
    expect(t.transcript()).toEqual([
      { role: 'agent', text: 'One two', time_sec: 1, interrupted: true },
      { role: 'agent', text: 'Alpha', time_sec: 3, interrupted: true },
      { role: 'agent', text: 'Complete answer.', time_sec: 5 },
    ]);
  });

  it('keeps no turn for an agent item cut before a word was heard', () => {
    const t = new TranscriptRecorder(0);
    t.agentSaid('a1', 'Hello there', 0);
    t.interrupted('a1', 0.05);
    expect(t.transcript()).toEqual([]);
  });
});

describe('FunctionCalls', () => {
  it('takes the name from the function-call item when response.function_call_arguments.done has none (as the Realtime reference sends it)', () => {
    const calls = new FunctionCalls();
    calls.item('r1', { id: 'fc_1', type: 'function_call', call_id: 'c1', name: 'end_call', arguments: '' });
    calls.argumentsDone('r1', { type: 'response.function_call_arguments.done', item_id: 'fc_1', call_id: 'c1', arguments: '{"reason":"done"}' });
    expect(calls.responseDone('r1', [])).toEqual([{ callId: 'c1', name: 'end_call', arguments: '{"reason":"done"}' }]);
    // Handed over once.
    expect(calls.responseDone('r1', [])).toEqual([]);
  });

  it('completes a call from response.done output when only the arguments event came', () => {
    const calls = new FunctionCalls();
    calls.argumentsDone('r2', { type: 'response.function_call_arguments.done', call_id: 'c2', arguments: '{}' });
    expect(calls.responseDone('r2', [{ type: 'message' }, { type: 'function_call', call_id: 'c2', name: 'check_availability', arguments: '{}' }])).toEqual([
      { callId: 'c2', name: 'check_availability', arguments: '{}' },
    ]);
  });
});

describe('ToolCalls', () => {
  const parameters = { type: 'object', properties: { reason: { type: 'string' } }, required: [] };
  function bridge(ran: string[]): ToolsBridge {
    return {
      definitions: [],
      endsCall: (name) => name === 'transfer_call',
      check: (name, text) => {
        const { checkToolArguments } = jest.requireActual('../../../shared/domain/conversations/tools/arguments');
        return name === 'transfer_call' || name === 'lookup' ? checkToolArguments(parameters, text) : { error: `there is no tool named ${name}` };
      },
      run: async (name, callId) => {
        ran.push(`${name}:${callId}`);
        return { result: { ok: true } };
      },
    };
  }

  it('never runs a call whose arguments are not valid: the model hears the error, and a cut-short transfer is no end', async () => {
    const ran: string[] = [];
    const outputs: [string, unknown][] = [];
    const tc = new ToolCalls({ tools: bridge(ran), transcript: new TranscriptRecorder(0), output: (id, r) => outputs.push([id, r]), live: () => true });
    const { answered, end } = await tc.run([
      { callId: 'c1', name: 'transfer_call', arguments: '{"reason":"asked for a per' },
      { callId: 'c2', name: 'lookup', arguments: '{"reason":42}' },
      { callId: 'c3', name: 'lookup', arguments: '{"reason":"x"}' },
      { callId: 'c4', name: '', arguments: '{}' },
    ]);
    expect(ran).toEqual(['lookup:c3']);
    expect(end).toBeUndefined();
    expect(answered).toBe(4);
    expect(outputs).toEqual([
      ['c1', { error: 'invalid arguments: the arguments are not valid JSON' }],
      ['c2', { error: 'invalid arguments: "reason" must be a string' }],
      ['c4', { error: 'there is no tool named ' }],
      ['c3', { ok: true }],
    ]);
  });

  it('returns a valid call-ending built-in to run later, and answers it as pending', async () => {
    const ran: string[] = [];
    const outputs: [string, unknown][] = [];
    const tc = new ToolCalls({ tools: bridge(ran), transcript: new TranscriptRecorder(0), output: (id, r) => outputs.push([id, r]), live: () => true });
    const { answered, end } = await tc.run([{ callId: 'c1', name: 'transfer_call', arguments: '{"reason":"asked"}' }]);
    expect(ran).toEqual([]);
    expect(answered).toBe(0);
    expect(end).toEqual({ callId: 'c1', name: 'transfer_call', args: { reason: 'asked' } });
    expect(outputs).toEqual([['c1', { pending: expect.any(String) }]]);
  });

  it('reports the knowledge base\'s search time apart from the tools\' (the longest search: they run at once), and the turn counts it as knowledge_base', async () => {
    const searches = bridge([]);
    searches.run = async (name) => ({ result: { ok: true }, ...(name === 'lookup' ? { knowledgeBaseMs: 40 } : {}) });
    const tc = new ToolCalls({ tools: searches, transcript: new TranscriptRecorder(0), output: () => undefined, live: () => true });
    const { knowledgeBaseMs } = await tc.run([{ callId: 'c1', name: 'lookup', arguments: '{"reason":"x"}' }, { callId: 'c2', name: 'lookup', arguments: '{"reason":"y"}' }]);
    expect(knowledgeBaseMs).toBe(40);
    expect((await tc.run([{ callId: 'c3', name: 'nothing', arguments: '{}' }])).knowledgeBaseMs).toBe(0);

    const turns = new TurnTaking({ send: () => undefined, carrier: { sendMedia: () => undefined, sendMark: () => undefined, clear: () => undefined }, transcript: new TranscriptRecorder(0), live: () => true });
    turns.userTurnEnded(1_000);
    turns.toolsRan(100, 40);
    turns.toolsRan(30, 90); // never more than the round's own time
    const timer = (turns as unknown as { timer: ReplyTimer }).timer;
    const figures = timer.figures(2_000);
    expect([figures.tools, figures.knowledge_base]).toEqual([60, 70]);
  });
});

describe('silence', () => {
  const rules = (r: Partial<SilenceRules>): SilenceRules => ({ triggerMs: 10_000, maxReminders: 1, endAfterSilence: false, endSilenceMs: 8_000, ...r });

  it('plans reminders, then the end after silence; with reminders off the end still comes', () => {
    expect(nextSilence(rules({}), 0)).toEqual({ afterMs: 10_000, then: 'remind' });
    expect(nextSilence(rules({}), 1)).toBeNull();
    expect(nextSilence(rules({ endAfterSilence: true }), 1)).toEqual({ afterMs: 10_000, then: 'end' });
    expect(nextSilence(rules({ maxReminders: 0, endAfterSilence: true }), 0)).toEqual({ afterMs: 10_000, then: 'end' });
    expect(nextSilence(rules({ triggerMs: 0, maxReminders: 3, endAfterSilence: true }), 0)).toEqual({ afterMs: 8_000, then: 'end' });
    expect(nextSilence(rules({ triggerMs: 0, maxReminders: 3 }), 0)).toBeNull();
  });

  describe('SilenceWatch', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('reminds after each silence until the count is spent, then ends; the caller speaking starts the count again', () => {
      const events: string[] = [];
      const w = new SilenceWatch(rules({ triggerMs: 1000, maxReminders: 2, endAfterSilence: true }), { remind: () => events.push('remind'), end: () => events.push('end') });
      w.start();
      jest.advanceTimersByTime(999);
      expect(events).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(events).toEqual(['remind']);
      w.start();
      jest.advanceTimersByTime(1000);
      w.callerSpoke();
      w.start();
      jest.advanceTimersByTime(1000);
      w.start();
      jest.advanceTimersByTime(1000);
      w.start();
      jest.advanceTimersByTime(1000);
      expect(events).toEqual(['remind', 'remind', 'remind', 'remind', 'end']);
    });

    it('with reminder_trigger_ms 0 and end_call_after_silence, ends after the configured silence', () => {
      const events: string[] = [];
      const w = new SilenceWatch(rules({ triggerMs: 0, endAfterSilence: true, endSilenceMs: 5000 }), { remind: () => events.push('remind'), end: () => events.push('end') });
      w.start();
      jest.advanceTimersByTime(4999);
      w.stop(); // the agent spoke: the silence starts again when it has played
      w.start();
      jest.advanceTimersByTime(4999);
      expect(events).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(events).toEqual(['end']);
    });
  });

  describe('CallEnding', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('calls off an end that is not firm when the caller speaks, keeps a firm one, and makes a late end due at its deadline', () => {
      let due = 0;
      const e = new CallEnding(() => due++);
      e.request({ kind: 'hangup' }, 20_000);
      expect(e.callOff()).toBe(true);
      jest.advanceTimersByTime(20_000);
      expect(due).toBe(0);
      e.request({ kind: 'hangup', firm: true }, 20_000);
      expect(e.callOff()).toBe(false);
      jest.advanceTimersByTime(20_000);
      expect(due).toBe(1);
      expect(e.take()).toEqual({ kind: 'hangup', firm: true });
      expect(e.pending).toBeNull();
    });
  });
});
