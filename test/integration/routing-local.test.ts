/**
 * Per-caller routing locally (issue 42, item 6; docs/api.md "Try per-caller routing locally"): the
 * terminal client (`npm run relay -- --to <number>`, scripts/relay-terminal.ts) calls a number as
 * Twilio does, through the platform's signed incoming-call webhook, so the platform's own process
 * asks the number's `inbound_webhook_url` before answering. Driven in this process, then the
 * docs' worked example run as written (the command in a process of its own).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TerminalCall } from '../../scripts/relay-terminal';
import { runBash } from '../support/bash';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';
import { readBody } from '../support/stand-in';

const root = join(__dirname, '../..');
const SID = 'AC00000000000000000000000000000000';
const TOKEN = 'local-token';
const local = usePlatform({ env: { TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

/** The routing webhook: what it was asked, and what it answers (`answer`). */
const asked: { headers: Record<string, unknown>; body: any }[] = [];
let answer: unknown = {};
let webhook: Server;
let webhookUrl = '';
beforeAll(async () => {
  webhook = createServer(async (req, res) => {
    asked.push({ headers: req.headers, body: JSON.parse(await readBody(req)) });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
  webhookUrl = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/route`;
});
afterAll(() => new Promise((resolve) => webhook?.close(resolve)));

async function agent(body: Record<string, unknown>): Promise<string> {
  const made = await api('POST', '/api/v1/agents', { body: { voice_pipeline: 'relay', ...body } });
  expect(made.status).toBe(200);
  return made.body.data.id;
}

async function routedNumber(desk: string): Promise<string> {
  const number = await api('POST', '/api/v1/phone-numbers/import', { body: { phone: uniquePhone(), type: 'pstn', inbound_agent_id: desk, inbound_webhook_url: webhookUrl } });
  expect(number.status).toBe(200);
  return number.body.data.phone_number;
}

const terminal = (to: string) => new TerminalCall({ url: local().url, apiKey: local().key, authToken: TOKEN, accountSid: SID, to, from: '+14155550142', write: () => undefined });

it('--to: the platform asks the number\'s webhook before answering; the agent it picks answers with its variables', async () => {
  const desk = await agent({ name: 'Front desk', begin_message: 'Front desk, hello.' });
  const vip = await agent({ name: 'VIP desk', begin_message: 'Hello {{inbound.tier}} customer, this is the VIP desk.' });
  const to = await routedNumber(desk);
  answer = { agent_id: vip, variables: { tier: 'gold' } };
  asked.length = 0;
  const call = terminal(to);
  const done = call.run();
  await call.until((out) => out.includes('agent> Hello gold customer, this is the VIP desk.'), 'the VIP desk\'s greeting');
  expect(asked).toHaveLength(1);
  expect(asked[0]!.body).toMatchObject({ event: 'call.inbound', call: { from: '+14155550142', to } });
  expect(asked[0]!.headers['webhook-id']).toBe(call.callSid);
  call.input('Is this the VIP line?');
  call.input('/quit');
  const result = await done;
  expect(result.end).toBe('hung-up');
  // The caller hung up: the <Connect action> is still requested, as Twilio does (the call is over), and the call ends.
  expect(result.actions.map((a) => [a.params.CallStatus, a.params.SessionStatus, a.status])).toEqual([['completed', 'completed', 200]]);
  await local().platform.queue.waitForIdle();
  const made = (await api('GET', `/api/v1/calls/${result.callId}`)).body.data;
  expect(made).toMatchObject({ status: 'ended', direction: 'inbound', agent_id: vip, routing: { source: 'webhook' }, from_phone_number: '+14155550142', to_phone_number: to });
  expect(made.dynamic_variables['inbound.tier']).toBe('gold');
});

it('--to: a webhook that refuses the call is said and hung up, with no call made', async () => {
  const desk = await agent({ name: 'Front desk', begin_message: 'Front desk, hello.' });
  const to = await routedNumber(desk);
  answer = { reject: { message: 'Sorry, we are closed today.' } };
  const call = terminal(to);
  const result = await call.run();
  expect(result).toMatchObject({ end: 'agent-hung-up', sessions: 0 });
  expect(result.callId).toBeUndefined();
  expect(call.output).toContain('[said: Sorry, we are closed today.]');
  const calls = (await api('GET', `/api/v1/calls?agent_id=${desk}`)).body.data;
  expect(calls).toEqual([]);
});

it('--to: an agent on the realtime pipeline answers with a media stream, which the client cannot play: it hangs up and the call ends', async () => {
  const desk = await agent({ name: 'Front desk', begin_message: 'Front desk, hello.' });
  const voice = await agent({ name: 'Realtime desk', voice_pipeline: 'realtime' });
  const to = await routedNumber(desk);
  answer = { agent_id: voice };
  const call = terminal(to);
  const result = await call.run();
  expect(result).toMatchObject({ end: 'not-relay', sessions: 0 });
  expect(call.output).toContain('uses the realtime pipeline');
  await local().platform.queue.waitForIdle();
  const calls = (await api('GET', `/api/v1/calls?agent_id=${voice}`)).body.data;
  expect(calls.map((c: any) => [c.status, c.routing.source])).toEqual([['ended', 'webhook']]);
});

/** README's setup: everything of its first API example before its first request (as test/acceptance/api-doc-examples.test.ts takes it). */
function readmeSetup(url: string, key: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const first = [...readme.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).find((b) => b.includes('$BASE_URL'))!;
  return first.slice(0, first.indexOf('\ncurl ')).replace(/^export BASE_URL=http:\/\/localhost:3000 .*$/m, `export BASE_URL=${url}`).replace(/^KEY=\$\(cat \.data\/local-api-key\).*$/m, `KEY='${key}'`);
}

it('runs "Try per-caller routing locally" as written: the command calls the number, the webhook on localhost picks the VIP desk', async () => {
  const { url, key } = local();
  const docs = readFileSync(join(root, 'docs/api.md'), 'utf8');
  const at = docs.indexOf('\n#### Try per-caller routing locally\n');
  expect(at).toBeGreaterThan(0);
  const example = /^```bash\n([\s\S]*?)^```$/m.exec(docs.slice(at))![1]!;
  // The command finds the platform by its data directory (runtime.json, the API key), as beside `npm start`.
  const dataDir = mkdtempSync(join(tmpdir(), 'routing-local-'));
  writeFileSync(join(dataDir, 'runtime.json'), JSON.stringify({ url }));
  writeFileSync(join(dataDir, 'local-api-key'), `${key}\n`);
  const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body "$@"; }', `export DATA_DIR='${dataDir}'`,
    // Only the platform may fetch a loopback webhook: a call made in the command's own process would find it refused (routing `fallback`).
    'export ALLOW_LOOPBACK_FETCH=false', readmeSetup(url, key), example, 'echo "--- ran" >&2'].join('\n');
  try {
    const result = await runBash(script, root, 120_000);
    const report = `exit ${result.code}\n--- stderr\n${result.stderr.slice(-4000)}\n--- stdout\n${result.stdout.slice(-4000)}`;
    expect([result.code, report]).toEqual([0, expect.stringContaining('--- ran')]);
    // What the example's comments say it shows.
    const out = result.stdout;
    expect(out).toContain('http://localhost:4040/route\n');
    expect(out).toContain('agent> Hello gold customer, this is the VIP desk.\n');
    expect(out.trim().split('\n').at(-1)).toBe('inbound +14155550142 webhook gold');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 150_000);
