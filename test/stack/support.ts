import { randomBytes } from 'node:crypto';
import { provisionOrganizationKey } from '../../shared/local/stack/provision';
import { runStack, type RunningStack, type StackRunnerOptions } from '../../shared/local/stack/runner';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { startRealtimeStandIn, type ModelConnection, type RealtimeStandIn } from '../support/realtime-stand-in';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { assemblyDir, PRODUCTION_SETTINGS } from './settings';
import { startTlsFront, type TlsFront } from './tls-front';

/**
 * One test file's synthesized stack (issue 41): the assembly global-setup.ts synthesized, run by
 * shared/local/stack/runner.ts with the operator's secrets put, and the outside world as stand-ins:
 * Twilio (REST, calls, conferences), the Chat Completions model, the analysis model, the Realtime
 * model and a webhook receiver. The template's public URLs of the models (the deploy settings')
 * reach the stand-ins through `urls`, as DNS would; Twilio's API base, which the template cannot
 * set, through `network`.
 */
export interface StackTier {
  stack: RunningStack;
  /** The organization's API key (provisioned as `npm run admin` does after a deploy). */
  key: string;
  organizationId: string;
  twilio: TwilioCarrierStandIn;
  /** The conversation model (LLM_BASE_URL). */
  model: OpenAiStandIn;
  /** The post-call analysis model (ANALYSIS_BASE_URL): every request answered with a valid analysis. */
  analysis: OpenAiStandIn;
  realtime: RealtimeStandIn;
  /** The Realtime model's script for each connection, by the agent's `s2s_model`. */
  realtimeScripts: Map<string, (m: ModelConnection) => Promise<void>>;
  receiver: WebhookReceiver;
  /** An https URL (localhost, self-signed) that reaches a stand-in's http URL: production takes only https tool and webhook URLs. */
  secure: TlsFront['secure'];
  /** When the stack was ready (ms from the start of `startStackTier`). */
  startMs: number;
  api<T = any>(method: string, path: string, options?: { body?: unknown; key?: string | null; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; body: T; text: string }>;
  stop(): Promise<void>;
}

export const TWILIO_SID = 'AC0000000000000000000000000000a041';
export const TWILIO_TOKEN = 'stack-tier-auth-token';
export const LLM_KEY = 'sk-stand-in-llm';
export const ANALYSIS_KEY = 'sk-stand-in-analysis';
export const REALTIME_KEY = 'sk-stand-in-realtime';

/** The operator's secret values (by logical-id prefix: lib/telephony.ts, lib/llm.ts, lib/analysis.ts, lib/voice.ts). */
export const OPERATOR_SECRETS: Record<string, string> = {
  TelephonyTwilioCredentials: JSON.stringify({ account_sid: TWILIO_SID, auth_token: TWILIO_TOKEN }),
  LlmApiKey: JSON.stringify({ api_key: LLM_KEY }),
  AnalysisApiKey: JSON.stringify({ api_key: ANALYSIS_KEY }),
  VoiceRealtimeApiKey: JSON.stringify({ api_key: REALTIME_KEY }),
};

/** A valid answer of the analysis model (strict JSON schema `call_analysis`, with `data` when the agent declares fields). */
function analysisAnswer(body: any) {
  const schema = body?.response_format?.json_schema?.schema;
  const data = schema?.properties?.data ? Object.fromEntries(Object.keys(schema.properties.data.properties ?? {}).map((k) => [k, null])) : undefined;
  return { text: JSON.stringify({ summary: 'The caller was helped.', sentiment: 'positive', successful: true, success_rationale: 'The request was handled.', custom: [], ...(data ? { data } : {}) }) };
}

/** The deploy setting's URL without its path: what `urls` maps (a host, as DNS does). */
const origin = (url: string) => url.replace(/^(\w+:\/\/[^/]+).*$/, '$1');

export interface StackTierOptions {
  /** Default: the assembly global-setup synthesized. */
  assemblyDir?: string;
  /** Over OPERATOR_SECRETS (a sabotage replaces one). */
  secretValues?: Record<string, string>;
  /** Run the voice task (default true). */
  runTasks?: boolean;
  /** Over the network's variables. */
  network?: Record<string, string>;
}

/** The stand-ins, then the stack on the assembly, then an organization and its key. */
export async function startStackTier(options: StackTierOptions = {}): Promise<StackTier> {
  const started = Date.now();
  const realtimeScripts = new Map<string, (m: ModelConnection) => Promise<void>>();
  const [twilio, model, analysis, realtime, receiver, tls] = await Promise.all([
    startTwilioCarrier({ accountSid: TWILIO_SID, authToken: TWILIO_TOKEN }),
    startOpenAiStandIn({ apiKey: LLM_KEY }),
    startOpenAiStandIn({ apiKey: ANALYSIS_KEY, fallback: analysisAnswer }),
    startRealtimeStandIn(async (m) => {
      const script = realtimeScripts.get(m.model ?? '');
      if (!script) throw new Error(`no script for model ${m.model}`);
      await script(m);
    }),
    startWebhookReceiver(),
    startTlsFront(),
  ]);
  const standIns = [twilio, model, analysis, realtime, receiver, tls];
  let stack: RunningStack | undefined;
  try {
    const runnerOptions: StackRunnerOptions = {
      assemblyDir: options.assemblyDir ?? assemblyDir(),
      secretValues: { ...OPERATOR_SECRETS, ...options.secretValues },
      // What the template cannot hold: Twilio's API hosts; loopback opened for the stand-ins (the
      // webhook receiver, tool endpoints), which production's egress guard refuses; and the
      // stand-ins' self-signed certificate accepted (tls-front.ts).
      network: { TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, ALLOW_LOOPBACK_FETCH: 'true', NODE_TLS_REJECT_UNAUTHORIZED: '0', ...options.network },
      urls: {
        [origin(PRODUCTION_SETTINGS.LLM_BASE_URL!)]: origin(model.url),
        [origin(PRODUCTION_SETTINGS.ANALYSIS_BASE_URL!)]: origin(analysis.url),
        [origin(PRODUCTION_SETTINGS.REALTIME_BASE_URL!)]: origin(realtime.url),
      },
      // Scheduled jobs run when a test says (scheduler.runNow), not on their own during a file: a
      // scheduled minute lasts 10 real minutes (a day's rate stays under setTimeout's 24.8-day limit).
      tickSeconds: 600,
      runTasks: options.runTasks,
      log: process.env.VAP_TEST_LOG ? (line) => console.error(line) : undefined,
    };
    stack = await runStack(runnerOptions);
    const key = `vap_${randomBytes(24).toString('base64url')}`;
    const { organizationId } = await provisionOrganizationKey(stack, { key, name: 'Stack tier' });
    const running = stack;
    const api: StackTier['api'] = async (method, path, request = {}) => {
      const k = request.key === undefined ? key : request.key;
      const headers: Record<string, string> = { ...(k ? { 'x-api-key': k } : {}), ...request.headers };
      let body: string | undefined;
      if (typeof request.body === 'string') body = request.body;
      else if (request.body !== undefined) {
        body = JSON.stringify(request.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${running.url}${path}`, { method, headers, body });
      const text = await response.text();
      let parsed: any = text;
      if (/json/.test(response.headers.get('content-type') ?? '') && text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    };
    return {
      stack,
      key,
      organizationId,
      twilio,
      model,
      analysis,
      realtime,
      realtimeScripts,
      receiver,
      secure: tls.secure,
      startMs: Date.now() - started,
      api,
      async stop() {
        await running.stop();
        await Promise.all(standIns.map((s) => s.close()));
      },
    };
  } catch (err) {
    await stack?.stop();
    await Promise.all(standIns.map((s) => s.close()));
    throw err;
  }
}

/**
 * The stack tier for one test file: started in `beforeAll`, stopped in `afterAll`, with its start
 * and the file's whole time printed (the tier's budget is measured, not guessed).
 */
export function useStackTier(options: StackTierOptions = {}): () => StackTier {
  let tier: StackTier | undefined;
  let fileStarted = 0;
  beforeAll(async () => {
    fileStarted = Date.now();
    tier = await startStackTier(options);
  }, 120_000);
  afterAll(async () => {
    if (!tier) return;
    await tier.stop();
    console.log(`stack tier: ${expect.getState().testPath?.split('/').pop()}: stack ready in ${(tier.startMs / 1000).toFixed(1)} s, file ${((Date.now() - fileStarted) / 1000).toFixed(1)} s`);
  }, 60_000);
  return () => {
    if (!tier) throw new Error('The stack is not running: call useStackTier() at the top of the test file.');
    return tier;
  };
}

/** Log lines that say a function's role, environment or bundle is not what its code needs. */
export const UNCLEAN_LINE = /AccessDenied|is not authorized|Runtime\.ImportModuleError|Missing (required setting )?[A-Z][A-Z0-9_]+\b|must be set|[A-Z][A-Z0-9]*_[A-Z0-9_]+ is not set/;

const checked = new WeakMap<RunningStack, { denials: number; logs: number }>();

/**
 * No call refused by IAM, and no function logged a denial, a missing setting or a bundle that did
 * not load, since the previous check of this stack (each test answers for what it caused).
 */
export function expectCleanStack(stack: RunningStack): void {
  const from = checked.get(stack) ?? { denials: 0, logs: 0 };
  checked.set(stack, { denials: stack.aws.denials.length, logs: stack.logs.length });
  expect(stack.aws.denials.slice(from.denials)).toEqual([]);
  expect(stack.logs.slice(from.logs).filter((line) => UNCLEAN_LINE.test(line))).toEqual([]);
}

/** The schedule of the template whose logical id contains `name` (e.g. `CampaignTick`), for `scheduler.runNow`. */
export function scheduleNamed(stack: RunningStack, name: string): string {
  const names = Object.keys(stack.scheduler.stats());
  const found = names.filter((n) => n.toLowerCase().includes(name.toLowerCase()));
  if (found.length !== 1) throw new Error(`schedule "${name}": ${found.length} of the template's schedules match (${names.join(', ')})`);
  return found[0]!;
}

/** Polls `read` until `done` holds (or `ms` pass: fails with the last value read). */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
