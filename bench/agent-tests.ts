/**
 * (tests) Agent tests at scale: suites of 10, 25 and 50 scripted tests of 5 turns each with the
 * local model, on the local runtime: wall time from POST /test-runs to the run's `completed`, the
 * queue jobs it took, and a gated publish of the 50-test suite.
 */
import { startPlatform } from '../shared/local/platform';
import { generateApiKey } from '../shared/domain/api-keys/secret';

const SIZES = (process.env.BENCH_TEST_SUITES ?? '10,25,50').split(',').map(Number);
const TURNS = ['hello', 'what can you do?', 'order_status order_id=42', 'thanks', 'bye'];

export async function agentTestsBenchmark(): Promise<string> {
  const key = generateApiKey();
  const platform = await startPlatform({ port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, env: { LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000' }, log: () => undefined });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${platform.url}${path}`, { method, headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    const json = (await res.json()) as any;
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.error)}`);
    return json;
  };
  const rows: string[] = [];
  let gated = '';
  try {
    // Warm-up: the first run loads the job's module (the engine) and the handlers; not measured.
    const warm = (await call('POST', '/api/v1/agents', { name: 'warm-up' })).data;
    await call('POST', `/api/v1/agents/${warm.id}/tests`, { name: 'w', user: { turns: ['hi'] } });
    await call('POST', `/api/v1/agents/${warm.id}/versions`, { require_passing_tests: true });
    for (const size of SIZES) {
      const agent = (await call('POST', '/api/v1/agents', { name: `bench ${size}`, begin_message: 'Hi!', selected_tools: [{ type: 'end_call' }] })).data;
      for (let i = 0; i < size; i++) {
        await call('POST', `/api/v1/agents/${agent.id}/tests`, {
          name: `t${i}`,
          user: { turns: TURNS },
          tool_mocks: [{ tool: 'order_status', output: { status: 'shipped' } }],
          criteria: [{ type: 'reply_contains', text: "don't have information", turn: 1 }, { type: 'tool_not_called', tool: 'order_status' }, { type: 'ended', end_reason: 'agent_ended' }],
        });
      }
      const sentBefore = platform.queue.stats()['agent-test-run']?.sent ?? 0;
      const receivedBefore = platform.queue.stats()['agent-test-run']?.received ?? 0;
      const t = performance.now();
      await call('POST', `/api/v1/agents/${agent.id}/test-runs`, {});
      let done: any;
      // Polled through the list (the run without its results), so the polling itself reads one page, not every result.
      for (;;) {
        done = (await call('GET', `/api/v1/agents/${agent.id}/test-runs?limit=1`)).data[0];
        if (done.status === 'completed') break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const wall = performance.now() - t;
      const stats = platform.queue.stats()['agent-test-run']!;
      rows.push(`| ${size} | ${(wall / 1000).toFixed(2)} s | ${(wall / size).toFixed(1)} ms | ${stats.sent - sentBefore} | ${stats.received - receivedBefore} | ${done.summary.passed}/${done.summary.total} |`);
      if (size === SIZES[SIZES.length - 1]) {
        const g = performance.now();
        const version = (await call('POST', `/api/v1/agents/${agent.id}/versions`, { require_passing_tests: true })).data;
        gated = `A gated publish of the ${size}-test suite (\`require_passing_tests\`: the run and the publish in one request) took ${((performance.now() - g) / 1000).toFixed(2)} s and published version ${version.version}, within the gate's 22 s wait.`;
      }
    }
  } finally {
    await platform.stop();
  }
  return [
    '## (tests) Agent tests: a suite on the local runtime',
    '',
    `Suites of scripted tests, ${TURNS.length} user turns each (plus the begin message; the last turn ends the chat with end_call), three criteria each, the local model, on the local runtime (one process; the queue runner delivers the agent-test-run queue 10 messages per batch, one batch at a time, as a Lambda event source with concurrency one would; deployed, SQS drives up to 10 concurrent batches). After a warm-up run (the job's first load), wall time from POST /test-runs to the GET that reads \`completed\` (polled every 25 ms through the list, which answers runs without their results); jobs: messages sent to (and received from) the queue, one per test × attempt.`,
    '',
    '| tests | wall time | per test | jobs sent | jobs received | passed |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    'Scaling: the local runner delivers one batch of 10 at a time, so a suite takes about ⌈tests ÷ 10⌉ batches, each as long as its slowest test (a batch\'s tests run in parallel in one process, against DynamoDB Local, which serves requests one at a time); the figures move by ±50 % from run to run on this shared machine. Each test is one job: a suite of N tests × `repeat` is N × `repeat` messages, never more (a redelivery stores nothing twice). Deployed, SQS runs up to 10 batches at once, so a suite of 100 tests is one round.',
    '',
    gated,
    '',
  ].join('\n');
}
