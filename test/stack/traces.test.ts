/**
 * The synthesized stack with tracing on (issue 43): every function's bundle registers the trace
 * export extension at init (lib/bundle.ts, shared/telemetry/lambda-extension.ts), so a request is
 * answered before its spans are exported, and the environment takes no other request until they
 * are (the local Lambda's Extensions API, shared/local/stack/extensions-api.ts). Tracing reaches
 * the functions through the standard settings, pointed at an in-process OTLP receiver, as an
 * operator's collector would be.
 */
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver';
import { expectCleanStack, startStackTier, type StackTier } from './support';

let otlp: OtlpReceiver;
let tier: StackTier;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  // A long export timeout: a function that waited for its export before answering would wait for the held receiver.
  tier = await startStackTier({ runTasks: false, network: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_TIMEOUT: '60000', OTEL_SERVICE_NAME: 'vap-stack-test' } });
}, 120_000);
afterAll(async () => {
  await tier?.stop();
  await otlp?.close();
}, 60_000);
afterEach(() => expectCleanStack(tier.stack));

const SERVER = 2;
const sendChatMessage = () => tier.stack.lambda.functions().find((f) => f.logicalId.startsWith('SendChatMessageFunction'))!.name;

it('answers a chat turn before its spans are exported, then exports them from the extension before the environment is used again', async () => {
  const agent = await tier.api('POST', '/api/v1/agents', { body: { name: 'Traced desk', prompt: 'Answer briefly.' } });
  expect(agent.status).toBe(200);
  const chat = await tier.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } });
  expect(chat.status).toBe(200);
  tier.model.reset();
  tier.model.script({ text: 'Hello there.' });
  // Warm the function (its first request registers the SDK), and let the warm-up's export finish.
  expect((await tier.api('POST', `/api/v1/chats/${chat.body.data.id}/messages`, { body: { content: 'Hi' } })).status).toBe(200);
  await otlp.waitFor((s) => s.kind === SERVER && s.name === 'POST /api/v1/chats/{id}/messages');
  const before = tier.stack.lambda.stats.get(sendChatMessage())!.coldStarts;

  const release = otlp.hold();
  try {
    tier.model.script({ text: 'Still here.' });
    const turn = await tier.api('POST', `/api/v1/chats/${chat.body.data.id}/messages`, { body: { content: 'Are you there?' } });
    // Answered while the receiver has not answered any export: the export is not on the answer's path.
    expect(turn.status).toBe(200);
    expect(turn.body.data.messages.at(-1)).toMatchObject({ role: 'agent', content: 'Still here.' });
    const traceId = turn.body.data.trace_id ?? chat.body.data.trace_id;
    // The extension exports after the answer: the turn's server span arrives, and its request waits for the receiver.
    await otlp.waitFor((s) => s.kind === SERVER && s.name === 'POST /api/v1/chats/{id}/messages' && s.traceId !== undefined && s.attributes['http.response.status_code'] === 200 && otlp.unanswered > 0);
    expect(typeof traceId === 'string' || traceId === undefined).toBe(true);
    // Its environment is still in the invocation (the extension has not asked for its next event):
    // a turn now is given another environment, as Lambda would.
    tier.model.script({ text: 'Yes.' });
    expect((await tier.api('POST', `/api/v1/chats/${chat.body.data.id}/messages`, { body: { content: 'Sure?' } })).status).toBe(200);
    expect(tier.stack.lambda.stats.get(sendChatMessage())!.coldStarts).toBe(before + 1);
  } finally {
    release();
  }
  expect(otlp.rejected).toEqual([]);
});

it('writes each chat turn\'s metrics as an EMF line from the bundle (Powertools Metrics, a chunk loaded as the model request leaves)', async () => {
  const from = tier.stack.logs.length;
  const agent = await tier.api('POST', '/api/v1/agents', { body: { name: 'Measured desk', prompt: 'Answer briefly.' } });
  const chat = await tier.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } });
  tier.model.script({ text: 'Counted.' });
  expect((await tier.api('POST', `/api/v1/chats/${chat.body.data.id}/messages`, { body: { content: 'Count me' } })).status).toBe(200);
  // A function's log lines reach the log after its answer may (they come from its environment's
  // stdout, as CloudWatch Logs gets them apart from the response): read until the turn's is there.
  const replyLine = () => tier.stack.logs
    .slice(from)
    .filter((line) => line.includes('SendChatMessageFunction') && line.includes('"CloudWatchMetrics"'))
    .map((line) => JSON.parse(line.slice(line.indexOf('{'))))
    .find((m) => m.Channel === 'chat' && typeof m.ReplyLatency !== 'undefined');
  for (let i = 0; i < 100 && !replyLine(); i++) await new Promise((r) => setTimeout(r, 20));
  const reply = replyLine();
  expect(reply).toMatchObject({ _aws: { CloudWatchMetrics: [expect.objectContaining({ Namespace: 'VoiceAgentPlatform' })] }, Replies: 1 });
  expect(tier.stack.logs.slice(from).filter((line) => /metrics/i.test(line) && /warn|could not/i.test(line))).toEqual([]);
});
