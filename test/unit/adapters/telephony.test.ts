import { isValidPhoneNumber, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { SIMULATED_CATALOGUE, areaInventory, simulatedCallOutcome, simulatedCourse } from '../../../shared/adapters/telephony/simulated';
import { parseCallStatusFields } from '../../../shared/adapters/telephony/status-event';
import { TwilioFailure, toAppError } from '../../../shared/adapters/telephony/twilio';
import { UnavailableError, UnprocessableError, ValidationError } from '../../../shared/errors';

const areas = Object.entries(SIMULATED_CATALOGUE).flatMap(([country, spec]) => spec.areas.map((a) => [country, a.code] as const));

describe('the simulated carrier inventory', () => {
  it('covers a handful of countries', () => {
    expect(Object.keys(SIMULATED_CATALOGUE)).toEqual(expect.arrayContaining(['US', 'CA', 'GB', 'DE']));
  });

  it.each(areas)('offers 40 distinct numbers valid for %s in area %s, with the area and prices', async (country, area) => {
    const numbers = await areaInventory(country, area);
    expect(numbers).toHaveLength(40);
    expect(new Set(numbers.map((n) => n.phone_number)).size).toBe(40);
    for (const n of numbers) {
      expect(isValidPhoneNumber(n.phone_number, country as never)).toBe(true);
      const parsed = parsePhoneNumberFromString(n.phone_number)!;
      expect(parsed.country).toBe(country);
      expect(String(parsed.nationalNumber).startsWith(area)).toBe(true);
      expect(n).toMatchObject({ country, locality: expect.any(String), region: expect.any(String) });
      expect(n.price).toBeGreaterThan(0);
      expect(n.per_minute_price_inbound).toBeGreaterThan(0);
      expect(n.per_minute_price_outbound).toBeGreaterThan(0);
      expect(n.capabilities.voice).toBe(true);
    }
  });

  it('is the same on every run (seeded by country and area code)', async () => {
    // Pinned: a change to the generator would change what tests and demos buy.
    const first = (await areaInventory('US', '415')).slice(0, 3).map((n) => n.phone_number);
    expect(first).toEqual(['+14152168467', '+14152834846', '+14153071894']);
    expect(await areaInventory('US', '415')).not.toEqual(await areaInventory('US', '212'));
  });

  it('offers nothing for an unknown country or area', async () => {
    expect(await areaInventory('FR', '1')).toEqual([]);
    expect(await areaInventory('US', '999')).toEqual([]);
  });

  it('decides call outcomes from the callee\'s last digit (operations.md test numbers)', () => {
    for (const digit of '012345') expect(simulatedCallOutcome(`+1415555012${digit}`)).toEqual({ status: 'completed', answeredBy: 'human', durationSec: 3 });
    expect(simulatedCallOutcome('+14155550126')).toMatchObject({ status: 'completed', answeredBy: 'machine_end_beep', durationSec: 0 });
    expect(simulatedCallOutcome('+14155550127').status).toBe('no-answer');
    expect(simulatedCallOutcome('+14155550128').status).toBe('busy');
    expect(simulatedCallOutcome('+14155550129').status).toBe('failed');
  });

  it('lays out a call\'s course: ring 1 s, talk SIMULATED_CALL_SECONDS; ring out after the ring time', () => {
    process.env.SIMULATED_CALL_SECONDS = '5';
    try {
      const answered = simulatedCourse('SIM1', '+14155550120', 30, 0);
      expect(answered.map((e) => [e.status, Date.parse(e.at) / 1000])).toEqual([['queued', 0], ['ringing', 0], ['in-progress', 1], ['completed', 6]]);
      expect(answered[3]!.durationSec).toBe(5);
    } finally {
      delete process.env.SIMULATED_CALL_SECONDS;
    }
    const ringsOut = simulatedCourse('SIM2', '+14155550127', 12, 0);
    expect(ringsOut.at(-1)).toMatchObject({ status: 'no-answer', at: new Date(12_000).toISOString() });
  });
});

describe('call status events', () => {
  it('reads Twilio-shaped callback fields', () => {
    expect(parseCallStatusFields({ CallSid: 'CA1', CallStatus: 'completed', CallDuration: '42', Timestamp: 'Tue, 01 Jul 2025 10:00:00 +0000' })).toEqual({
      providerCallId: 'CA1', status: 'completed', durationSec: 42, at: '2025-07-01T10:00:00.000Z',
    });
    expect(parseCallStatusFields({ CallSid: 'CA1', CallStatus: 'initiated' }).status).toBe('queued');
    expect(() => parseCallStatusFields({ CallSid: 'CA1', CallStatus: 'exploded' })).toThrow(ValidationError);
  });
});

describe('Twilio error mapping', () => {
  it.each([
    [400, 21422, UnprocessableError],
    [400, 21212, UnprocessableError],
    [401, 20003, UnavailableError],
    [429, 20429, UnavailableError],
    [500, 20500, UnavailableError],
  ])('maps HTTP %i (code %i) to %p', (status, code, type) => {
    const mapped = toAppError(new TwilioFailure(status, { code, message: 'x', more_info: `https://www.twilio.com/docs/errors/${code}`, status }));
    expect(mapped).toBeInstanceOf(type);
    expect((mapped as UnprocessableError).details).toMatchObject({ provider: 'twilio', provider_code: code });
  });
});
