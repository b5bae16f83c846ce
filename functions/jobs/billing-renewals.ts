import type { Context, ScheduledEvent } from 'aws-lambda';
import { runRenewals } from '../../shared/domain/billing/renewals';
import { scheduledJob } from '../../shared/telemetry/jobs';

// A manual invoke with `{ "detail": { "lookback_days": 90 } }` catches up after an outage longer
// than the default window; the run stops starting numbers shortly before the Lambda timeout.
export const handler = scheduledJob('billing-renewals', async (event: ScheduledEvent<{ lookback_days?: number }>, context: Context) => {
  await runRenewals({ lookbackDays: event?.detail?.lookback_days, shouldStop: () => context.getRemainingTimeInMillis() < 15_000 });
});
