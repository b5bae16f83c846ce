import { sweepTestRuns } from '../../shared/domain/agent-tests/results';

export const handler = async () => {
  await sweepTestRuns();
};
