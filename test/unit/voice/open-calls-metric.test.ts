import { OPEN_CALLS_INTERVAL_MS, OPEN_CALLS_METRIC, openCallsLine, publishOpenCalls } from '../../../voice/open-calls-metric';

/**
 * The rules of the EMF specification a line must keep for CloudWatch to extract its metrics: one
 * JSON object; `_aws` with a numeric `Timestamp` and `CloudWatchMetrics` directives; each directive
 * a `Namespace`, `Dimensions` as an array of dimension sets (arrays of at most 30 names) and
 * `Metrics` (each a `Name`, an optional `Unit`); every name a directive refers to a root member, a
 * dimension's value a string and a metric's value a number.
 */
function emfProblems(line: string): string[] {
  const problems: string[] = [];
  const doc = JSON.parse(line) as Record<string, any>;
  if (typeof doc._aws?.Timestamp !== 'number') problems.push('_aws.Timestamp is not a number');
  const directives = doc._aws?.CloudWatchMetrics;
  if (!Array.isArray(directives) || !directives.length) return [...problems, '_aws.CloudWatchMetrics is not a non-empty array'];
  for (const d of directives) {
    if (typeof d.Namespace !== 'string' || !d.Namespace) problems.push('a directive has no Namespace');
    if (!Array.isArray(d.Dimensions) || !d.Dimensions.every((set: unknown) => Array.isArray(set) && set.length <= 30)) problems.push('Dimensions is not an array of dimension sets');
    for (const name of (d.Dimensions ?? []).flat()) if (typeof doc[name] !== 'string') problems.push(`dimension ${name} has no string value at the root`);
    if (!Array.isArray(d.Metrics) || !d.Metrics.length) problems.push('Metrics is empty');
    for (const m of d.Metrics ?? []) if (typeof doc[m.Name] !== 'number') problems.push(`metric ${m.Name} has no numeric value at the root`);
  }
  return problems;
}

describe('the OpenCalls metric line', () => {
  it('is an EMF document with the namespace, dimension and metric the scaling policy reads', () => {
    const line = openCallsLine(7, 1_750_000_000_000);

    expect(line).not.toContain('\n');
    expect(emfProblems(line)).toEqual([]);
    expect(JSON.parse(line)).toEqual({
      _aws: {
        Timestamp: 1_750_000_000_000,
        CloudWatchMetrics: [{ Namespace: 'VoiceAgentPlatform', Dimensions: [['Service']], Metrics: [{ Name: 'OpenCalls', Unit: 'Count' }] }],
      },
      Service: 'voice-runtime',
      OpenCalls: 7,
    });
    expect(OPEN_CALLS_METRIC).toEqual({ namespace: 'VoiceAgentPlatform', metricName: 'OpenCalls', dimensionsMap: { Service: 'voice-runtime' } });
  });

  it('the checker catches a line CloudWatch would not extract', () => {
    expect(emfProblems(JSON.stringify({ _aws: { Timestamp: 1, CloudWatchMetrics: [{ Namespace: 'N', Dimensions: [['Service']], Metrics: [{ Name: 'OpenCalls' }] }] }, OpenCalls: '3' }))).toEqual([
      'dimension Service has no string value at the root',
      'metric OpenCalls has no numeric value at the root',
    ]);
  });
});

describe('publishing open calls', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('writes the open calls at start and every minute, counting the sessions as they open and end', () => {
    const sessions = new Map<string, object>();
    const lines: string[] = [];
    const stop = publishOpenCalls(() => sessions.size, { write: (line) => lines.push(line), now: () => 42 });

    sessions.set('call-1', {}).set('call-2', {}).set('call-3', {});
    jest.advanceTimersByTime(OPEN_CALLS_INTERVAL_MS);
    sessions.delete('call-2');
    jest.advanceTimersByTime(OPEN_CALLS_INTERVAL_MS - 1);
    const beforeTheMinute = lines.length;
    jest.advanceTimersByTime(1);
    stop();
    jest.advanceTimersByTime(5 * OPEN_CALLS_INTERVAL_MS);

    expect(beforeTheMinute).toBe(2);
    expect(lines.map((line) => JSON.parse(line).OpenCalls)).toEqual([0, 3, 2]);
    expect(lines.every((line) => emfProblems(line).length === 0)).toBe(true);
  });
});
