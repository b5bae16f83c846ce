/**
 * Analytics at scale: one read of GET /analytics/conversations' data over a 30-day window that
 * holds 10,000 ended conversations (calls and chats of 5 agents, analysed, with a boolean and an
 * enum field): the requests and read units it takes, and its time. Writing 10,000 conversations
 * through the API would take minutes on DynamoDB Local, so the counters are written through the
 * real counting function (statsWrites: what an end and an analysis add) for 10,000 synthetic
 * ended conversations, each counter update sent as it would be in the transaction.
 *
 *   npx tsx bench/analytics.ts                 prints the markdown section
 *   BENCH_ANALYTICS_CONVERSATIONS=10000        how many conversations
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { db, tableName } from '../shared/db/client';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { statsWrites, type CountedItem } from '../shared/domain/analytics/counters';
import { conversationAnalytics, type ReadCost } from '../shared/domain/analytics/service';
import { ConversationAnalyticsQuery } from '../shared/domain/analytics/schemas';
import { startPlatform } from '../shared/local/platform';
import { createAgent } from '../shared/domain/agents/service';
import { CreateAgentBody } from '../shared/domain/agents/schemas';

const DAY_MS = 86_400_000;

export async function analyticsBenchmark(conversations = Number(process.env.BENCH_ANALYTICS_CONVERSATIONS ?? 10_000)): Promise<string> {
  const key = generateApiKey();
  const platform = await startPlatform({ port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, env: { LOG_LEVEL: 'SILENT' }, log: () => undefined });
  try {
    const orgId = platform.keys[0]!.organizationId;
    // Real agents: a read filtered by an agent that is not the organization's is a 404.
    const agents: string[] = [];
    for (let i = 0; i < 5; i++) agents.push((await createAgent(orgId, CreateAgentBody.parse({ name: `bench agent ${i}` }))).id);
    const first = Date.parse('2026-11-01T00:00:00Z');
    const outcomes = ['booked', 'callback', 'not_interested'];
    let written = 0;
    const started = Date.now();
    const items: CountedItem[] = Array.from({ length: conversations }, (_, i) => {
      const call = i % 3 !== 0;
      return {
        organization_id: orgId, id: uuidv7(), agent_id: agents[i % agents.length]!, status: 'ended', version: 3,
        ended_at: new Date(first + Math.floor((i * 30) / conversations) * DAY_MS + (i % 997) * 60_000).toISOString(), updated_at: '',
        ...(call ? { disconnection_reason: i % 10 ? 'completed' : 'no_answer', duration_sec: 30 + (i % 240), price_per_minute: 0.02 }
          : { end_reason: i % 4 ? 'user_ended' : 'inactivity', usage: { prompt_tokens: 900 + i % 300, completion_tokens: 120 + i % 50 } }),
        analysis: {
          successful: i % 2 === 0,
          data: { appointment_booked: i % 5 < 2, outcome: outcomes[i % 3] },
          data_types: { appointment_booked: 'boolean', outcome: 'enum' },
        },
      } as CountedItem;
    });
    // Each conversation's counter updates as the counting function makes them; ADD commutes, so the
    // updates of one counter item are summed into one write (what DynamoDB Local would take minutes for, one by one).
    const merged = new Map<string, { key: Record<string, unknown>; day: unknown; deltas: Record<string, number> }>();
    for (const item of items) {
      for (const { Update } of statsWrites('duration_sec' in item ? 'call' : 'chat', item).counters) {
        const u = Update!;
        const id = JSON.stringify(u.Key);
        const m = merged.get(id) ?? { key: u.Key as Record<string, unknown>, day: u.ExpressionAttributeValues![':day'], deltas: {} as Record<string, number> };
        for (const [alias, name] of Object.entries(u.ExpressionAttributeNames!)) {
          if (!alias.startsWith('#a')) continue;
          m.deltas[name] = (m.deltas[name] ?? 0) + Number(u.ExpressionAttributeValues![`:${alias.slice(1)}`]);
        }
        merged.set(id, m);
        written++;
      }
    }
    const writes = [...merged.values()];
    for (let i = 0; i < writes.length; i += 16) {
      await Promise.all(writes.slice(i, i + 16).map((m) => {
        const names: Record<string, string> = { '#e': 'entity', '#d': 'day' };
        const values: Record<string, unknown> = { ':e': 'STATS', ':d': m.day };
        const adds = Object.entries(m.deltas).map(([name, n], j) => ((names[`#a${j}`] = name), (values[`:a${j}`] = n), `#a${j} :a${j}`));
        return db().send(new UpdateCommand({ TableName: tableName(), Key: m.key, UpdateExpression: `SET #e = :e, #d = :d ADD ${adds.join(', ')}`, ExpressionAttributeNames: names, ExpressionAttributeValues: values }));
      }));
    }
    const writeSeconds = (Date.now() - started) / 1000;
    const counterItems = writes.length;
    const read = async (q: Record<string, string>) => {
      const cost: ReadCost = { requests: 0, readUnits: 0 };
      const t = process.hrtime.bigint();
      const out = await conversationAnalytics(orgId, ConversationAnalyticsQuery.parse(q), cost);
      return { out, cost, ms: Number(process.hrtime.bigint() - t) / 1e6 };
    };
    await read({ from: '2026-11-01', to: '2026-11-30' }); // warm the client
    const all = await read({ from: '2026-11-01', to: '2026-11-30' });
    const weekly = await read({ from: '2026-11-01', to: '2026-11-30', interval: 'week' });
    const oneAgent = await read({ from: '2026-11-01', to: '2026-11-30', agent_id: agents[0]!, channel: 'call' });
    const year = await read({ from: '2025-12-01', to: '2026-11-30' });
    const zoned = await read({ from: '2026-11-01', to: '2026-11-30', timezone: 'America/New_York' });
    const zonedAgent = await read({ from: '2026-11-01', to: '2026-11-30', agent_id: agents[0]!, channel: 'call', timezone: 'America/New_York' });
    const total = all.out.totals.calls + all.out.totals.chats;
    if (total !== conversations) throw new Error(`The counters hold ${total} conversations, not ${conversations}`);
    const row = (name: string, r: typeof all) => `| ${name} | ${r.out.totals.calls + r.out.totals.chats} | ${r.cost.requests} | ${r.cost.readUnits} | ${r.ms.toFixed(1)} ms |`;
    return [
      '## Analytics: one read over 10,000 ended conversations',
      '',
      `${conversations.toLocaleString('en-US')} ended and analysed conversations (calls and chats of 5 agents, a boolean and an enum field) over 30 UTC days, counted through the real counting function (statsWrites: ${written.toLocaleString('en-US')} counter updates, ${written / conversations} per conversation: four day items and their four hour items, summed per counter item into ${counterItems} ADD writes in ${writeSeconds.toFixed(1)} s on DynamoDB Local, since ADD commutes). What one GET /analytics/conversations reads (eventually consistent Query, ReturnConsumedCapacity):`,
      '',
      '| Read | Conversations counted | Requests | Read units | Time |',
      '| --- | ---: | ---: | ---: | ---: |',
      row('30 days by day, all agents and channels', all),
      row('30 days by week', weekly),
      row('30 days, one agent, calls', oneAgent),
      row('366-day window (30 days filled)', year),
      row('30 days by day in America/New_York, all agents and channels (hour items)', zoned),
      row('30 days in America/New_York, one agent, calls (hour items)', zonedAgent),
      '',
      'One agent\'s read is one Query of at most one item per day of the window; an all-agents read is five such Queries in parallel (the all-agents items are sharded in four, so concurrent ends of one organization spread over four items; the fifth is the unsharded item older counts and the OpenAI endpoint\'s usage live in). Either costs the same at 10,000 or 10 million conversations. A read in a time zone other than UTC reads the hour items instead (one per UTC hour that had an end, at most 24 per day of the window, from the four shards: ALL holds none), summed into the zone\'s local days; the window\'s first local day starts at 04:00 UTC here, so the ends of 1 November before it count on 31 October, outside the window.',
      '',
    ].join('\n');
  } finally {
    await platform.stop();
  }
}

if (require.main === module) {
  analyticsBenchmark().then((s) => console.log(s)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
