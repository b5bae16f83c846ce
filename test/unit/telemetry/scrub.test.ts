import { scrubAttributes, scrubPhones } from '../../../shared/telemetry/scrub';
import { tracingConfigured } from '../../../shared/telemetry/tracing';

it('replaces E.164 numbers, written or URL-encoded, and leaves other digits', () => {
  expect(scrubPhones('call +14155550123 now')).toBe('call [phone] now');
  expect(scrubPhones('/Calls.json?To=%2B14155550123&x=1')).toBe('/Calls.json?To=[phone]&x=1');
  expect(scrubPhones('order 14155550123, id 42, +1 (')).toBe('order 14155550123, id 42, +1 (');
  expect(scrubPhones('%2b447700900123')).toBe('[phone]');
  expect(scrubPhones('+1415555')).toBe('[phone]'); // the shortest E.164 form: + and seven digits
});

it('scrubs string and string-array attributes in place', () => {
  const attributes: Record<string, unknown> = { a: 'to +447700900123', b: ['+14155550123', 'x'], c: 3, d: true };
  scrubAttributes(attributes);
  expect(attributes).toEqual({ a: 'to [phone]', b: ['[phone]', 'x'], c: 3, d: true });
});

it('is on only when the standard settings ask for traces', () => {
  expect(tracingConfigured({})).toBe(false);
  expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' })).toBe(true);
  expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://localhost:4318/v1/traces' })).toBe(true);
  expect(tracingConfigured({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
  expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
});
