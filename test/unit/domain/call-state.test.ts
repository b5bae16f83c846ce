import { advances, billableMinutes, moveFor, STATUS_RANK } from '../../../shared/domain/calls/state';

describe('call state machine', () => {
  it('maps carrier statuses to forward moves; queued never moves a call', () => {
    expect(moveFor({ status: 'queued' })).toBeUndefined();
    expect(moveFor({ status: 'ringing' })).toMatchObject({ status: 'ringing', rank: 1 });
    expect(moveFor({ status: 'in-progress', answeredBy: 'human' })).toMatchObject({ status: 'in_progress', answered: true });
    expect(moveFor({ status: 'completed' })).toMatchObject({ status: 'ended', reason: 'completed', answered: true });
    expect(moveFor({ status: 'completed', answeredBy: 'machine_end_beep' })).toMatchObject({ status: 'ended', reason: 'voicemail', answered: false });
    expect(moveFor({ status: 'no-answer' })?.reason).toBe('no_answer');
    expect(moveFor({ status: 'busy' })?.reason).toBe('busy');
    expect(moveFor({ status: 'failed' })?.reason).toBe('failed');
    expect(moveFor({ status: 'canceled' })?.reason).toBe('canceled');
  });

  it('never moves backwards, sideways or out of the end', () => {
    expect(advances(STATUS_RANK.queued, moveFor({ status: 'ringing' }))).toBe(true);
    expect(advances(STATUS_RANK.ringing, moveFor({ status: 'ringing' }))).toBe(false);
    expect(advances(STATUS_RANK.in_progress, moveFor({ status: 'ringing' }))).toBe(false);
    expect(advances(STATUS_RANK.ended, moveFor({ status: 'busy' }))).toBe(false);
    expect(advances(STATUS_RANK.queued, moveFor({ status: 'completed' }))).toBe(true);
  });

  it('bills every started minute', () => {
    expect([0, 1, 59, 60, 61, 3600].map(billableMinutes)).toEqual([0, 1, 1, 1, 2, 60]);
  });
});
