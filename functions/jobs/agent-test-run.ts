import { sqsWorker } from '../../shared/jobs/worker';
import { runTestJob } from '../../shared/domain/agent-tests/runner';
import type { TestJob } from '../../shared/domain/agent-tests/service';

export const handler = sqsWorker<TestJob>((m, record) => runTestJob(m, Number(record.attributes?.ApproximateReceiveCount ?? 1)));
