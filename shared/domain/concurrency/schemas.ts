import * as z from 'zod/mini';
import { named } from '../common/named';

export const Concurrency = /* @__PURE__ */ named(
  'Concurrency',
  () => z.object({
    limit: z.int(),
    ceiling: z.int(),
    in_progress: z.object({ outbound: z.int(), inbound: z.int(), web: z.int(), total: z.int() }),
    queued: z.int(),
  }),
  'The organization\'s concurrency: its `limit` of simultaneous live calls (1 … `ceiling`), the operator\'s `ceiling`, the live calls now by kind (outbound queued to the carrier, ringing or in progress; inbound and web calls from their start) and the outbound calls waiting for a slot (`queued`)',
);
export type ConcurrencyView = z.output<typeof Concurrency>;

export const UpdateConcurrencyBody = /* @__PURE__ */ named(
  'UpdateConcurrencyRequest',
  () => z.strictObject({ limit: z.int().check(z.minimum(1)) }),
  'The organization\'s own limit of simultaneous live calls: 1 … its `ceiling` (a 422 above it)',
);
export type UpdateConcurrencyInput = z.output<typeof UpdateConcurrencyBody>;
