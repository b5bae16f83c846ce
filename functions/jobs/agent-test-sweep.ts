import { sweepTestRuns } from '../../shared/domain/agent-tests/results';
import { sweepAgentDeletions } from '../../shared/domain/agents/deletion';
import { scheduledJob } from '../../shared/telemetry/jobs';

export const handler = scheduledJob('agent-test-sweep', async () => {
  await sweepTestRuns();
  await sweepAgentDeletions();
});
