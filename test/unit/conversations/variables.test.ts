import { builtInVariables, contactVariables, conversationSetup, isBuiltInVariable, localTime, resolveTimezone } from '../../../shared/domain/conversations/variables';

const now = new Date('2026-11-26T00:05:00.123Z');
const agent = { name: 'Desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}. It is {{current_time_local}} ({{timezone}}) for {{contact.first_name}}; plan {{plan}}.', begin_message: '  Hi {{contact.first_name}}{{missing}}!  ', voicemail_message: 'Call {{agent_name}} back.' };

describe('conversation time', () => {
  it('says now in the zone with its offset, to the second', () => {
    expect(localTime(now, 'Asia/Tokyo')).toBe('2026-11-26T09:05:00+09:00');
    expect(localTime(now, 'America/New_York')).toBe('2026-11-25T19:05:00-05:00');
    expect(localTime(now, 'UTC')).toBe('2026-11-26T00:05:00+00:00');
    // Summer time is the zone's own: the offset follows the date.
    expect(localTime(new Date('2026-07-01T12:00:00Z'), 'America/New_York')).toBe('2026-07-01T08:00:00-04:00');
  });

  it('takes the contact\'s zone, else the working hours\', else UTC, passing over unknown names', () => {
    expect(resolveTimezone('Asia/Tokyo', 'Europe/Berlin')).toBe('Asia/Tokyo');
    expect(resolveTimezone('', 'Europe/Berlin')).toBe('Europe/Berlin');
    expect(resolveTimezone(undefined, undefined)).toBe('UTC');
    expect(resolveTimezone('Mars/Olympus', 'Not/AZone')).toBe('UTC');
  });

  it('has the built-ins current_time (UTC), current_time_local and timezone', () => {
    expect(builtInVariables('Ava', now, 'Europe/Berlin')).toEqual({
      agent_name: 'Ava',
      current_time: '2026-11-26T00:05:00Z',
      current_time_local: '2026-11-26T01:05:00+01:00',
      timezone: 'Europe/Berlin',
    });
  });
});

describe('conversationSetup', () => {
  it('fills the prompt, begin and voicemail messages in the contact\'s zone, with contact.timezone', () => {
    const setup = conversationSetup({ agent, contact: { first_name: 'Ada', timezone: 'Asia/Tokyo' }, workingHoursTimezone: 'Europe/Berlin', dynamicVariables: { plan: 'gold' }, now });
    expect(setup.timezone).toBe('Asia/Tokyo');
    expect(setup.system).toBe('You are Ava. It is 2026-11-26T09:05:00+09:00 (Asia/Tokyo) for Ada; plan gold.');
    expect(setup.beginMessage).toBe('Hi Ada!');
    expect(setup.voicemailMessage).toBe('Call Ava back.');
    expect(setup.variables).toMatchObject({ 'contact.timezone': 'Asia/Tokyo', current_time: '2026-11-26T00:05:00Z', timezone: 'Asia/Tokyo' });
  });

  it('falls back to the agent\'s working hours\' zone, then UTC', () => {
    expect(conversationSetup({ agent, contact: { first_name: 'Ada', timezone: '' }, workingHoursTimezone: 'Europe/Berlin', now }).variables).toMatchObject({
      'contact.timezone': '',
      timezone: 'Europe/Berlin',
      current_time_local: '2026-11-26T01:05:00+01:00',
    });
    expect(conversationSetup({ agent, now }).variables).toMatchObject({ timezone: 'UTC', current_time_local: '2026-11-26T00:05:00+00:00' });
  });

  it('keeps a chat\'s snapshot of the contact and its zone', () => {
    const setup = conversationSetup({ agent, contactVariables: contactVariables({ first_name: 'Bo', timezone: 'America/Chicago' }), timezone: 'America/Chicago', now });
    expect(setup.system).toBe('You are Ava. It is 2026-11-25T18:05:00-06:00 (America/Chicago) for Bo; plan.');
    // Without a kept zone, the snapshot's contact.timezone decides.
    expect(conversationSetup({ agent, contactVariables: contactVariables({ timezone: 'America/Chicago' }), now }).timezone).toBe('America/Chicago');
  });

  it('lets a visitor fill only names that are not built-in; the business\'s variables win', () => {
    const setup = conversationSetup({
      agent,
      contact: { first_name: 'Ada' },
      visitorVariables: { plan: 'free', agent_name: 'Mallory', current_time_local: 'x', timezone: 'x', 'contact.first_name': 'Eve' },
      now,
    });
    expect(setup.system).toBe('You are Ava. It is 2026-11-26T00:05:00+00:00 (UTC) for Ada; plan free.');
    expect(conversationSetup({ agent, visitorVariables: { plan: 'free' }, dynamicVariables: { plan: 'gold' }, now }).variables.plan).toBe('gold');
    expect(['agent_name', 'current_time', 'current_time_local', 'timezone', 'contact.email', 'contact.metadata.x'].every(isBuiltInVariable)).toBe(true);
    expect(isBuiltInVariable('plan')).toBe(false);
  });

  it('answers "" for an empty begin or voicemail message, takes a given begin message, and can leave unknown placeholders', () => {
    const bare = conversationSetup({ agent: { name: 'Desk', begin_message: '   ', prompt: '' }, now });
    expect([bare.beginMessage, bare.voicemailMessage, bare.system]).toEqual(['', '', '']);
    expect(bare.variables.agent_name).toBe('Desk');
    expect(conversationSetup({ agent, beginMessage: 'Hello {{agent_name}}', now }).beginMessage).toBe('Hello Ava');
    expect(conversationSetup({ agent, fillUnknown: false, now }).beginMessage).toBe('Hi {{contact.first_name}}{{missing}}!');
  });
});
