import type { ScheduledEvent } from 'aws-lambda';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { scheduledJob } from '../../shared/telemetry/jobs';

// A manual invoke with `{ "detail": { "lookback_hours": 48 } }` catches up after a longer outage.
export const handler = scheduledJob('call-recovery', async (event: ScheduledEvent<{ lookback_hours?: number }>) => {
  await runCallRecovery({ lookbackHours: event?.detail?.lookback_hours });
});
