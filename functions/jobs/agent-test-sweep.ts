import { sweepTestRuns } from '../../shared/domain/agent-tests/results';
import { sweepAgentDeletions } from '../../shared/domain/agents/deletion';

export const handler = async () => {
  await sweepTestRuns();
  await sweepAgentDeletions();
};
