/**
 * (tests) Agent tests at scale: suites of 10, 25 and 50 scripted tests of 5 turns each with the
 * local model, on the local runtime: wall time from POST /test-runs to the run's `completed`, the
 * queue jobs and DynamoDB requests it took, and a gated publish of the 50-test suite. Then
 * (issue 35) the worst pattern a user may write against a 10 KB reply in the linear-time engine,
 * and 10 concurrent re-analyses of one chat: the analysis model's requests.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startPlatform } from '../shared/local/platform';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { db } from '../shared/db/client';
import { analyzer } from '../shared/adapters/analysis';

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
  // Every DynamoDB request of this process (the platform runs in it), counted at the client.
  let dynamoRequests = 0;
  db().middlewareStack.add((next) => async (args) => {
    dynamoRequests++;
    return next(args);
  }, { step: 'initialize', name: 'benchCountRequests' });
  let patterns = '';
  let reanalyses = '';
  try {
    // Warm-up: the first run loads the job's module (the engine) and the handlers; not measured.
    const warm = (await call('POST', '/api/v1/agents', { name: 'warm-up' })).data;
    await call('POST', `/api/v1/agents/${warm.id}/tests`, { name: 'w', user: { turns: ['hi'] }, criteria: [{ type: 'ended', end_reason: 'user_ended' }] });
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
      const requestsBefore = dynamoRequests;
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
      // The polling's own reads (one Query and the key's lookups per poll) are in the count too; they are few next to the jobs'.
      rows.push(`| ${size} | ${(wall / 1000).toFixed(2)} s | ${(wall / size).toFixed(1)} ms | ${stats.sent - sentBefore} | ${stats.received - receivedBefore} | ${dynamoRequests - requestsBefore} | ${done.summary.passed}/${done.summary.total} |`);
      if (size === SIZES[SIZES.length - 1]) {
        const g = performance.now();
        const version = (await call('POST', `/api/v1/agents/${agent.id}/versions`, { require_passing_tests: true })).data;
        gated = `A gated publish of the ${size}-test suite (\`require_passing_tests\`: the run and the publish in one request) took ${((performance.now() - g) / 1000).toFixed(2)} s and published version ${version.version}, within the gate's 22 s wait.`;
      }
    }
    patterns = await patternBenchmark();
    reanalyses = await reanalysisBenchmark(call);
  } finally {
    await platform.stop();
  }
  return [
    '## (tests) Agent tests: a suite on the local runtime',
    '',
    `Suites of scripted tests, ${TURNS.length} user turns each (plus the begin message; the last turn ends the chat with end_call), three criteria each, the local model, on the local runtime (one process; the queue runner delivers the agent-test-run queue 10 messages per batch, one batch at a time, as a Lambda event source with concurrency one would; deployed, SQS drives up to 10 concurrent batches). After a warm-up run (the job's first load), wall time from POST /test-runs to the GET that reads \`completed\` (polled every 25 ms through the list, which answers runs without their results); jobs: messages sent to (and received from) the queue, one per test × attempt.`,
    '',
    '| tests | wall time | per test | jobs sent | jobs received | DynamoDB requests | passed |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    'Scaling: the local runner delivers one batch of 10 at a time, so a suite takes about ⌈tests ÷ 10⌉ batches, each as long as its slowest test (a batch\'s tests run in parallel in one process, against DynamoDB Local, which serves requests one at a time); the figures move by ±50 % from run to run on this shared machine. Each test is one job: a suite of N tests × `repeat` is N × `repeat` messages, never more (a redelivery stores nothing twice). Deployed, SQS runs up to 10 batches at once, so a suite of 100 tests is one round.',
    '',
    gated,
    '',
    BEFORE,
    '',
    patterns,
    '',
    reanalyses,
    '',
  ].join('\n');
}

/** The same bench on the tree before issue 35 (commit f551fbf, a worktree on this machine, minutes before the figures above): recorded, not re-run. */
const BEFORE = `Before issue 35 (commit f551fbf, this bench in a worktree, the same machine minutes earlier): the 50-test suite took 4.09 s and 358 DynamoDB requests (50 jobs); 10 concurrent re-analyses took 35 model requests. Issue 35 asks that the suite grow by at most 20 %: after it, each job claims its organization's fairness slot (one UpdateItem; the release rides in the result's transaction) and the run's tests are frozen into it (one BatchWriteItem per 25 tests): about one request more per test (+14 % at 50 tests), and no measurable time.`;

/** The worst patterns a user may write, against a 10 KB reply, in the engine reply_matches uses (absent before issue 35: skipped). */
async function patternBenchmark(): Promise<string> {
  if (!existsSync(join(__dirname, '..', 'shared', 'domain', 'agent-tests', 'patterns.ts'))) return '';
  const { patternMatches, MAX_MATCH_INPUT } = await import('../shared/domain/agent-tests/pattern-engine');
  const reply = `${'a'.repeat(10 * 1024)}!`;
  const hostile = ['(a+)+$', '(a|aa)+$', '(a|a?)+$', '(.*a){20}$', '^(\\w+\\s?)*$', '(?:a*)*b'];
  const rows = hostile.map((p) => {
    patternMatches(p, reply); // compiled and its automaton built once, as a run's first result does
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      patternMatches(p, reply);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const first = (() => {
      const t = performance.now();
      patternMatches(`${p}|zz${Math.random().toString(36).slice(2)}`, reply);
      return performance.now() - t;
    })();
    return `| \`${p.replace(/\|/g, '\\|')}\` | ${times[25]!.toFixed(3)} ms | ${times[49]!.toFixed(3)} ms | ${first.toFixed(2)} ms |`;
  });
  // The backtracking engine on the same pattern, over 20 characters only (each more doubles it; it blocks the process meanwhile).
  const t = performance.now();
  /(a+)+$/.test(`${'a'.repeat(20)}!`);
  const backtracking = performance.now() - t;
  return [
    `**Patterns (issue 35).** \`reply_matches\` in re2js against a reply of 10 KB (${reply.length} characters; replies are matched on their first ${MAX_MATCH_INPUT}): 50 matches each after one warm-up; "first" is a never-seen pattern, compiled and matched once. Goal: ≤ 5 ms. For contrast, JavaScript's backtracking RegExp took ${backtracking.toFixed(0)} ms for \`(a+)+$\` over 20 a's and a '!' (each further 'a' doubles it: 5.6 s at 29).`,
    '',
    '| pattern | median | slowest of 50 | first (compile + match) |',
    '|---|---|---|---|',
    ...rows,
    '',
    'Against the goal: a check of a pattern a run has compiled (every result after a run\'s first) takes about 0.1 ms, far under 5 ms, and the time grows with the reply, never with the pattern\'s nesting. The first use of a pattern in a process (compiling it and building its automaton) costs more (the "first" column), as do single checks when another process holds the CPU: bounded and linear, where the backtracking engine grows without bound.',
  ].join('\n');
}

/** 10 concurrent POST /chats/{id}/analysis of one ended chat: the analysis model's requests (goal: 10). */
async function reanalysisBenchmark(call: (method: string, path: string, body?: unknown) => Promise<any>): Promise<string> {
  const agent = (await call('POST', '/api/v1/agents', { name: 'reanalysed', success_criteria: 'The user says hello.' })).data;
  const chat = (await call('POST', '/api/v1/chats', { agent_id: agent.id })).data;
  await call('POST', `/api/v1/chats/${chat.id}/messages`, { content: 'hello' });
  await call('POST', `/api/v1/chats/${chat.id}/end`);
  // Counts the analyzer's requests (the local analyzer stands in for the model; one request per analyze).
  const port = analyzer();
  const analyze = port.analyze.bind(port);
  let requests = 0;
  (port as { analyze: typeof analyze }).analyze = async (input) => {
    requests++;
    return analyze(input);
  };
  for (let i = 0; i < 200 && !(await call('GET', `/api/v1/chats/${chat.id}`)).data.analysis; i++) await new Promise((r) => setTimeout(r, 25));
  requests = 0;
  const t = performance.now();
  const answers = await Promise.allSettled(Array.from({ length: 10 }, () => call('POST', `/api/v1/chats/${chat.id}/analysis`)));
  const wall = performance.now() - t;
  const ok = answers.filter((a) => a.status === 'fulfilled').length;
  return `**Re-analysis under contention (issue 35).** 10 concurrent \`POST /chats/{id}/analysis\` of one ended chat (each write conditioned on the chat's version, so 9 of them lose a race at least once): **${requests} model requests** for ${ok} answers (goal: 10), in ${(wall / 1000).toFixed(2)} s.`;
}
