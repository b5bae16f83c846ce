/**
 * Filling a prompt's placeholders (issue 42, section 7): a variable with no value, or an empty one,
 * leaves no space before punctuation and no double space ("Hello gold customer , this is…" was
 * what a new user read); the text's own spacing elsewhere is kept.
 */
import { conversationSetup, fillTemplate } from '../../../shared/domain/conversations/variables';

const vars = { tier: 'gold', name: '', first: 'Ada' };

describe('fillTemplate with an empty variable', () => {
  it.each([
    ['Hello {{tier}} customer {{name}}, this is Ava.', 'Hello gold customer, this is Ava.'],
    ['Hello {{tier}} customer {{missing}}, this is Ava.', 'Hello gold customer, this is Ava.'],
    ['Thanks {{name}}!', 'Thanks!'],
    ['Is that you {{name}} ?', 'Is that you?'],
    ['Hello {{name}} {{first}}, welcome', 'Hello Ada, welcome'],
    ['Hello {{first}} {{name}} {{missing}} there', 'Hello Ada there'],
    ['{{name}} Welcome back', 'Welcome back'],
    ['Dear {{name}}\nYour order', 'Dear\nYour order'],
    ['Goodbye {{name}}', 'Goodbye'],
    ['(plan {{name}})', '(plan)'],
  ])('%j becomes %j', (template, expected) => {
    expect(fillTemplate(template, vars)).toBe(expected);
  });

  it('keeps the spacing the text has of its own, and every filled value as it is', () => {
    expect(fillTemplate('Rules:\n  - {{name}} be brief\n  - greet {{first}}  warmly', vars)).toBe('Rules:\n  - be brief\n  - greet Ada  warmly');
    expect(fillTemplate('Hello {{first}} , {{tier}}', vars)).toBe('Hello Ada , gold');
    expect(fillTemplate('Hi {{first}}{{name}}!', vars)).toBe('Hi Ada!');
  });

  it('renders an agent\'s prompt and begin message so', () => {
    const setup = conversationSetup({
      agent: { agent_name: 'Ava', prompt: 'You greet {{tier}} customers {{contact.first_name}}.', begin_message: 'Hello {{tier}} customer {{contact.first_name}}, this is {{agent_name}}.' },
      dynamicVariables: { tier: 'gold' },
      now: new Date('2026-11-26T00:00:00Z'),
    });
    expect(setup.system).toBe('You greet gold customers.');
    expect(setup.beginMessage).toBe('Hello gold customer, this is Ava.');
  });
});
