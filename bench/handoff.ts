/**
 * Agent-to-agent hand-off (issue 37, item 2): the platform-added time of the reply after a
 * hand-off over a plain turn, through the whole local runtime (DynamoDB Local in memory, the chat
 * function as its Lambda handler) with the local model (no model time: every millisecond is the
 * platform's). Per iteration, interleaved, warm, each on fresh chats of an agent that lists another:
 *   - plain: a chat's first turn with no tool (the baseline), then its second;
 *   - hand-off: a chat's first turn whose model hands off (`handoff_to_agent`) and the agent
 *     handed to answers in the same turn (its prompt, tools and passages made, the segment and
 *     the event written with the turn), then its second turn, which the agent handed to answers
 *     from its start (the chat's current agent read from its segments).
 * Added time = the hand-off chat's turn less the plain chat's turn of the same number, per pair.
 *
 *   BENCH_HANDOFF_TURNS=200 npx tsx bench/handoff.ts
 */
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { startPlatform } from '../shared/local/platform';
import { benchApi } from './support';

const TURNS = Number(process.env.BENCH_HANDOFF_TURNS ?? 200);
const WARMUP = 20;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const f = (n: number) => `${n.toFixed(1)} ms`;

export async function handoffBenchmark(): Promise<string> {
  const key = generateApiKey();
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, log: () => undefined,
    env: { LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000', LLM_PROVIDER: 'local' },
  });
  try {
    const api = benchApi(platform.url, key, { strict: true });
    const billing = (await api('POST', '/api/v1/agents', { name: 'Billing', agent_name: 'Bea', prompt: 'You are {{agent_name}}, billing.', selected_tools: [{ type: 'end_call' }] })).data.id;
    const desk = (await api('POST', '/api/v1/agents', { name: 'Desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}, front desk.', handoff_agents: [{ agent_id: billing, description: 'Billing questions' }] })).data.id;
    await api('PATCH', `/api/v1/agents/${billing}`, { handoff_agents: [{ agent_id: desk, description: 'Everything else' }] });
    const turn = async (chatId: string, content: string) => {
      const t0 = performance.now();
      const out = await api('POST', `/api/v1/chats/${chatId}/messages`, { content });
      return { ms: performance.now() - t0, out };
    };
    const plainFirst: number[] = [];
    const handFirst: number[] = [];
    const plainSecond: number[] = [];
    const handSecond: number[] = [];
    const addedFirst: number[] = [];
    const addedSecond: number[] = [];
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const plain = (await api('POST', '/api/v1/chats', { agent_id: desk })).data.id;
      const handed = (await api('POST', '/api/v1/chats', { agent_id: desk })).data.id;
      const p1 = await turn(plain, 'What are your opening hours?');
      // The local model calls a tool its user names, with the message's key=value pairs.
      const h1 = await turn(handed, `handoff_to_agent agent_id=${billing} reason=billing`);
      if (!h1.out.data.messages.some((m: any) => m.role === 'tool_result' && m.result?.handed_off_to === billing)) throw new Error(`no hand-off: ${JSON.stringify(h1.out)}`);
      const p2 = await turn(plain, 'And on Sundays?');
      const h2 = await turn(handed, 'And on Sundays?');
      if (i < WARMUP) continue;
      plainFirst.push(p1.ms);
      handFirst.push(h1.ms);
      plainSecond.push(p2.ms);
      handSecond.push(h2.ms);
      addedFirst.push(h1.ms - p1.ms);
      addedSecond.push(h2.ms - p2.ms);
    }
    const p50 = pct(addedFirst, 50);
    const p50Next = pct(addedSecond, 50);
    return [
      '## Agent-to-agent hand-off',
      '',
      `Chat turns through the local runtime (the chat function, DynamoDB Local in memory) with the local model, so no model time; ${TURNS} pairs of each kind after ${WARMUP} warm-up, interleaved, each pair on two fresh chats of an agent that lists another. \`npx tsx bench/handoff.ts\`.`,
      '',
      '| | p50 | p95 |',
      '|---|---|---|',
      `| Plain first turn (baseline: no tool) | ${f(pct(plainFirst, 50))} | ${f(pct(plainFirst, 95))} |`,
      `| First turn that hands off, the agent handed to replying in it | ${f(pct(handFirst, 50))} | ${f(pct(handFirst, 95))} |`,
      `| **Added by the hand-off** (per pair: the line above − the plain turn) | **${f(p50)}** | ${f(pct(addedFirst, 95))} |`,
      `| Plain second turn | ${f(pct(plainSecond, 50))} | ${f(pct(plainSecond, 95))} |`,
      `| Second turn, answered by the agent handed to | ${f(pct(handSecond, 50))} | ${f(pct(handSecond, 95))} |`,
      `| **Added on the turn after** (per pair) | **${f(p50Next)}** | ${f(pct(addedSecond, 95))} |`,
      '',
      `Goal (issue 37): the next reply's platform-added time after a hand-off ≤ 10 ms p50 over a plain turn — the turn after the hand-off: ${p50Next <= 10 ? 'met' : 'NOT met'} (${f(p50Next)}: it reads the current agent from the chat's segments, no read more than a plain turn); ` +
        `the reply in the hand-off's own turn: ${p50 <= 10 ? 'met' : 'NOT met'} (${f(p50)}: the target agent's one GetItem, its prompt filled and tools listed, a second model step, and the segment and the \`conversation.handed_off\` event riding in the turn's write as a two-item transaction).`,
      '',
    ].join('\n');
  } finally {
    await platform.stop();
  }
}

if (require.main === module) {
  handoffBenchmark().then((s) => console.log(s), (err) => {
    console.error(err);
    process.exit(1);
  });
}
