import { checkedData, dataSchema, fieldValueProblem } from '../../../shared/adapters/analysis/fields';
import { analyzeLocally } from '../../../shared/adapters/analysis/local';
import { analysisSchema, CALL_ANALYSIS_SCHEMA, instructions, parseCompletion } from '../../../shared/adapters/analysis/openai';
import type { AnalysisField } from '../../../shared/adapters/analysis/port';

const fields: AnalysisField[] = [
  { name: 'outcome', type: 'enum', description: 'Decision', options: ['yes', 'no'] },
  { name: 'callback', type: 'boolean', description: 'Callback wanted' },
  { name: 'seats', type: 'integer', description: 'Seats' },
  { name: 'budget', type: 'number', description: 'Budget' },
  { name: 'note', type: 'string', description: 'Note' },
];

describe('typed outcome values', () => {
  it('keeps each value of its type and null', () => {
    expect(checkedData(fields, { outcome: 'yes', callback: false, seats: 3, budget: 12.5, note: 'hi' })).toEqual({ data: { outcome: 'yes', callback: false, seats: 3, budget: 12.5, note: 'hi' }, data_errors: [] });
    expect(checkedData(fields, { outcome: null, callback: null, seats: null, budget: null, note: null }).data_errors).toEqual([]);
  });

  it.each([
    ['outcome', 'maybe'], ['outcome', 1], ['callback', 'yes please'], ['callback', 0], ['seats', 2.5], ['seats', '3'], ['seats', 2 ** 60],
    ['budget', '12'], ['budget', Infinity], ['note', 5], ['note', { a: 1 }], ['note', ['a']], ['note', 'x'.repeat(2001)],
  ])('refuses %s = %j: null, with a data error that does not repeat it', (name, value) => {
    const { data, data_errors } = checkedData(fields, { outcome: 'yes', callback: true, seats: 1, budget: 1, note: '', [name]: value });
    expect(data[name]).toBeNull();
    expect(data_errors).toEqual([{ field: name, message: expect.stringMatching(/^must be/) }]);
    if (typeof value === 'string') expect(data_errors[0]!.message).not.toContain(value.slice(0, 20));
  });

  it('makes a missing member null with an error, and drops members that are no field', () => {
    const { data, data_errors } = checkedData(fields.slice(0, 2), { outcome: 'no', extra: 'x' });
    expect(data).toEqual({ outcome: 'no', callback: null });
    expect(data_errors).toEqual([{ field: 'callback', message: 'missing from the answer' }]);
    expect(fieldValueProblem(fields[0]!, null)).toBeUndefined();
  });
});

describe('the schema and instructions the openai analyzer sends', () => {
  it('adds a closed data object with every field required and nullable; without fields the base schema', () => {
    expect(analysisSchema([])).toBe(CALL_ANALYSIS_SCHEMA);
    const schema = analysisSchema(fields) as any;
    expect(schema.required).toContain('data');
    expect(schema.properties.data).toEqual(dataSchema(fields));
    expect(schema.properties.data.required).toEqual(fields.map((f) => f.name));
    expect(schema.properties.data.properties.outcome.anyOf).toEqual([{ type: 'string', enum: ['yes', 'no'] }, { type: 'null' }]);
  });

  it('states the success criteria and the fields; nothing added without them', () => {
    const base = { transcript: [], model: null, summaryPrompt: 'Summarize.', disconnectionReason: 'completed', durationSec: 1 };
    expect(instructions(base)).toBe('Summarize.');
    const text = instructions({ ...base, fields, successCriteria: 'A sale.' });
    expect(text).toContain('A sale.');
    expect(text).toContain('- outcome (one of yes, no): Decision');
  });

  it('tells who handled a conversation handed between agents, in order; nothing for one agent', () => {
    const base = { transcript: [], model: null, summaryPrompt: 'Summarize.', disconnectionReason: 'completed', durationSec: 1 };
    const first = { agent_id: 'desk', agent_version: null, started_at: '2026-01-01T10:00:00Z', reason: null };
    expect(instructions({ ...base, segments: [first] })).toBe('Summarize.');
    const text = instructions({ ...base, segments: [first, { agent_id: 'billing', agent_version: 2, started_at: '2026-01-01T10:01:00Z', reason: 'invoice' }] });
    expect(text).toContain('- agent desk (draft) from 2026-01-01T10:00:00Z\n- agent billing v2 from 2026-01-01T10:01:00Z: invoice');
  });

  it('parses data from a completion, checking each value', () => {
    const content = JSON.stringify({ summary: 's', sentiment: 'neutral', successful: true, success_rationale: 'r', custom: [], data: { outcome: 'no', callback: 'no' } });
    const completion = JSON.stringify({ choices: [{ message: { content }, finish_reason: 'stop' }] });
    const result = parseCompletion(completion, fields.slice(0, 2));
    expect(result.data).toEqual({ outcome: 'no', callback: null });
    expect(result.data_types).toEqual({ outcome: 'enum', callback: 'boolean' });
    expect(result.data_errors.map((e) => e.field)).toEqual(['callback']);
    expect(result.success_rationale).toBe('r');
  });
});

describe('the local analyzer', () => {
  it('leaves every field null and says so, and says it cannot read success criteria', () => {
    const result = analyzeLocally({ transcript: [{ role: 'user', text: 'Great, thanks!', time_sec: 1 }], model: null, summaryPrompt: null, disconnectionReason: 'completed', durationSec: 30, fields, successCriteria: 'A sale.' });
    expect(result.data).toEqual({ outcome: null, callback: null, seats: null, budget: null, note: null });
    expect(result.custom.data_not_evaluated).toMatch(/5 analysis fields are left null/);
    expect(result.custom.success_criteria_ignored).toMatch(/success_criteria/);
    expect(result.success_rationale).toMatch(/local rule/);
    const plain = analyzeLocally({ transcript: [], model: null, summaryPrompt: null, disconnectionReason: 'no_answer', durationSec: 0 });
    expect(plain.data).toEqual({});
    expect(plain.custom).not.toHaveProperty('data_not_evaluated');
    expect(plain.success_rationale).toMatch(/ended no_answer/);
  });
});
