/**
 * Which agent spoke each agent line of a call's transcript (issue 42 item 7, `agent_id`): the agent
 * whose segment the line falls in, by the line's time from the call's answer.
 */
import { withSpeakingAgents, type Segment } from '../../../shared/domain/conversations/segments';

const answered = '2026-03-02T15:04:00.000Z';
const seg = (agent_id: string, started_at: string, reason: string | null = null): Segment => ({ agent_id, agent_version: null, started_at, reason });

describe('withSpeakingAgents', () => {
  it('gives every agent line the starting agent when the call was never handed off; other roles get nothing', () => {
    const lines = [{ role: 'agent', text: 'Hi', time_sec: 0 }, { role: 'user', text: 'Hello', time_sec: 2 }, { role: 'system', text: 'x', time_sec: 3 }];
    expect(withSpeakingAgents(lines, [seg('a', answered)], answered)).toEqual([
      { role: 'agent', text: 'Hi', time_sec: 0, agent_id: 'a' },
      { role: 'user', text: 'Hello', time_sec: 2 },
      { role: 'system', text: 'x', time_sec: 3 },
    ]);
  });

  it('names A before the hand-off and B after it (and A again after a hand-back)', () => {
    const segments = [seg('a', answered), seg('b', '2026-03-02T15:04:10.000Z', 'billing'), seg('a', '2026-03-02T15:04:30.000Z', 'back')];
    const lines = [
      { role: 'agent', text: 'Hi, front desk.', time_sec: 0 },
      { role: 'user', text: 'My invoice.', time_sec: 5 },
      { role: 'agent', text: 'Passing you to billing.', time_sec: 8.5 },
      { role: 'agent', text: 'Billing here.', time_sec: 11 },
      { role: 'agent', text: 'Front desk again.', time_sec: 31.2 },
    ];
    expect(withSpeakingAgents(lines, segments, answered).map((l) => [l.role, l.agent_id])).toEqual([
      ['agent', 'a'], ['user', undefined], ['agent', 'a'], ['agent', 'b'], ['agent', 'a'],
    ]);
  });

  it('keeps the agent a line was stored with (a simulated call knows it; its times are spread over the call, not real)', () => {
    const segments = [seg('a', answered), seg('b', '2026-03-02T15:04:10.000Z')];
    expect(withSpeakingAgents([{ role: 'agent', text: 'x', time_sec: 1, agent_id: 'b' }], segments, answered)[0]!.agent_id).toBe('b');
  });

  it('without an answer time (a call never answered) falls back to the last segment\'s agent', () => {
    expect(withSpeakingAgents([{ role: 'agent', text: 'x', time_sec: 1 }], [seg('a', answered), seg('b', answered)], null)[0]!.agent_id).toBe('b');
  });
});
