/**
 * Talk to an agent over the relay path from a terminal, as Twilio ConversationRelay would:
 *
 *   npm start                       (in another terminal)
 *   npm run relay -- <agent_id> [--from +15555550100] [--data-dir .data]
 *
 * The agent must use the relay (`voice_pipeline` `relay`). The command takes the place of Twilio
 * and the caller: it gives the agent a number of its own (an imported one, named "relay terminal
 * client", made once), makes the incoming call the platform would make for Twilio's webhook, takes
 * the ConversationRelay TwiML the platform answers, opens its WebSocket URL (the local `/relay`)
 * and speaks ConversationRelay's messages: `setup`, each line you type as a `prompt` (`last: true`),
 * `/press 5` as `dtmf`, `/interrupt` as `interrupt` with what you saw so far of the reply; the
 * agent's `text` tokens are printed as they come, `sendDigits` and `end` are shown. `/quit` (or
 * Ctrl-D) hangs up. Every turn is on the call as it happens: GET /api/v1/calls/<id>.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const usage = 'usage: npm run relay -- <agent_id> [--from +15555550100] [--data-dir .data]   (with `npm start` running)';
const CLIENT_NUMBER_NAME = 'relay terminal client';

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { from: { type: 'string' }, 'data-dir': { type: 'string' } } });
  const agentId = positionals[0];
  if (!agentId) {
    console.error(usage);
    return 2;
  }
  const dataDir = resolve(values['data-dir'] ?? process.env.DATA_DIR ?? '.data');
  const runtimeFile = join(dataDir, 'runtime.json');
  if (!existsSync(runtimeFile)) {
    console.error(`No local runtime found (${runtimeFile}): start it with \`npm start\` first.\n${usage}`);
    return 2;
  }
  const running = JSON.parse(readFileSync(runtimeFile, 'utf8')) as { url: string; dynamoEndpoint: string; s3Endpoint: string; tableName: string; bucketName: string };
  const apiKey = process.env.API_KEY ?? readFileSync(join(dataDir, 'local-api-key'), 'utf8').trim().split('\n')[0]!;
  // The same settings the running platform gave its handlers: its table, its token key, its URLs.
  Object.assign(process.env, {
    DYNAMODB_ENDPOINT: running.dynamoEndpoint,
    TABLE_NAME: running.tableName,
    BUCKET_NAME: running.bucketName,
    S3_ENDPOINT: running.s3Endpoint,
    SECRETS_LOCAL_KEY_FILE: join(dataDir, 'secrets.key'),
    PUBLIC_BASE_URL: running.url,
    RELAY_URL: process.env.RELAY_URL ?? `${running.url.replace(/^http/, 'ws')}/relay`,
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
  });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${running.url}${path}`, { method, headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as { data?: any; message?: string } };
  };

  const agent = await api('GET', `/api/v1/agents/${agentId}`);
  if (agent.status !== 200) {
    console.error(`Agent ${agentId}: ${agent.status} ${agent.body.message ?? ''}`);
    return 1;
  }
  if (agent.body.data.voice_pipeline !== 'relay') {
    console.error(`Agent ${agentId} uses the ${agent.body.data.voice_pipeline ?? 'realtime'} pipeline; set voice_pipeline to "relay" to talk to it here.`);
    return 1;
  }
  const number = await numberFor(api, agentId);

  const { createInboundCall } = await import('../shared/domain/calls/inbound');
  const { relayInstructions } = await import('../shared/domain/relay/twiml');
  const callSid = `CA${Date.now().toString(16).padStart(32, '0')}`;
  const from = values.from ?? '+15555550100';
  const answer = await createInboundCall({ to: number, from, providerCallId: callSid, provider: 'twilio' });
  if (answer.answer === 'reject') {
    console.error(`The call was rejected: ${answer.reason}`);
    return 1;
  }
  const { call } = answer;
  const twiml = (await relayInstructions(call))?.body ?? '';
  const unxml = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  const url = twiml.match(/<ConversationRelay url="([^"]*)"/)?.[1];
  if (!url) {
    console.error(`The platform did not hand the call to ConversationRelay: ${twiml}`);
    return 1;
  }
  const params = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxml(m[1]!), unxml(m[2]!)]));
  const greeting = twiml.match(/ welcomeGreeting="([^"]*)"/)?.[1];

  const ws = new WebSocket(unxml(url));
  await new Promise<void>((resolveOpen, reject) => {
    ws.once('open', () => resolveOpen());
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => reject(new Error(`the relay refused the connection: ${res.statusCode} ${body}`)));
    });
    ws.once('error', reject);
  });
  const sendMessage = (m: unknown) => ws.send(JSON.stringify(m));
  sendMessage({ type: 'setup', sessionId: `VX${callSid.slice(2)}`, callSid, from, to: number, direction: 'inbound', customParameters: params });
  console.log(`Call ${call.id} (GET ${running.url}/api/v1/calls/${call.id}): type what the caller says; /press <key>, /interrupt, /quit.`);
  if (greeting) console.log(`agent> ${unxml(greeting)}`);

  let reply = '';
  // A line waits for the reply before it (as a caller waits for the agent to finish); /interrupt and /quit do not.
  let answering = false;
  const queued: string[] = [];
  const next = () => {
    while (!answering && queued.length && ws.readyState === ws.OPEN) {
      const text = queued.shift()!;
      if (text === '/quit') return ws.close(1000);
      const press = text.match(/^\/press\s+([0-9*#A-D])$/i);
      if (press) sendMessage({ type: 'dtmf', digit: press[1] });
      else sendMessage({ type: 'prompt', voicePrompt: text, lang: 'en-US', last: true });
      answering = true;
    }
  };
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as Record<string, unknown>;
    if (m.type === 'text') {
      if (!reply && m.token) process.stdout.write('agent> ');
      process.stdout.write(String(m.token));
      reply += String(m.token);
      if (m.last) {
        if (reply) process.stdout.write('\n');
        reply = '';
        answering = false;
        next();
      }
    } else if (m.type === 'sendDigits') console.log(`[the agent pressed ${String(m.digits)}]`);
    else if (m.type === 'end') {
      console.log(`[the agent ended the session: ${String(m.handoffData ?? '')}]`);
      ws.close(1000);
    } else console.log(`[${JSON.stringify(m)}]`);
  });
  const lines = createInterface({ input: process.stdin, output: process.stdout, terminal: false });
  const closed = new Promise<void>((r) => ws.once('close', () => r()));
  lines.on('line', (line) => {
    const text = line.trim();
    if (!text || ws.readyState !== ws.OPEN) return;
    if (text === '/interrupt') {
      sendMessage({ type: 'interrupt', utteranceUntilInterrupt: reply, durationUntilInterruptMs: 1000 });
      reply = '';
      answering = false;
      return next();
    }
    queued.push(text);
    next();
  });
  // End of input (Ctrl-D, or a piped script read to its end): hang up once what was typed is answered.
  lines.once('close', () => {
    queued.push('/quit');
    next();
  });
  await closed;
  lines.close();
  console.log(`Call ${call.id}: its transcript is on the call (GET /api/v1/calls/${call.id}).`);
  return 0;
}

/** The agent's number for this client: the one made before (named CLIENT_NUMBER_NAME), else a new imported one. */
async function numberFor(api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: { data?: any; message?: string } }>, agentId: string): Promise<string> {
  const held = await api('GET', '/api/v1/phone-numbers?limit=100&status=active');
  const mine = (held.body.data ?? []).find((n: any) => n.name === CLIENT_NUMBER_NAME && n.inbound_agent_id === agentId);
  if (mine) return mine.phone_number;
  const { tryNormalizeE164 } = await import('../shared/domain/common/phone');
  for (let attempt = 0; attempt < 20; attempt++) {
    const phone = tryNormalizeE164(`+1415${String(Math.floor(2_000_000 + Math.random() * 7_000_000))}`);
    if (!phone) continue;
    const made = await api('POST', '/api/v1/phone-numbers/import', { phone, type: 'pstn', name: CLIENT_NUMBER_NAME, inbound_agent_id: agentId });
    if (made.status === 200) return made.body.data.phone_number;
    if (made.status !== 409) throw new Error(`Importing a number for the agent failed: ${made.status} ${made.body.message ?? ''}`);
  }
  throw new Error('No free number could be imported for the agent');
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
