/**
 * Black-box: a traffic split between published versions (docs/api.md, "Traffic split between
 * versions") through the HTTP API on the local runtime. Validation with nothing half-written; the
 * split's id on the agent and on every conversation it draws; 500 chats close to the weights;
 * one version per person on chats, outbound calls and the OpenAI endpoint; pins never overridden;
 * the publish gate; ending and promoting in one PATCH; the results of a known data set (real chats
 * whose outcome the local analyzer judges) against a hand computation of the z-test; another
 * organization neither reads the results nor borrows the versions.
 *
 * The platform's clock runs `offset` ms ahead of real time, so a chat can last the 2 s the local
 * analyzer asks of a successful conversation without the test waiting for them.
 */
import { drawVersion } from '../../shared/domain/agents/traffic-split';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { systemClock } from '../../shared/local/clock';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

let offset = 0;
const keyA = generateApiKey();
const keyB = generateApiKey();
// 2,000 chats in a few seconds: above the default 1,200 requests a minute of one key.
const local = usePlatform({ apiKeys: [keyA, keyB], voice: false, clock: { ...systemClock, now: () => Date.now() + offset }, env: { RATE_LIMIT_PER_MINUTE: '100000', WIDGET_CHATS_PER_MINUTE: '1000', WIDGET_ADDRESS_CHATS_PER_MINUTE: '1000' } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

/** An agent of the key's organization with `versions` published versions (each its own begin message). */
async function agentWithVersions(versions: number, key = keyA, extra: Record<string, unknown> = {}): Promise<{ id: string; organization_id: string }> {
  const agent = await api('POST', '/api/v1/agents', { key, body: { name: 'Split desk', begin_message: 'Hello from the draft.', ...extra } });
  expect(agent.status).toBe(200);
  for (let v = 1; v <= versions; v++) {
    expect((await api('PATCH', `/api/v1/agents/${agent.body.data.id}`, { key, body: { begin_message: `Hello from version ${v}.` } })).status).toBe(200);
    expect((await api('POST', `/api/v1/agents/${agent.body.data.id}/versions`, { key, body: { description: `v${v}` } })).status).toBe(200);
  }
  return agent.body.data;
}

const setSplit = (agentId: string, split: unknown, key = keyA) => api('PATCH', `/api/v1/agents/${agentId}`, { key, body: { traffic_split: split } });
const startChat = (body: Record<string, unknown>, key = keyA) => api('POST', '/api/v1/chats', { key, body });
const paths = (res: { body: any }) => res.body.error.details.fields.map((f: { path: string }) => f.path);

/** Runs `work` over `items`, `width` at a time. */
async function pool<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!);
    }
  }));
  return out;
}

describe('setting a split', () => {
  it('refuses each bad split with a 400 naming it, and writes nothing', async () => {
    const agent = await agentWithVersions(2);
    const cases: [unknown, string, RegExp][] = [
      [[{ version: 1, weight: 100 }], 'traffic_split', /at least 2/],
      [Array.from({ length: 6 }, (_, i) => ({ version: 1 + (i % 2), weight: i < 4 ? 16 : 18 })), 'traffic_split', /at most 5/],
      [[{ version: 1, weight: 50 }, { version: 2, weight: 40 }], 'traffic_split', /sum to 100 \(they sum to 90\)/],
      [[{ version: 1, weight: 0 }, { version: 2, weight: 100 }], 'traffic_split.0.weight', /at least 1/],
      [[{ version: 1, weight: 50 }, { version: 1, weight: 50 }], 'traffic_split.1.version', /listed twice/],
      [[{ version: 1, weight: 50 }, { version: 2, weight: 50, note: 'x' }], 'traffic_split.1.note', /./],
      [[{ version: 1, weight: 50.5 }, { version: 2, weight: 49.5 }], 'traffic_split.0.weight', /./],
      [[{ version: 1, weight: 50 }, { version: 7, weight: 50 }], 'traffic_split.1.version', /has no version 7/],
      ['half', 'traffic_split', /./],
    ];
    for (const [split, path, message] of cases) {
      const res = await setSplit(agent.id, split);
      expect([res.status, JSON.stringify(split)]).toEqual([400, JSON.stringify(split)]);
      expect(paths(res)).toContain(path);
      expect(JSON.stringify(res.body.error)).toMatch(message);
    }
    const after = (await api('GET', `/api/v1/agents/${agent.id}`)).body.data;
    expect(after).toMatchObject({ traffic_split: null, traffic_split_id: null, published_version: 2 });
  });

  it('gives the split an id, kept when the same split is sent again and new at each change', async () => {
    const agent = await agentWithVersions(3);
    const first = await setSplit(agent.id, [{ version: 1, weight: 70 }, { version: 2, weight: 30 }]);
    expect(first.status).toBe(200);
    expect(first.body.data.traffic_split).toEqual([{ version: 1, weight: 70 }, { version: 2, weight: 30 }]);
    const id = first.body.data.traffic_split_id;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await setSplit(agent.id, [{ version: 1, weight: 70 }, { version: 2, weight: 30 }])).body.data.traffic_split_id).toBe(id);
    const changed = (await setSplit(agent.id, [{ version: 1, weight: 60 }, { version: 2, weight: 30 }, { version: 3, weight: 10 }])).body.data.traffic_split_id;
    expect(changed).not.toBe(id);
    const chat = (await startChat({ agent_id: agent.id })).body.data;
    expect(chat.traffic_split_id).toBe(changed);
    expect([1, 2, 3]).toContain(chat.agent_version);
    // A pin is never overridden, and records no split.
    expect((await startChat({ agent_id: agent.id, agent_version: 3 })).body.data).toMatchObject({ agent_version: 3, traffic_split_id: null });
    expect((await startChat({ agent_id: agent.id, agent_version: 'draft' })).body.data).toMatchObject({ agent_version: null, traffic_split_id: null });
  });

  it('follows the publish gate: with require_passing_tests every version needs a passed run (422), nothing written', async () => {
    const agent = await agentWithVersions(2, keyA, { require_passing_tests: false });
    const gated = await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { require_passing_tests: true, traffic_split: [{ version: 1, weight: 50 }, { version: 2, weight: 50 }] } });
    expect(gated.status).toBe(422);
    expect(gated.body.error.details.reason).toBe('tests_required');
    expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data).toMatchObject({ require_passing_tests: false, traffic_split: null });
    expect((await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { require_passing_tests: true } })).status).toBe(200);
    const stored = await setSplit(agent.id, [{ version: 1, weight: 50 }, { version: 2, weight: 50 }]);
    expect([stored.status, stored.body.error?.details.reason]).toEqual([422, 'tests_required']);
    // Ending a split is not gated (everyone goes back to the published version).
    expect((await setSplit(agent.id, null)).status).toBe(200);
  });
});

describe('drawing', () => {
  // 500 here (about 35 ms a chat on this machine's DynamoDB Local); the unit test draws 10,000.
  it('sends 500 chats close to the weights (80/20 within 7 points: 3.9 standard deviations)', async () => {
    const agent = await agentWithVersions(2);
    const split = (await setSplit(agent.id, [{ version: 1, weight: 80 }, { version: 2, weight: 20 }])).body.data.traffic_split_id;
    const chats = await pool(Array.from({ length: 500 }, (_, i) => i), 8, async () => (await startChat({ agent_id: agent.id })).body.data);
    expect(chats.every((c) => c.traffic_split_id === split)).toBe(true);
    const share = chats.filter((c) => c.agent_version === 2).length / chats.length;
    expect(Math.abs(share - 0.2)).toBeLessThan(0.07);
    // The version's own behaviour: its frozen begin message.
    const two = chats.find((c) => c.agent_version === 2)!;
    expect(two.messages[0].content).toBe('Hello from version 2.');
  }, 120_000);

  it('is sticky per person: a contact on chats and calls, a callee\'s number, an OpenAI user', async () => {
    const agent = await agentWithVersions(2);
    const split = (await setSplit(agent.id, [{ version: 1, weight: 50 }, { version: 2, weight: 50 }])).body.data.traffic_split_id;
    const imported = await api('POST', '/api/v1/phone-numbers/import', { body: { phone: uniquePhone('+1206'), type: 'pstn' } });
    expect(imported.status).toBe(200);
    const from = imported.body.data.phone_number;
    const contacts = await pool(Array.from({ length: 8 }, (_, i) => i), 4, async (i) =>
      (await api('POST', '/api/v1/contacts', { body: { first_name: `P${i}`, phone: `+1206555${String(1000 + i)}` } })).body.data as { id: string; phone: string });
    const seen = new Set<number>();
    for (const contact of contacts) {
      const versions: number[] = [];
      for (let k = 0; k < 3; k++) versions.push((await startChat({ agent_id: agent.id, contact_id: contact.id })).body.data.agent_version);
      const call = await api('POST', '/api/v1/calls', { body: { agent_id: agent.id, from_phone_number: from, to_phone_number: contact.phone, contact_id: contact.id } });
      expect(call.status).toBe(200);
      expect(call.body.data.traffic_split_id).toBe(split);
      versions.push(call.body.data.agent_version);
      expect(new Set(versions).size).toBe(1);
      seen.add(versions[0]!);
    }
    // Eight people under 50/50 all on one side: 1 in 128; the split reaches both versions.
    expect(seen).toEqual(new Set([1, 2]));
    // A callee with no contact: keyed by the number.
    const callee = '+12065559876';
    const byNumber = await pool([0, 1, 2], 3, async () => (await api('POST', '/api/v1/calls', { body: { agent_id: agent.id, from_phone_number: from, to_phone_number: callee } })).body.data.agent_version);
    expect(new Set(byNumber).size).toBe(1);
    // The OpenAI-compatible endpoint with a bare id: keyed by `user`; its answer's model names the version.
    const ask = async (user: string) => {
      const res = await fetch(`${local().url}/api/v1/openai/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: agent.id, user, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { model: string }).model;
    };
    for (const user of ['user-a', 'user-b', 'user-c']) {
      const models = [await ask(user), await ask(user), await ask(user)];
      expect(new Set(models).size).toBe(1);
      expect(models[0]).toMatch(new RegExp(`^${agent.id}@[12]$`));
    }
  }, 60_000);

  it('is sticky per widget visitor: each visitor_id meets one version on every widget chat, as the hash says', async () => {
    const widget = await api('POST', '/api/v1/widget-settings', { body: { name: 'Split widget', allowed_origins: [] } });
    expect(widget.status).toBe(200);
    const agent = await agentWithVersions(2, keyA, { widget_settings_id: widget.body.data.id });
    const variants = [{ version: 1, weight: 50 }, { version: 2, weight: 50 }];
    const split = (await setSplit(agent.id, variants)).body.data.traffic_split_id;
    const seen = new Set<number>();
    for (let v = 0; v < 8; v++) {
      const visitor = `visitor-${v}-${split.slice(-8)}`;
      const versions = [];
      for (let k = 0; k < 2; k++) {
        const started = await fetch(`${local().url}/api/v1/widget/${widget.body.data.id}/chats`, {
          method: 'POST', headers: { origin: 'https://shop.example.com', 'content-type': 'application/json' }, body: JSON.stringify({ visitor_id: visitor }),
        });
        expect(started.status).toBe(200);
        const chat = (await api('GET', `/api/v1/chats/${((await started.json()) as { data: { id: string } }).data.id}`)).body.data;
        expect(chat.traffic_split_id).toBe(split);
        versions.push(chat.agent_version);
      }
      expect(versions).toEqual([drawVersion(split, variants, `visitor:${visitor}`), drawVersion(split, variants, `visitor:${visitor}`)]);
      seen.add(versions[0]);
    }
    // A visitor_id that is not 8–64 safe characters is a 400 naming it.
    const bad = await fetch(`${local().url}/api/v1/widget/${widget.body.data.id}/chats`, { method: 'POST', headers: { origin: 'https://shop.example.com', 'content-type': 'application/json' }, body: JSON.stringify({ visitor_id: 'x' }) });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('visitor_id');
  });

  it('ends: null sends everyone to published_version; promoting a variant and ending is one PATCH', async () => {
    const agent = await agentWithVersions(3);
    expect((await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { published_version: 1 } })).status).toBe(200);
    await setSplit(agent.id, [{ version: 2, weight: 50 }, { version: 3, weight: 50 }]);
    expect((await setSplit(agent.id, null)).body.data).toMatchObject({ traffic_split: null, traffic_split_id: null, published_version: 1 });
    expect((await startChat({ agent_id: agent.id })).body.data).toMatchObject({ agent_version: 1, traffic_split_id: null });
    await setSplit(agent.id, [{ version: 2, weight: 50 }, { version: 3, weight: 50 }]);
    const promoted = await api('PATCH', `/api/v1/agents/${agent.id}`, { body: { published_version: 3, traffic_split: null } });
    expect(promoted.body.data).toMatchObject({ published_version: 3, traffic_split: null, traffic_split_id: null });
    expect((await startChat({ agent_id: agent.id })).body.data).toMatchObject({ agent_version: 3, traffic_split_id: null });
  });
});

describe('results', () => {
  it('reports a known data set per variant, and the z-test as computed by hand', async () => {
    const agent = await agentWithVersions(2);
    const split = (await setSplit(agent.id, [{ version: 1, weight: 50 }, { version: 2, weight: 50 }])).body.data.traffic_split_id;
    // Version 1: 9 successful of 12; version 2: 3 of 10. The local analyzer judges a chat successful
    // when it ended normally, lasted 2 s, and what the person said is not negative.
    const wanted: Record<number, { good: number; bad: number }> = { 1: { good: 9, bad: 3 }, 2: { good: 3, bad: 7 } };
    while (Object.values(wanted).some((w) => w.good + w.bad > 0)) {
      const chat = (await startChat({ agent_id: agent.id })).body.data;
      const left = wanted[chat.agent_version]!;
      if (left.good + left.bad === 0) continue; // left open: a chat that never ends is not counted
      const good = left.good > 0;
      good ? left.good-- : left.bad--;
      const said = good ? 'Thank you, that is great and very helpful.' : 'This is terrible and awful, I hate it.';
      expect((await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: said } })).status).toBe(200);
      offset += 3_000;
      expect((await api('POST', `/api/v1/chats/${chat.id}/end`)).status).toBe(200);
    }
    const read = () => api('GET', `/api/v1/agents/${agent.id}/traffic-split/results`);
    const results = await until(async () => (await read()).body.data, (d) => d.variants[0].analyzed === 12 && d.variants[1].analyzed === 10, 'the analyses counted');
    expect(results).toMatchObject({ agent_id: agent.id, traffic_split_id: split, status: 'active', ended_at: null });
    const [one, two] = results.variants;
    expect(one).toMatchObject({ version: 1, weight: 50, conversations: 12, analyzed: 12, successful: 9, success_rate: 0.75, ended: { user_ended: 12 }, comparison: null });
    expect(two).toMatchObject({ version: 2, weight: 50, conversations: 10, analyzed: 10, successful: 3, success_rate: 0.3, ended: { user_ended: 10 } });
    expect(one.average_duration_seconds).toBeGreaterThanOrEqual(3);
    // By hand: d = .3 − .75 = −.45; pooled p = 12/22, SE = √(12/22 · 10/22 · (1/12 + 1/10)) = .213201,
    // z = −2.110687, p = 2(1 − Φ(2.110687)) = .034799; Wald SE = √(.75·.25/12 + .3·.7/10) = .191377,
    // 95% CI = −.45 ± 1.959964 · .191377 = [−.825091, −.074909]. 3 successes: too few, said in a note.
    const c = two.comparison;
    expect(c.baseline_version).toBe(1);
    expect(c.difference).toBeCloseTo(-0.45, 6);
    expect(c.z).toBeCloseTo(-2.110687, 5);
    expect(c.p_value).toBeCloseTo(0.034799, 5);
    expect(c.ci95[0]).toBeCloseTo(-0.825091, 5);
    expect(c.ci95[1]).toBeCloseTo(-0.074909, 5);
    expect(c.note).toMatch(/Too few/);

    // Ended, its results stay readable (by default and by id); a window before it is empty.
    expect((await setSplit(agent.id, null)).status).toBe(200);
    const ended = (await read()).body.data;
    expect(ended).toMatchObject({ traffic_split_id: split, status: 'ended' });
    expect(ended.variants[0].conversations).toBe(12);
    expect((await api('GET', `/api/v1/agents/${agent.id}/traffic-split/results?traffic_split_id=${split}`)).body.data.variants[1].successful).toBe(3);
    const before = (await api('GET', `/api/v1/agents/${agent.id}/traffic-split/results?from=2020-01-01&to=2020-01-31`)).body.data;
    expect(before.variants.map((v: { conversations: number }) => v.conversations)).toEqual([0, 0]);
    expect(before.variants[1].comparison.note).toMatch(/Nothing to compare/);
    // Bad windows and unknown splits.
    expect(paths(await api('GET', `/api/v1/agents/${agent.id}/traffic-split/results?from=2026-02-01&to=2026-01-01`))).toEqual(['to']);
    expect(paths(await api('GET', `/api/v1/agents/${agent.id}/traffic-split/results?from=yesterday`))).toEqual(['from']);
    expect((await api('GET', `/api/v1/agents/${agent.id}/traffic-split/results?traffic_split_id=nope`)).status).toBe(404);
  }, 60_000);

  it('answers 404 for an agent that never had a split', async () => {
    const agent = await agentWithVersions(0);
    expect((await api('GET', `/api/v1/agents/${agent.id}/traffic-split/results`)).status).toBe(404);
  });
});

describe('tenant isolation', () => {
  it('another organization cannot read the results, change the split, nor use another agent\'s versions', async () => {
    const agentA = await agentWithVersions(2);
    await setSplit(agentA.id, [{ version: 1, weight: 50 }, { version: 2, weight: 50 }]);
    expect((await api('GET', `/api/v1/agents/${agentA.id}/traffic-split/results`, { key: keyB })).status).toBe(404);
    expect((await setSplit(agentA.id, null, keyB)).status).toBe(404);
    // B's agent has one version: A's version 2 is not B's to split to.
    const agentB = await agentWithVersions(1, keyB);
    const borrowed = await setSplit(agentB.id, [{ version: 1, weight: 50 }, { version: 2, weight: 50 }], keyB);
    expect(borrowed.status).toBe(400);
    expect(paths(borrowed)).toEqual(['traffic_split.1.version']);
    expect((await api('GET', `/api/v1/agents/${agentA.id}`)).body.data.traffic_split).toHaveLength(2);
  });
});
