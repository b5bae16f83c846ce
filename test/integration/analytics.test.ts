import { randomUUID } from 'node:crypto';
import { installLocalQueue } from '../../shared/adapters/queue';
import { installLlm } from '../../shared/adapters/llm';
import type { LlmPort } from '../../shared/adapters/llm/port';
import { resetAnalyzer } from '../../shared/adapters/analysis';
import { resetAnalysisKey } from '../../shared/adapters/analysis/openai';
import { resetConfig } from '../../shared/config';
import { keys, Prefix } from '../../shared/db/keys';
import { getItem, putNew, queryAll, transact } from '../../shared/db/store';
import { createAgent, updateAgent } from '../../shared/domain/agents/service';
import { publishVersion } from '../../shared/domain/agents/versions';
import { chatCompletion } from '../../shared/domain/openai-compat/completions';
import { CreateAgentBody, UpdateAgentBody } from '../../shared/domain/agents/schemas';
import { analyzeCall } from '../../shared/domain/calls/analysis';
import { moveCall } from '../../shared/domain/calls/lifecycle';
import { newCallWrites, type AgentItem } from '../../shared/domain/calls/service';
import { STATUS_RANK } from '../../shared/domain/calls/state';
import { endChat, startChat } from '../../shared/domain/chats/service';
import { analyzeChat } from '../../shared/domain/chats/analysis';
import { sendMessage } from '../../shared/domain/chats/turns';
import { allShardOf, syncConversationStats } from '../../shared/domain/analytics/counters';
import { reanalyzeCall, reanalyzeChat } from '../../shared/domain/analytics/reanalyze';
import { conversationAnalytics } from '../../shared/domain/analytics/service';
import { ConversationAnalyticsQuery } from '../../shared/domain/analytics/schemas';
import { ConflictError, NotFoundError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { bucketPercentiles, latencyBuckets } from '../../shared/domain/conversations/latency';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';

logger.setLogLevel('SILENT');

/**
 * Analytics counters against DynamoDB Local, through the real end paths (a chat's end, a call's
 * end through the call state machine), the real analysis jobs (the openai analyzer against an
 * OpenAI-compatible stand-in, so typed fields have values) and a re-analysis: after all of it,
 * every counter equals a recount made here from the stored conversations, independently of the
 * counting code; redelivered jobs count nothing twice.
 */
let model: OpenAiStandIn;
/** What the stand-in says for a transcript: the outcome is in the person's words. */
let verdict = (transcript: string) => ({
  successful: /book/.test(transcript),
  data: { outcome: /book/.test(transcript) ? 'booked' : /later/.test(transcript) ? 'undecided' : 'declined', wants_callback: /later/.test(transcript), notes: 'n/a' },
});
const saved = { ...process.env };

beforeAll(async () => {
  installLocalQueue({ send: async () => undefined });
  model = await startOpenAiStandIn({
    apiKey: 'sk-analytics',
    fallback: (body) => {
      const transcript = String(body.messages[1].content);
      const v = verdict(transcript);
      const data = body.response_format.json_schema.schema.properties.data ? { data: v.data } : {};
      return { text: JSON.stringify({ summary: 'A conversation.', sentiment: 'neutral', successful: v.successful, success_rationale: 'As the criteria say.', custom: [], ...data }) };
    },
  });
  Object.assign(process.env, { ANALYSIS_PROVIDER: 'openai', ANALYSIS_BASE_URL: model.url, ANALYSIS_API_KEY: 'sk-analytics' });
  resetConfig();
  resetAnalyzer();
  resetAnalysisKey();
  const llm: LlmPort = { name: 'local', complete: async () => ({ text: 'Noted.', toolCalls: [], usage: { promptTokens: 11, completionTokens: 4 } }) };
  installLlm(llm);
});
afterAll(async () => {
  installLocalQueue(undefined);
  installLlm(undefined);
  process.env = saved;
  resetConfig();
  resetAnalyzer();
  resetAnalysisKey();
  await model.close();
});

const FIELDS = [
  { name: 'outcome', type: 'enum', description: 'What the person decided', options: ['booked', 'declined', 'undecided'] },
  { name: 'wants_callback', type: 'boolean', description: 'Whether they asked to be called back' },
  { name: 'notes', type: 'string', description: 'Anything else' },
];

const newOrg = () => `00000000-0000-7000-8000-${Math.random().toString(16).slice(2, 14).padEnd(12, '0')}`;

async function chatSaying(orgId: string, agentId: string, words: string[]) {
  const chat = await startChat(orgId, { agent_id: agentId });
  for (const w of words) await sendMessage(orgId, chat.id, w);
  await endChat(orgId, chat.id);
  await analyzeChat(orgId, chat.id);
  return chat.id;
}

/** A call through the state machine: created ringing, answered and ended `completed` after `seconds`, then its analysis job. */
async function callSaying(orgId: string, agent: AgentItem & { id: string }, said: string, seconds: number, price = 0.05) {
  const { item, writes } = newCallWrites(orgId, {
    agentId: agent.id, agent, number: null, channel: 'web', direction: 'outbound', from: '', to: '',
    contactId: null, campaignId: null, metadata: {}, dynamicVariables: {}, status: 'ringing',
  });
  // The call item with a per-minute price (a web call has none), then its index entries, as createCall writes them.
  item.price_per_minute = price;
  await transact([putNew({ ...item }), ...writes]);
  const at = new Date().toISOString();
  await moveCall(item, { status: 'ended', rank: STATUS_RANK.ended, reason: 'completed', answered: true }, {
    at, durationSec: seconds, transcript: [{ role: 'agent', text: 'Hello, how can I help?', time_sec: 0 }, { role: 'user', text: said, time_sec: 2 }],
  });
  await analyzeCall(orgId, item.id);
  return item.id;
}

const latencyOf = (counts: Record<string, Record<string, number>>) => ({ e2e: bucketPercentiles(counts.e2e), model: bucketPercentiles(counts.model) });

/** The counters' answer, recounted here from the stored calls and chats (not through the counting code). */
async function recount(orgId: string, filter: { agent_id?: string; channel?: 'call' | 'chat' } = {}) {
  const out = { calls: 0, chats: 0, ended: {} as Record<string, number>, successful: 0, analyzed: 0, seconds: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0, fields: {} as Record<string, Record<string, number>>, versions: {} as Record<string, { conversations: number; analyzed: number; successful: number }> };
  // Reply times: bucket counts per member, overall and per version (a call's from its transcript, a chat's as its end stored them).
  type Counts = Record<string, Record<string, number>>;
  const buckets: Counts = {};
  const versionBuckets: Record<string, Counts> = {};
  const addBuckets = (into: Counts, from: Counts) => {
    for (const [m, counts] of Object.entries(from)) for (const [b, n] of Object.entries(counts)) (into[m] ??= {})[b] = (into[m]![b] ?? 0) + n;
  };
  for await (const item of queryAll<any>({ pkName: 'pk', pkValue: keys.partition(orgId) })) {
    const isCall = item.sk.startsWith(Prefix.call);
    if (!isCall && !item.sk.startsWith(Prefix.chat)) continue;
    if (item.status !== 'ended') continue;
    if (filter.agent_id && item.agent_id !== filter.agent_id) continue;
    if (filter.channel && filter.channel !== (isCall ? 'call' : 'chat')) continue;
    const versionName = typeof item.agent_version === 'number' ? String(item.agent_version) : 'draft';
    const version = (out.versions[versionName] ??= { conversations: 0, analyzed: 0, successful: 0 });
    const replies: Counts = isCall ? latencyBuckets((item.transcript ?? []).map((t: any) => t.latency_ms)) : (item.latency_buckets ?? {});
    addBuckets(buckets, replies);
    addBuckets((versionBuckets[versionName] ??= {}), replies);
    version.conversations++;
    if (item.analysis) version.analyzed++;
    if (item.analysis?.successful) version.successful++;
    const reason = isCall ? item.disconnection_reason : item.end_reason;
    out.ended[reason] = (out.ended[reason] ?? 0) + 1;
    if (isCall) {
      out.calls++;
      out.seconds += item.duration_sec;
      out.cost += Math.ceil(item.duration_sec / 60) * item.price_per_minute;
    } else {
      out.chats++;
      out.prompt_tokens += item.usage.prompt_tokens;
      out.completion_tokens += item.usage.completion_tokens;
    }
    if (item.analysis) {
      out.analyzed++;
      if (item.analysis.successful) out.successful++;
      for (const f of FIELDS.filter((f) => f.type !== 'string')) {
        const v = item.analysis.data?.[f.name];
        if (v === null || v === undefined) continue;
        (out.fields[f.name] ??= {})[String(v)] = (out.fields[f.name]![String(v)] ?? 0) + 1;
      }
    }
  }
  return {
    calls: out.calls, chats: out.chats, ended: out.ended, successful: out.successful, analyzed: out.analyzed,
    minutes: Math.round((out.seconds / 60) * 100) / 100, prompt_tokens: out.prompt_tokens, completion_tokens: out.completion_tokens, openai_requests: 0,
    cost: Math.round(out.cost * 10_000) / 10_000, fields: out.fields,
    versions: Object.fromEntries(Object.entries(out.versions).map(([v, f]) => [v, { ...f, latency: latencyOf(versionBuckets[v] ?? {}) }])),
    latency: latencyOf(buckets),
  };
}

const today = () => new Date().toISOString().slice(0, 10);
const read = (orgId: string, q: { agent_id?: string; channel?: 'call' | 'chat' | 'openai'; from?: string; to?: string; timezone?: string } = {}) =>
  conversationAnalytics(orgId, ConversationAnalyticsQuery.parse({ from: today(), to: today(), ...q }));
const dayAfter = (day: string, n: number) => new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

describe('conversation analytics counters', () => {
  it('equal a recount from the stored conversations after ends, analyses, redeliveries and re-analyses', async () => {
    const orgId = newOrg();
    const sales = await createAgent(orgId, CreateAgentBody.parse({ name: 'Sales', analysis_fields: FIELDS, success_criteria: 'An appointment is booked.' }));
    const support = await createAgent(orgId, CreateAgentBody.parse({ name: 'Support' }));
    const salesItem = (await getItem<AgentItem & { id: string }>(keys.agent(orgId, sales.id)))!;

    const chats = [
      await chatSaying(orgId, sales.id, ['I want to book Tuesday']),
      await chatSaying(orgId, sales.id, ['Maybe later', 'Call me later']),
      await chatSaying(orgId, sales.id, ['No thanks']),
      await chatSaying(orgId, support.id, ['Where is my order?']),
    ];
    const calls = [await callSaying(orgId, salesItem, 'Yes, book it', 95), await callSaying(orgId, salesItem, 'Call me later', 30, 0.1)];

    // A redelivered job and a second sync count nothing again.
    await analyzeChat(orgId, chats[0]!);
    await analyzeCall(orgId, calls[0]!);
    expect(await syncConversationStats('chat', orgId, chats[1]!)).toBe(false);


    let totals = (await read(orgId)).totals;
    expect(totals).toEqual(await recount(orgId));
    // The all-agents counts sit in the shards (the conversation's id picks one), never in one item for every end.
    const shardsUsed: string[] = [];
    for (const agent of ['ALL', 'ALL~0', 'ALL~1', 'ALL~2', 'ALL~3']) {
      for await (const item of queryAll<{ pk: string }>({ pkName: 'pk', pkValue: keys.conversationStats(orgId, agent, 'ALL') })) shardsUsed.push(item.pk.split('#').at(-2)!);
    }
    expect(shardsUsed).not.toContain('ALL');
    // Exactly the shards the six conversations' ids pick (ids are random: all six in one shard is a
    // 1-in-1,024 draw, so "more than one shard" would fail now and then).
    expect([...new Set(shardsUsed)].sort()).toEqual([...new Set([...chats, ...calls].map(allShardOf))].sort());
    expect(totals).toMatchObject({ calls: 2, chats: 4, analyzed: 6, successful: 2, prompt_tokens: 55, completion_tokens: 20, minutes: 2.08, cost: 0.1 + 0.1 });
    expect(totals.fields).toEqual({ outcome: { booked: 2, undecided: 2, declined: 1 }, wants_callback: { true: 2, false: 3 } });
    expect(totals.ended).toEqual({ completed: 2, user_ended: 4 });

    // Re-analysis with changed settings and a changed verdict: the counts move, never double.
    await updateAgent(orgId, sales.id, UpdateAgentBody.parse({ analysis_fields: FIELDS.filter((f) => f.name !== 'wants_callback') }));
    verdict = (transcript) => ({ successful: /later/.test(transcript), data: { outcome: /later/.test(transcript) ? 'booked' : 'declined', wants_callback: false, notes: 'x' } });
    const again = await reanalyzeChat(orgId, chats[1]!);
    expect(again.analysis).toMatchObject({ successful: true, data: { outcome: 'booked', notes: 'x' } });
    expect(again.analysis!.data).not.toHaveProperty('wants_callback');
    await reanalyzeChat(orgId, chats[1]!); // twice: the same analysis, counted once
    await reanalyzeCall(orgId, calls[0]!);

    totals = (await read(orgId)).totals;
    expect(totals).toEqual(await recount(orgId));
    expect(totals).toMatchObject({ analyzed: 6, successful: 2 });
    // The hour items moved with the days: a read in a zone (local days around today) recounts the same.
    for (const timezone of ['America/New_York', 'Asia/Kolkata']) {
      expect((await read(orgId, { timezone, from: dayAfter(today(), -1), to: dayAfter(today(), 1) })).totals).toEqual(await recount(orgId));
      expect((await read(orgId, { timezone, from: dayAfter(today(), -1), to: dayAfter(today(), 1), agent_id: sales.id })).totals).toEqual(await recount(orgId, { agent_id: sales.id }));
    }
    expect(totals.fields).toEqual({ outcome: { booked: 2, undecided: 1, declined: 2 }, wants_callback: { true: 1, false: 2 } });

    // Each partition equals its own recount: per agent, per channel, both.
    for (const q of [{ agent_id: sales.id }, { agent_id: support.id }, { channel: 'call' as const }, { channel: 'chat' as const }, { agent_id: sales.id, channel: 'chat' as const }]) {
      expect((await read(orgId, q)).totals).toEqual(await recount(orgId, q));
    }
  });

  it('re-analysis: 409 before the end, 404 for another organization\'s conversation', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'A' }));
    const chat = await startChat(orgId, { agent_id: agent.id });
    await expect(reanalyzeChat(orgId, chat.id)).rejects.toBeInstanceOf(ConflictError);
    await expect(reanalyzeChat(newOrg(), chat.id)).rejects.toBeInstanceOf(NotFoundError);
    // Nothing is counted for an open chat.
    expect((await read(orgId)).totals.chats).toBe(0);
  });

  it('breaks the figures down by the agent version each conversation ran', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Versioned', analysis_fields: FIELDS }));
    await chatSaying(orgId, agent.id, ['No thanks']);
    await publishVersion(orgId, agent.id, {});
    await chatSaying(orgId, agent.id, ['I want to book Monday']);
    await chatSaying(orgId, agent.id, ['Maybe later']);

    const totals = (await read(orgId, { agent_id: agent.id })).totals;

    expect(totals.versions).toEqual({ draft: expect.objectContaining({ conversations: 1, analyzed: 1, successful: 0 }), 1: expect.objectContaining({ conversations: 2, analyzed: 2, successful: 1 }) });
    expect(totals).toEqual(await recount(orgId, { agent_id: agent.id }));
  });

  it('reads the OpenAI-compatible endpoint\'s usage with channel=openai', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Endpoint' }));
    for (let i = 0; i < 2; i++) await chatCompletion(orgId, { model: agent.id, messages: [{ role: 'user', content: 'hello' }] } as never);

    const openai = (await read(orgId, { agent_id: agent.id, channel: 'openai' })).totals;

    expect(openai).toMatchObject({ openai_requests: 2, prompt_tokens: 22, completion_tokens: 8, calls: 0, chats: 0 });
    expect((await read(orgId, { channel: 'openai' })).totals.openai_requests).toBe(2);
  });

  it('answers 404 for an agent filter naming another organization\'s agent, not a window of zeros', async () => {
    const orgId = newOrg();
    const other = await createAgent(newOrg(), CreateAgentBody.parse({ name: 'Elsewhere' }));
    await expect(read(orgId, { agent_id: other.id })).rejects.toMatchObject({ statusCode: 404, details: { resource: 'Agent', id: other.id } });
    const own = await createAgent(orgId, CreateAgentBody.parse({ name: 'Mine' }));
    expect((await read(orgId, { agent_id: own.id })).totals.chats).toBe(0);
  });

  it('asks the model once per re-analysis however many race: a conflict re-applies the computed answer', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Raced', analysis_fields: FIELDS }));
    const chat = await chatSaying(orgId, agent.id, ['I want to book Friday']);
    const before = model.requests.length;

    const answers = await Promise.all(Array.from({ length: 10 }, () => reanalyzeChat(orgId, chat)));

    expect(answers.every((a) => a.analysis?.successful !== undefined)).toBe(true);
    expect(model.requests.length - before).toBe(10);
    expect((await read(orgId)).totals).toEqual(await recount(orgId));
  });

  it('splits a window into UTC days or Monday weeks clipped to it; one Query for an agent, one per all-agents shard', async () => {
    const orgId = newOrg();
    const cost = { requests: 0, readUnits: 0 };
    const weeks = await conversationAnalytics(orgId, ConversationAnalyticsQuery.parse({ from: '2026-11-04', to: '2026-11-20T23:00:00Z', interval: 'week' }), cost);
    expect(weeks.intervals.map((i) => [i.start, i.end])).toEqual([['2026-11-04', '2026-11-08'], ['2026-11-09', '2026-11-15'], ['2026-11-16', '2026-11-20']]);
    expect(cost.requests).toBe(5);
    const agentCost = { requests: 0, readUnits: 0 };
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Read' }));
    await conversationAnalytics(orgId, ConversationAnalyticsQuery.parse({ from: '2026-11-04', to: '2026-11-20', agent_id: agent.id }), agentCost);
    expect(agentCost.requests).toBe(1);
    const days = await conversationAnalytics(orgId, ConversationAnalyticsQuery.parse({ from: '2026-11-30T10:00:00+02:00', to: '2026-12-02' }));
    expect(days.intervals.map((i) => i.start)).toEqual(['2026-11-30', '2026-12-01', '2026-12-02']);
  });
});

describe('conversation analytics in a time zone', () => {
  /** An ended chat stored as its end writes it, counted by the sync the analysis job runs. */
  async function chatEndedAt(orgId: string, agentId: string, endedAt: string, extra: Record<string, unknown> = {}) {
    const id = randomUUID();
    await transact([putNew({
      ...keys.chat(orgId, id), organization_id: orgId, id, agent_id: agentId, status: 'ended', started_at: endedAt, ended_at: endedAt, updated_at: endedAt,
      end_reason: 'user_ended', usage: { prompt_tokens: 10, completion_tokens: 2 }, ...extra,
    })]);
    await syncConversationStats('chat', orgId, id);
    return id;
  }
  const zoned = (orgId: string, q: Record<string, string>) => conversationAnalytics(orgId, ConversationAnalyticsQuery.parse(q));
  const chatsPerDay = (a: { intervals: { start: string; end: string; chats: number }[] }) => a.intervals.map((i) => [i.start, i.end, i.chats]);

  it('counts a conversation ending at 02:00 UTC on the previous local day in America/New_York, on the same day in UTC', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Zoned' }));
    await chatEndedAt(orgId, agent.id, '2026-11-10T02:00:00.000Z');

    const window = { from: '2026-11-09', to: '2026-11-10' };
    const utc = await zoned(orgId, window);
    const newYork = await zoned(orgId, { ...window, timezone: 'America/New_York' });
    const oneAgent = await zoned(orgId, { ...window, timezone: 'America/New_York', agent_id: agent.id });

    expect(chatsPerDay(utc)).toEqual([['2026-11-09', '2026-11-09', 0], ['2026-11-10', '2026-11-10', 1]]);
    expect(chatsPerDay(newYork)).toEqual([['2026-11-09', '2026-11-09', 1], ['2026-11-10', '2026-11-10', 0]]);
    expect(chatsPerDay(oneAgent)).toEqual(chatsPerDay(newYork));
    expect(newYork.totals).toEqual(utc.totals);
    // An instant stands for its local day in the zone: 2026-11-10T03:00Z is the 9th in New York.
    expect((await zoned(orgId, { from: '2026-11-10T03:00:00Z', to: '2026-11-10T03:00:00Z', timezone: 'America/New_York' })).from).toBe('2026-11-09');
  });

  it('follows daylight saving time: a 23-hour local day and the days either side', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'DST' }));
    // New York springs forward on 2026-03-08 at 02:00 EST (07:00Z): -05:00 before, -04:00 after.
    for (const at of ['2026-03-08T04:30:00Z', '2026-03-08T05:30:00Z', '2026-03-09T03:30:00Z', '2026-03-09T04:30:00Z']) await chatEndedAt(orgId, agent.id, at);

    const newYork = await zoned(orgId, { from: '2026-03-07', to: '2026-03-09', timezone: 'America/New_York' });
    const utc = await zoned(orgId, { from: '2026-03-07', to: '2026-03-09' });

    // 23:30 EST on the 7th; 00:30 EST on the 8th; 23:30 EDT on the 8th; 00:30 EDT on the 9th.
    expect(chatsPerDay(newYork)).toEqual([['2026-03-07', '2026-03-07', 1], ['2026-03-08', '2026-03-08', 2], ['2026-03-09', '2026-03-09', 1]]);
    expect(chatsPerDay(utc)).toEqual([['2026-03-07', '2026-03-07', 0], ['2026-03-08', '2026-03-08', 2], ['2026-03-09', '2026-03-09', 2]]);
  });

  it('splits ISO weeks on the zone\'s Mondays', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Weeks' }));
    // Monday 2026-11-16 03:00Z is Sunday 22:00 in New York: the week before there, that Monday's week in UTC.
    await chatEndedAt(orgId, agent.id, '2026-11-16T03:00:00Z');

    const q = { from: '2026-11-09', to: '2026-11-22', interval: 'week' };
    expect(chatsPerDay(await zoned(orgId, { ...q, timezone: 'America/New_York' }))).toEqual([['2026-11-09', '2026-11-15', 1], ['2026-11-16', '2026-11-22', 0]]);
    expect(chatsPerDay(await zoned(orgId, q))).toEqual([['2026-11-09', '2026-11-15', 0], ['2026-11-16', '2026-11-22', 1]]);
  });

  it('an end counted before the hour items joins them, once, at its next sync; the days do not move', async () => {
    const orgId = newOrg();
    const agent = await createAgent(orgId, CreateAgentBody.parse({ name: 'Older' }));
    const day = { day: '2026-11-20', agent_id: agent.id, channel: 'chat', counts: { chats: 1, 'end#user_ended': 1, 'ver#draft#conversations': 1 } };
    // Counted before the hour items existed: a day count, no `hour` recorded, no hour item.
    const id = await chatEndedAt(orgId, agent.id, '2026-11-20T02:00:00Z', { stats_counted: day, usage: {} });
    const window = { from: '2026-11-19', to: '2026-11-20', timezone: 'America/New_York' };
    // The sync above found the day counted and added the hour (the whole contribution, once).
    expect(chatsPerDay(await zoned(orgId, window))).toEqual([['2026-11-19', '2026-11-19', 1], ['2026-11-20', '2026-11-20', 0]]);
    expect(await syncConversationStats('chat', orgId, id)).toBe(false);
    expect(chatsPerDay(await zoned(orgId, window))).toEqual([['2026-11-19', '2026-11-19', 1], ['2026-11-20', '2026-11-20', 0]]);
    // The days were left as they were (this test wrote no day item: the record says it was counted).
    expect((await zoned(orgId, { from: '2026-11-19', to: '2026-11-20' })).totals.chats).toBe(0);
  });

  it('refuses a zone that is not an IANA name (400 naming timezone), and channel=openai in a zone', async () => {
    const orgId = newOrg();
    const bad = ConversationAnalyticsQuery.safeParse({ from: '2026-11-01', to: '2026-11-02', timezone: 'Mars/Olympus_Mons' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path)).toEqual([['timezone']]);
    await expect(zoned(orgId, { from: '2026-11-01', to: '2026-11-02', timezone: 'Europe/Berlin', channel: 'openai' })).rejects.toMatchObject({ statusCode: 400, details: { fields: [{ path: 'timezone' }] } });
    // UTC's other names read the day items, as the default does (5 Queries: the shards and ALL).
    const cost = { requests: 0, readUnits: 0 };
    const etc = await conversationAnalytics(orgId, ConversationAnalyticsQuery.parse({ from: '2026-11-01', to: '2026-11-02', timezone: 'Etc/UTC' }), cost);
    expect(cost.requests).toBe(5);
    expect(etc.intervals).toHaveLength(2);
    // A zoned all-agents read queries the four shards' hours (ALL has none).
    const zonedCost = { requests: 0, readUnits: 0 };
    await conversationAnalytics(orgId, ConversationAnalyticsQuery.parse({ from: '2026-11-01', to: '2026-11-02', timezone: 'Asia/Tokyo' }), zonedCost);
    expect(zonedCost.requests).toBe(4);
  });
});
