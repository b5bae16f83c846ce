import { CALL_DUE_SHARDS } from '../../../shared/domain/calls/service';
import { limitsOf, SLOT_DUE_SHARDS, slotKindOf } from '../../../shared/domain/concurrency/slots';

beforeAll(() => {
  process.env.TABLE_NAME ??= 'unit';
  process.env.BUCKET_NAME ??= 'unit';
});

it('puts slots in the calls-due index\'s own shards', () => {
  expect(SLOT_DUE_SHARDS).toBe(CALL_DUE_SHARDS);
});

it('the limit in force is the organization\'s, never above its ceiling, else the ceiling', () => {
  expect(limitsOf(undefined)).toEqual({ ceiling: 20, limit: 20 });
  expect(limitsOf({ limit: 5 })).toEqual({ ceiling: 20, limit: 5 });
  expect(limitsOf({ limit: 30, ceiling: 10 })).toEqual({ ceiling: 10, limit: 10 });
});

it('counts a web call as web and others by direction', () => {
  expect(slotKindOf({ channel: 'web', direction: 'inbound' })).toBe('web');
  expect(slotKindOf({ channel: 'phone', direction: 'inbound' })).toBe('inbound');
  expect(slotKindOf({ direction: 'outbound' })).toBe('outbound');
});
