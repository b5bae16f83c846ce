import { argumentIssues, parseArguments } from '../../../shared/domain/conversations/tools/arguments';

/** A tool's `definition.parameters` as the tools API stores it (shared/domain/tools/schemas.ts). */
const parameters = {
  type: 'object',
  properties: {
    date: { type: 'string', description: 'YYYY-MM-DD' },
    count: { type: 'integer', description: 'How many' },
    price: { type: 'number', description: 'Most to pay' },
    urgent: { type: 'boolean', description: '' },
    color: { type: 'string', enum: ['red', 'blue'], description: '' },
    size: { type: 'integer', enum: [1, 2, 3], description: '' },
    tags: { type: 'array', items: { type: 'string' }, description: '' },
    sizes: { type: 'array', items: { type: 'integer', enum: [1, 2] }, description: '' },
    options: { type: 'object', description: '' },
  },
  required: ['date', 'count'],
};

describe('argumentIssues', () => {
  it('accepts valid arguments, extra ones included', () => {
    const args = { date: '2026-12-01', count: 2, price: 9.5, urgent: false, color: 'red', size: 3, tags: ['a', 'b'], sizes: [1, 2], options: { a: 1 }, extra: 'kept' };
    expect(argumentIssues(parameters, args)).toEqual([]);
  });

  it('names every missing required argument (null counts as missing)', () => {
    expect(argumentIssues(parameters, {})).toEqual(['"date" is required', '"count" is required']);
    expect(argumentIssues(parameters, { date: null, count: 1 })).toEqual(['"date" is required']);
  });

  it('names each argument of the wrong type', () => {
    const issues = argumentIssues(parameters, { date: 20261201, count: 1.5, price: 'cheap', urgent: 'yes', tags: 'a', options: [1] });
    expect(issues).toEqual([
      '"date" must be a string',
      '"count" must be an integer',
      '"price" must be a number',
      '"urgent" must be a boolean',
      '"tags" must be an array',
      '"options" must be an object',
    ]);
  });

  it('refuses numbers that are not finite and integers given as text', () => {
    expect(argumentIssues(parameters, { date: 'd', count: '2' })).toEqual(['"count" must be an integer']);
    expect(argumentIssues(parameters, { date: 'd', count: 1, price: Number.POSITIVE_INFINITY })).toEqual(['"price" must be a number']);
  });

  it('checks enum values, with the allowed values in the message', () => {
    expect(argumentIssues(parameters, { date: 'd', count: 1, color: 'green' })).toEqual(['"color" must be one of red, blue']);
    expect(argumentIssues(parameters, { date: 'd', count: 1, size: 4 })).toEqual(['"size" must be one of 1, 2, 3']);
  });

  it('checks each array item against items, by position', () => {
    expect(argumentIssues(parameters, { date: 'd', count: 1, tags: ['a', 2, 'c', false] })).toEqual(['"tags[1]" must be a string', '"tags[3]" must be a string']);
    expect(argumentIssues(parameters, { date: 'd', count: 1, sizes: [1, 3] })).toEqual(['"sizes[1]" must be one of 1, 2']);
  });

  it('wants a JSON object as the arguments', () => {
    for (const args of [null, [], 'date=1', 3]) expect(argumentIssues(parameters, args)).toEqual(['the arguments must be a JSON object']);
  });

  it('accepts anything object-shaped when the tool declares no parameters', () => {
    expect(argumentIssues(undefined, { anything: 1 })).toEqual([]);
    expect(argumentIssues({ type: 'object', properties: {}, required: [] }, {})).toEqual([]);
  });
});

describe('parseArguments', () => {
  it('parses the model\'s JSON text into an object; empty text is no arguments', () => {
    expect(parseArguments('{"date":"2026-12-01","count":2}')).toEqual({ args: { date: '2026-12-01', count: 2 } });
    expect(parseArguments('  ')).toEqual({ args: {} });
  });

  it('answers an error for text that is not JSON, or JSON that is not an object', () => {
    expect(parseArguments('{"date":')).toEqual({ error: 'the arguments are not valid JSON' });
    for (const text of ['[1,2]', '"text"', '42', 'null']) expect(parseArguments(text)).toEqual({ error: 'the arguments must be a JSON object' });
  });
});
