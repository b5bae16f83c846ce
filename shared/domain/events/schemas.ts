import * as z from 'zod/mini';
import { pageQueryShape } from '../common/schemas';
import { instant } from '../scheduling/time';
import { EVENT_TYPES } from './types';
import { named } from '../common/named';
import { lazy } from '../common/lazy';

export const EventListQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  type: z.optional(z.enum(EVENT_TYPES)),
  /** Events created at or after this instant. */
  from: z.optional(instant()),
  /** Events created at or before this instant. */
  to: z.optional(instant()),
}));
export type EventListInput = z.output<typeof EventListQuery>;

export const Event = /* @__PURE__ */ named('Event', () => z.object({
  id: z.string(),
  type: z.enum(EVENT_TYPES),
  created_at: z.string(),
  organization_id: z.string(),
  data: z.record(z.string(), z.unknown()),
}), 'Something that happened in the organization (kept 30 days); webhooks deliver it');
