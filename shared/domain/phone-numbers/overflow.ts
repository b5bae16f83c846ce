import * as z from 'zod/mini';
import { e164 } from '../common/phone-field';
import { ValidationError } from '../../errors';

/**
 * What a number does with an incoming call while its organization is at its concurrency limit
 * (docs/api.md, "Concurrency limits" → "Inbound overflow"):
 *
 * - `reject` (the default): refused unanswered, the caller hears busy;
 * - `forward`: connected to `overflow_phone_number` (a `<Dial>`: the carrier bridges it, no agent);
 * - `queue`: the caller hears hold music (`overflow_hold_music_url`, else the carrier's classical
 *   bucket) for up to `overflow_queue_seconds` while the call waits in the organization's queue
 *   like a `"queue": true` outbound call; placed when a slot frees (first in first out), else told
 *   the agents are busy and hung up.
 *
 * Every one of them is recorded as a call (calls/inbound-overflow.ts).
 */
export const OVERFLOW_MODES = ['reject', 'forward', 'queue'] as const;
export type OverflowMode = (typeof OVERFLOW_MODES)[number];

export const DEFAULT_OVERFLOW_QUEUE_SECONDS = 120;
export const MAX_OVERFLOW_QUEUE_SECONDS = 3600;

/** Twilio's own hold music (its public classical bucket), when the number names none. */
export const DEFAULT_HOLD_MUSIC_URL = 'http://com.twilio.music.classical.s3.amazonaws.com/BusyStrings.mp3';

/** The overflow members of a number's write bodies (buy, import, PUT of an imported number, PATCH). */
export const overflowShape = () => ({
  overflow: z.optional(z.enum(OVERFLOW_MODES)),
  overflow_phone_number: z.optional(z.nullable(e164())),
  overflow_queue_seconds: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_OVERFLOW_QUEUE_SECONDS))),
  overflow_hold_music_url: z.optional(z.nullable(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).check(z.maxLength(2048)))),
});

export interface OverflowInput {
  overflow?: OverflowMode;
  overflow_phone_number?: string | null;
  overflow_queue_seconds?: number;
  overflow_hold_music_url?: string | null;
}

/** The overflow settings as stored on the number's item (absent: the defaults). */
export interface OverflowStored {
  overflow?: OverflowMode;
  overflow_phone_number?: string;
  overflow_queue_seconds?: number;
  overflow_hold_music_url?: string;
}

/** The settings a number answers with (defaults filled in). */
export function overflowOf(item: OverflowStored): { overflow: OverflowMode; overflow_phone_number: string | null; overflow_queue_seconds: number; overflow_hold_music_url: string | null } {
  return {
    overflow: item.overflow ?? 'reject',
    overflow_phone_number: item.overflow_phone_number ?? null,
    overflow_queue_seconds: item.overflow_queue_seconds ?? DEFAULT_OVERFLOW_QUEUE_SECONDS,
    overflow_hold_music_url: item.overflow_hold_music_url ?? null,
  };
}

export const hasOverflowInput = (input: OverflowInput) =>
  input.overflow !== undefined || input.overflow_phone_number !== undefined || input.overflow_queue_seconds !== undefined || input.overflow_hold_music_url !== undefined;

/** A write's overflow change: attributes to set and to remove. */
export interface OverflowChange {
  set: OverflowStored;
  remove: string[];
}

/**
 * Checks the overflow settings a write leaves on the number (`current`: the item before it, on an
 * update) and answers the change: `forward` needs an `overflow_phone_number`, which may not be the
 * number itself (the call would ring back into its own overflow). A 400 naming the field otherwise.
 */
export function overflowChange(input: OverflowInput, phoneNumber: string, current: OverflowStored = {}): OverflowChange {
  const after = { ...overflowOf(current), ...input };
  if (after.overflow === 'forward' && !after.overflow_phone_number) {
    throw ValidationError.field('overflow_phone_number', 'is required when overflow is forward');
  }
  if (after.overflow_phone_number && after.overflow_phone_number === phoneNumber) {
    throw ValidationError.field('overflow_phone_number', 'must not be the number itself');
  }
  const set: OverflowStored = {};
  const remove: string[] = [];
  if (input.overflow !== undefined) set.overflow = input.overflow;
  if (input.overflow_queue_seconds !== undefined) set.overflow_queue_seconds = input.overflow_queue_seconds;
  if (input.overflow_phone_number === null) remove.push('overflow_phone_number');
  else if (input.overflow_phone_number !== undefined) set.overflow_phone_number = input.overflow_phone_number;
  if (input.overflow_hold_music_url === null) remove.push('overflow_hold_music_url');
  else if (input.overflow_hold_music_url !== undefined) set.overflow_hold_music_url = input.overflow_hold_music_url;
  return { set, remove };
}
