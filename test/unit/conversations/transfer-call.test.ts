/**
 * `transfer_call` with a mode and destinations (docs/api.md, "Warm transfer"): what the model is
 * offered, which destination its `phone_number` picks (anything else refused to it), in which mode,
 * and the fixed briefing the local model speaks to the person.
 */
import { simulatedCourse } from '../../../shared/adapters/telephony/simulated';
import { decidedOutcome, templateBriefing } from '../../../shared/domain/calls/warm-transfer';
import { transferToolShape } from '../../../shared/domain/conversations/tools/catalog';
import { transferTarget } from '../../../shared/domain/conversations/tools/executor';

const item = {
  type: 'transfer_call', mode: 'warm',
  transfer_destinations: [{ phone_number: '+14155550171', description: 'Billing desk' }, { phone_number: '+14155550172', mode: 'cold', description: 'Sales' }],
};

it('offers the destinations as an enum with their descriptions, and a plain item as before', () => {
  const shape = transferToolShape(item);
  expect(shape.parameters).toMatchObject({ properties: { phone_number: { type: 'string', enum: ['+14155550171', '+14155550172'] } }, required: ['phone_number'] });
  expect(shape.description).toContain('+14155550171: Billing desk; +14155550172: Sales');
  expect(transferToolShape({ type: 'transfer_call', phone_number: '+14155550199' }).parameters).toEqual({ type: 'object', properties: { reason: expect.any(Object) }, required: [] });
});

it('picks the destination the model names, in its own mode or the item\'s; refuses any other number; a plain item keeps its number, cold by default', () => {
  expect(transferTarget(item, '+14155550171')).toEqual({ to: '+14155550171', mode: 'warm', description: 'Billing desk' });
  expect(transferTarget(item, '+14155550172')).toEqual({ to: '+14155550172', mode: 'cold', description: 'Sales' });
  expect(transferTarget(item, '+19995550000')).toEqual({ error: 'phone_number must be one of the transfer destinations: +14155550171 (Billing desk), +14155550172 (Sales)' });
  expect(transferTarget(item, undefined)).toMatchObject({ error: expect.stringContaining('must be one of') });
  expect(transferTarget({ type: 'transfer_call', phone_number: '+14155550199' }, '+10000000000')).toEqual({ to: '+14155550199', mode: 'cold' });
  expect(transferTarget({ type: 'transfer_call', phone_number: '+14155550199', mode: 'warm' }, undefined)).toEqual({ to: '+14155550199', mode: 'warm' });
  expect(transferTarget({ type: 'transfer_call' }, undefined)).toEqual({ error: 'no transfer number is configured for this agent' });
});

it('briefs the person from the transcript with the fixed template: caller, reason, what was done, what is still needed', () => {
  const call = { direction: 'inbound' as const, from_phone_number: '+14155550123', to_phone_number: '+14155550100', tool_calls: [{ name: 'check_availability', arguments: {}, result: {}, time_sec: 3 }, { name: 'transfer_call', arguments: {}, result: {}, time_sec: 9 }] };
  const transcript = [
    { role: 'agent' as const, text: 'Acme, how can I help?', time_sec: 0 },
    { role: 'user' as const, text: 'My invoice is wrong.', time_sec: 2 },
    { role: 'user' as const, text: 'Can I talk to billing?', time_sec: 8 },
  ];
  expect(templateBriefing(call, transcript, undefined, 'Billing desk')).toBe(
    'Incoming transfer from the AI agent. Caller: +14155550123. Reason: they said: "Can I talk to billing?". What was done: the agent spoke with them for 2 turns and used check_availability. Still needed: help from Billing desk.',
  );
  expect(templateBriefing(call, [], 'double charge', undefined)).toContain('Reason: double charge. What was done: the agent spoke with them for 0 turns and used check_availability. Still needed: a person to take over the call.');
});

it('settles a transfer on the simulated carrier from the course it decides up front, by the test numbers\' last digit', () => {
  const outcome = (to: string) => decidedOutcome(simulatedCourse('SIMCA1', to, 20, 0), to).outcome;
  expect(['+14155550170', '+14155550175', '+14155550176', '+14155550177', '+14155550178', '+14155550179'].map(outcome)).toEqual(['connected', 'declined', 'machine', 'no_answer', 'no_answer', 'failed']);
  expect(decidedOutcome(simulatedCourse('SIMCA1', '+14155550170', 20, 0), '+14155550170').durationSec).toBeGreaterThan(0);
});
