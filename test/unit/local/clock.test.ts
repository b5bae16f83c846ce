import { systemClock } from '../../../shared/local/clock';

const DAY = 24 * 3600 * 1000;

describe('systemClock', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('waits out a delay beyond Node\'s 2^31 − 1 ms timer limit instead of firing at once', () => {
    // Prepare
    const fn = jest.fn();
    // Act
    systemClock.setTimeout(fn, 60 * DAY);
    jest.advanceTimersByTime(59 * DAY);
    const early = fn.mock.calls.length;
    jest.advanceTimersByTime(DAY);
    // Assess
    expect(early).toBe(0);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('cancels a long delay at any step', () => {
    // Prepare
    const fn = jest.fn();
    const handle = systemClock.setTimeout(fn, 60 * DAY);
    jest.advanceTimersByTime(30 * DAY);
    // Act
    systemClock.clearTimeout(handle);
    jest.advanceTimersByTime(60 * DAY);
    // Assess
    expect(fn).not.toHaveBeenCalled();
  });

  it('fires a short delay once, as setTimeout does', () => {
    const fn = jest.fn();
    systemClock.setTimeout(fn, 5_000);
    jest.advanceTimersByTime(5_000);
    expect(fn).toHaveBeenCalledTimes(1);
  });
});
