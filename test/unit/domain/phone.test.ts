import * as z from 'zod/mini';
import { countryOfE164, normalizeE164, tryNormalizeE164 } from '../../../shared/domain/common/phone';
import { e164 } from '../../../shared/domain/common/phone-field';
import { ValidationError } from '../../../shared/errors';

describe('normalizeE164', () => {
  it.each([
    ['+14155550123', '+14155550123'],
    ['+1 (415) 555-0123', '+14155550123'],
    ['  +44 20 7946 0958 ', '+442079460958'],
    ['+49 30 1234567', '+49301234567'],
    ['+1.212.555.0199', '+12125550199'],
  ])('normalizes %s to %s', (input, expected) => {
    expect(normalizeE164(input)).toBe(expected);
  });

  it('uses the default country only when the input has no leading +', () => {
    expect(normalizeE164('(415) 555-0123', { defaultCountry: 'US' })).toBe('+14155550123');
    expect(normalizeE164('020 7946 0958', { defaultCountry: 'gb' })).toBe('+442079460958');
    expect(normalizeE164('+49 30 1234567', { defaultCountry: 'US' })).toBe('+49301234567');
  });

  it.each([
    ['no + and no default country', '4155550123', 'must be E.164, such as +14155550123 (start with + and the country code)'],
    ['too short', '+1415555', 'is too short'],
    ['too long', '+1 415 555 0123 4567', 'is too long'],
    ['an unassigned country code', '+999 1234 5678', 'has an unknown country code'],
    ['letters', '+1 800 FLOWERS', 'must be E.164, such as +14155550123 (digits after +; spaces, dashes, dots and parentheses allowed)'],
    ['an extension', '+1 415 555 0123 ext 7', 'must be E.164, such as +14155550123 (digits after +; spaces, dashes, dots and parentheses allowed)'],
    ['an invalid NANP area code', '+1 099 555 0123', 'is not a valid US number'],
    ['an unassigned UK range', '+44 7400 123', 'is not a valid GB number'],
    ['empty', '', 'must be E.164, such as +14155550123 (digits after +; spaces, dashes, dots and parentheses allowed)'],
    ['not a string', 14155550123, 'must be E.164, such as +14155550123'],
  ])('refuses %s with a 400 naming the field and what is wrong', (_why, input, message) => {
    let error: unknown;
    try {
      normalizeE164(input, { field: 'contact.phone' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toEqual({ fields: [{ path: 'contact.phone', message }] });
  });

  it('offers a non-throwing form and the country of a number', () => {
    expect(tryNormalizeE164('nope')).toBeUndefined();
    expect(countryOfE164('+14165550123')).toBe('CA');
    expect(countryOfE164('+442079460958')).toBe('GB');
  });

  it('is a zod schema that normalizes, and names the field when invalid', async () => {
    const schema = z.strictObject({ phone: e164() });
    expect(await schema.parseAsync({ phone: '+1 415-555-0123' })).toEqual({ phone: '+14155550123' });
    const bad = await schema.safeParseAsync({ phone: '12' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]).toMatchObject({ path: ['phone'], message: expect.stringContaining('E.164') });
  });
});
