/**
 * Talk to an agent over the relay path from a terminal, as Twilio ConversationRelay would:
 *
 *   TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000 TWILIO_AUTH_TOKEN=local-token npm start   (in another terminal)
 *   TWILIO_AUTH_TOKEN=local-token npm run relay -- <agent_id> [--from +15555550100] [--data-dir .data]
 *   TWILIO_AUTH_TOKEN=local-token npm run relay -- --to <one of your numbers> [--from …]
 *
 * The command plays Twilio's part and the caller's (scripts/relay-terminal.ts): with `<agent_id>`
 * it gives the agent a number of its own (an imported one, named "relay terminal client", made
 * once); with `--to` it calls a number of yours, whose routing webhook (`inbound_webhook_url`) or
 * inbound agent answers. It posts Twilio's incoming-call webhook to the platform (signed with
 * TWILIO_AUTH_TOKEN, which the platform must have too; telephony stays simulated), opens the
 * ConversationRelay WebSocket the TwiML names and speaks its messages: `setup`, each line you type
 * as a `prompt` (`last: true`), `/press 5` as `dtmf`, `/interrupt` as `interrupt` with what you saw
 * so far of the reply; the agent's `text` tokens are printed as they come. When the session ends it
 * requests the `<Connect action>` and plays what the platform answers: a new session, a cold
 * transfer's `<Dial>`, a warm transfer's conference (the briefing and the outcome are shown; the
 * person hangs up after SIMULATED_CALL_SECONDS), a hang-up. `/quit` (or Ctrl-D, or the end of piped
 * input once it is answered) hangs up. Every turn is on the call as it happens: GET /api/v1/calls/<id>.
 *
 * Without TWILIO_AUTH_TOKEN the incoming call is made in this process (agents only) and what follows
 * a session's end cannot be played (the platform refuses unsigned callbacks): the client says so.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { SIGNING_HELP, TerminalCall } from './relay-terminal';

const usage = 'usage: npm run relay -- <agent_id> | --to <your number>  [--from +15555550100] [--data-dir .data]   (with `npm start` running; TWILIO_AUTH_TOKEN: the platform\'s)';

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { from: { type: 'string' }, to: { type: 'string' }, 'data-dir': { type: 'string' } } });
  const agentId = positionals[0];
  if (!agentId === !values.to) {
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
  const authToken = process.env.TWILIO_AUTH_TOKEN || undefined;
  const api = async (path: string) => {
    const res = await fetch(`${running.url}${path}`, { headers: { 'x-api-key': apiKey } });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as { data?: any; message?: string } };
  };

  if (agentId) {
    const agent = await api(`/api/v1/agents/${agentId}`);
    if (agent.status !== 200) {
      console.error(`Agent ${agentId}: ${agent.status} ${agent.body.message ?? ''}`);
      return 1;
    }
    if (agent.body.data.voice_pipeline !== 'relay') {
      console.error(`Agent ${agentId} uses the ${agent.body.data.voice_pipeline ?? 'realtime'} pipeline; set voice_pipeline to "relay" to talk to it here.`);
      return 1;
    }
  } else if (!authToken) {
    console.error(`--to calls a number as Twilio would, through the platform's incoming-call webhook, which needs Twilio's signature.\n${SIGNING_HELP}`);
    return 2;
  }
  if (!authToken) console.error(`[no TWILIO_AUTH_TOKEN: the call is made in this process, and what follows a session's end (a transfer, a hang-up) cannot be played. ${SIGNING_HELP}]`);

  const call = new TerminalCall({
    url: running.url,
    apiKey,
    authToken,
    accountSid: process.env.TWILIO_ACCOUNT_SID,
    publicBaseUrl: process.env.PUBLIC_BASE_URL,
    ...(agentId ? { agentId } : { to: values.to! }),
    from: values.from,
    write: (text) => process.stdout.write(text),
    inProcessAnswer: async (to, from, callSid) => {
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
      const { createInboundCall } = await import('../shared/domain/calls/inbound');
      const { relayInstructions } = await import('../shared/domain/relay/twiml');
      const answer = await createInboundCall({ to, from, providerCallId: callSid, provider: 'twilio' });
      if (answer.answer === 'reject') return { rejected: answer.reason };
      // At the concurrency limit with an overflow of forward or queue: this terminal has no carrier to forward or hold.
      if (answer.answer !== 'stream') return { rejected: `concurrency_limit (overflow ${answer.answer})` };
      return { twiml: (await relayInstructions(answer.call))?.body ?? '' };
    },
  });
  const lines = createInterface({ input: process.stdin, output: process.stdout, terminal: false });
  lines.on('line', (line) => call.input(line));
  // End of input (Ctrl-D, or a piped script read to its end): hang up once what was typed is answered.
  lines.once('close', () => call.input('/quit'));
  const result = await call.run();
  lines.close();
  return result.end === 'refused' ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
