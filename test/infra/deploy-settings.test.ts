import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { deploySettingsFrom, LOG_RETENTION_DAYS } from '../../lib/deploy-settings';
import { byDescription, synth, variables, type FoundResource, type Synthesized } from './synth';

/** Every deploy setting at a value other than its default, as the CLI's environment would hold it. */
const ALL: Record<string, string> = {
  ALARM_EMAIL: 'oncall@example.com',
  TELEPHONY_PROVIDER: 'twilio',
  TWILIO_SECRET_NAME: 'vap/twilio',
  PUBLIC_BASE_URL: 'https://api.example.com',
  SOURCE_MAPS: 'true',
  TRACES: 'true',
  VOICE_DOMAIN_NAME: 'voice.example.com',
  VOICE_CERTIFICATE_ARN: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
  VOICE_MIN_TASKS: '3',
  VOICE_MAX_TASKS: '12',
  REALTIME_BASE_URL: 'wss://realtime.example.com/v1/realtime',
  ANALYSIS_PROVIDER: 'openai',
  ANALYSIS_BASE_URL: 'https://analysis.example.com/v1',
  ANALYSIS_MODEL: 'gpt-4.1-nano',
  ANALYSIS_TIMEOUT_MS: '12000',
  ANALYSIS_SECRET_NAME: 'vap/analysis',
  LLM_PROVIDER: 'openai',
  LLM_BASE_URL: 'https://llm.example.com/v1',
  LLM_MODEL: 'gpt-4.1-mini',
  LLM_TIMEOUT_MS: '15000',
  LLM_SECRET_NAME: 'vap/llm',
  API_THROTTLE_RATE: '250',
  API_THROTTLE_BURST: '500',
  RATE_LIMIT_PER_MINUTE: '600',
  CONCURRENCY_CEILING: '40',
  LOG_RETENTION_DAYS: '90',
  WIDGET_CONCURRENCY: '7',
  MODEL_CONCURRENCY: '9',
};

const envOf = (fn: FoundResource) => variables(fn) as Record<string, unknown>;
const containerEnv = (s: Synthesized) => {
  const [task] = s.resources('AWS::ECS::TaskDefinition');
  return Object.fromEntries(task.Properties.ContainerDefinitions[0].Environment.map((e: { Name: string; Value: unknown }) => [e.Name, e.Value])) as Record<string, unknown>;
};
const sendChat = (s: Synthesized) => byDescription(s, 'POST /api/v1/chats/{id}/messages: ');
const analysisJob = (s: Synthesized) => byDescription(s, 'Job call-analysis: ');
const twilioStatus = (s: Synthesized) => byDescription(s, 'POST /api/v1/telephony/twilio/status: ');
const widgetTurn = (s: Synthesized) => byDescription(s, 'POST /api/v1/widget/{id}/chats/{chat_id}/messages: ');

/** One row of docs/operations.md's deploy table: the variable, and what proves it reached the template. */
const ROWS: Array<[string, (s: Synthesized) => void]> = [
  ['ALARM_EMAIL', (s) => expect(s.resources('AWS::SNS::Subscription').map((r) => r.Properties.Endpoint)).toContain('oncall@example.com')],
  ['TELEPHONY_PROVIDER', (s) => expect(envOf(twilioStatus(s)).TELEPHONY_PROVIDER).toBe('twilio')],
  ['TWILIO_SECRET_NAME', (s) => expect(JSON.stringify(envOf(twilioStatus(s)).TWILIO_SECRET_ARN)).toContain('secret:vap/twilio')],
  ['PUBLIC_BASE_URL', (s) => expect(envOf(twilioStatus(s)).PUBLIC_BASE_URL).toBe('https://api.example.com')],
  ['SOURCE_MAPS', (s) => expect(envOf(twilioStatus(s)).NODE_OPTIONS).toBe('--enable-source-maps')],
  ['TRACES', (s) => {
    const env = envOf(sendChat(s));
    expect(JSON.stringify(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)).toMatch(/https:\/\/xray\..*amazonaws\.com\/v1\/traces/);
    expect(env.OTEL_SERVICE_NAME).toBe('voice-agent-platform');
    // The voice runtime exports too, signed with its task role: the endpoint, and the X-Ray actions (only they on "*").
    expect(JSON.stringify(containerEnv(s).OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)).toMatch(/https:\/\/xray\..*amazonaws\.com\/v1\/traces/);
    const taskRole = s.resources('AWS::ECS::TaskDefinition')[0].Properties.TaskRoleArn['Fn::GetAtt'][0];
    const statements = s.resources('AWS::IAM::Policy').filter((p) => p.Properties.Roles.some((r: any) => r.Ref === taskRole)).flatMap((p) => p.Properties.PolicyDocument.Statement);
    const anywhere = statements.filter((st: any) => st.Resource === '*');
    expect(anywhere.flatMap((st: any) => [st.Action].flat()).sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
  }],
  ['VOICE_DOMAIN_NAME', (s) => expect(envOf(twilioStatus(s)).VOICE_RUNTIME_URL).toBe('wss://voice.example.com/stream')],
  ['VOICE_CERTIFICATE_ARN', (s) => expect(s.resources('AWS::ElasticLoadBalancingV2::Listener')[0].Properties.Certificates).toEqual([{ CertificateArn: ALL.VOICE_CERTIFICATE_ARN }])],
  ['VOICE_MIN_TASKS', (s) => {
    expect(s.resources('AWS::ECS::Service')[0].Properties.DesiredCount).toBe(3);
    expect(s.resources('AWS::ApplicationAutoScaling::ScalableTarget')[0].Properties.MinCapacity).toBe(3);
  }],
  ['VOICE_MAX_TASKS', (s) => expect(s.resources('AWS::ApplicationAutoScaling::ScalableTarget')[0].Properties.MaxCapacity).toBe(12)],
  ['REALTIME_BASE_URL', (s) => expect(containerEnv(s).REALTIME_BASE_URL).toBe(ALL.REALTIME_BASE_URL)],
  ['ANALYSIS_PROVIDER', (s) => expect(envOf(analysisJob(s)).ANALYSIS_PROVIDER).toBe('openai')],
  ['ANALYSIS_BASE_URL', (s) => expect(envOf(analysisJob(s)).ANALYSIS_BASE_URL).toBe(ALL.ANALYSIS_BASE_URL)],
  ['ANALYSIS_MODEL', (s) => expect(envOf(analysisJob(s)).ANALYSIS_MODEL).toBe(ALL.ANALYSIS_MODEL)],
  ['ANALYSIS_TIMEOUT_MS', (s) => expect(envOf(analysisJob(s)).ANALYSIS_TIMEOUT_MS).toBe('12000')],
  ['ANALYSIS_SECRET_NAME', (s) => expect(JSON.stringify(envOf(analysisJob(s)).ANALYSIS_SECRET_ARN)).toContain('secret:vap/analysis')],
  ['LLM_PROVIDER', (s) => {
    expect(envOf(sendChat(s)).LLM_PROVIDER).toBe('openai');
    expect(containerEnv(s).LLM_PROVIDER).toBe('openai');
  }],
  ['LLM_BASE_URL', (s) => expect(envOf(sendChat(s)).LLM_BASE_URL).toBe(ALL.LLM_BASE_URL)],
  ['LLM_MODEL', (s) => expect(envOf(sendChat(s)).LLM_MODEL).toBe(ALL.LLM_MODEL)],
  ['LLM_TIMEOUT_MS', (s) => expect(envOf(sendChat(s)).LLM_TIMEOUT_MS).toBe('15000')],
  ['LLM_SECRET_NAME', (s) => {
    expect(JSON.stringify(envOf(sendChat(s)).LLM_SECRET_ARN)).toContain('secret:vap/llm');
    expect(JSON.stringify(containerEnv(s).LLM_SECRET_ARN)).toContain('secret:vap/llm');
  }],
  ['API_THROTTLE_RATE', (s) => {
    const [stage] = s.resources('AWS::ApiGatewayV2::Stage').filter((st) => st.Properties.StageName === '$default');
    expect(stage.Properties.DefaultRouteSettings.ThrottlingRateLimit).toBe(250);
    expect(s.resources('AWS::ApiGateway::Stage')[0].Properties.MethodSettings[0].ThrottlingRateLimit).toBe(250);
  }],
  ['API_THROTTLE_BURST', (s) => {
    const [stage] = s.resources('AWS::ApiGatewayV2::Stage').filter((st) => st.Properties.StageName === '$default');
    expect(stage.Properties.DefaultRouteSettings.ThrottlingBurstLimit).toBe(500);
    expect(s.resources('AWS::ApiGateway::Stage')[0].Properties.MethodSettings[0].ThrottlingBurstLimit).toBe(500);
  }],
  ['RATE_LIMIT_PER_MINUTE', (s) => expect(envOf(sendChat(s)).RATE_LIMIT_PER_MINUTE).toBe('600')],
  ['CONCURRENCY_CEILING', (s) => expect(envOf(sendChat(s)).CONCURRENCY_CEILING).toBe('40')],
  ['LOG_RETENTION_DAYS', (s) => {
    // All but the VPC's flow log (rejected traffic, a security record kept its own two years).
    const groups = s.resources('AWS::Logs::LogGroup').filter((g) => !/FlowLog|rejectedLogGroup/.test(g.logicalId));
    expect(groups.length).toBeGreaterThan(10);
    expect([...new Set(groups.map((g) => g.Properties.RetentionInDays))]).toEqual([90]);
  }],
  ['WIDGET_CONCURRENCY', (s) => expect(widgetTurn(s).Properties.ReservedConcurrentExecutions).toBe(7)],
  ['MODEL_CONCURRENCY', (s) => expect(sendChat(s).Properties.ReservedConcurrentExecutions).toBe(9)],
];

/** The variables `deploySettingsFrom` reads (an environment that records each look-up). */
function variablesRead(): string[] {
  const read = new Set<string>();
  deploySettingsFrom(new Proxy({}, { get: (_t, key) => (read.add(String(key)), undefined) }));
  return [...read].sort();
}

/** The variables of docs/operations.md's deploy table (its first column). */
function documentedVariables(): string[] {
  const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
  const deploy = doc.slice(doc.indexOf('## Deploy'), doc.indexOf('\n## ', doc.indexOf('## Deploy') + 1));
  return deploy.split('\n').filter((line) => line.startsWith('| `')).flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
}

describe('every deploy setting, from the CLI environment to the template', () => {
  let all: Synthesized;
  beforeAll(() => {
    all = synth(deploySettingsFrom(ALL));
  });

  it('has a row in the deploy table and a test here for every variable bin/app.ts reads', () => {
    expect(variablesRead()).toEqual(Object.keys(ALL).concat('VOICE_RUNTIME_URL').sort());
    expect(ROWS.map(([name]) => name).concat('VOICE_RUNTIME_URL').sort()).toEqual(variablesRead());
    const documented = documentedVariables();
    expect(variablesRead().filter((name) => !documented.includes(name))).toEqual([]);
  });

  it.each(ROWS)('%s reaches the template', (_name, proves) => proves(all));

  it('VOICE_RUNTIME_URL reaches the template: the functions stream calls there and no runtime is deployed', () => {
    const s = synth(deploySettingsFrom({ VOICE_RUNTIME_URL: 'wss://voice.elsewhere.test/stream' }));
    expect(envOf(twilioStatus(s)).VOICE_RUNTIME_URL).toBe('wss://voice.elsewhere.test/stream');
    expect(s.resources('AWS::ECS::Service')).toEqual([]);
  });

  it('with none set, deploys the defaults: local models, two voice tasks, a month of logs, the stage throttle and the concurrency caps', () => {
    const s = synth(deploySettingsFrom({}));
    expect(envOf(sendChat(s)).LLM_PROVIDER).toBe('local');
    expect(envOf(analysisJob(s)).ANALYSIS_PROVIDER).toBe('local');
    expect(s.resources('AWS::ECS::Service')[0].Properties.DesiredCount).toBe(2);
    expect([...new Set(s.resources('AWS::Logs::LogGroup').filter((g) => !/rejectedLogGroup/.test(g.logicalId)).map((g) => g.Properties.RetentionInDays))]).toEqual([30]);
    const [stage] = s.resources('AWS::ApiGatewayV2::Stage').filter((st) => st.Properties.StageName === '$default');
    expect(stage.Properties.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    expect([widgetTurn(s), sendChat(s)].map((fn) => fn.Properties.ReservedConcurrentExecutions)).toEqual([20, 20]);
  });

  it('turns a concurrency cap off with `off`', () => {
    const settings = deploySettingsFrom({ WIDGET_CONCURRENCY: 'off', MODEL_CONCURRENCY: 'off' });
    expect(settings.reservedConcurrency).toEqual({ widget: 'off', model: 'off' });
  });

  it.each([
    ['LLM_PROVIDER', { LLM_PROVIDER: 'gpt' }, /LLM_PROVIDER="gpt" is not valid: expected one of local, openai/],
    ['ANALYSIS_PROVIDER', { ANALYSIS_PROVIDER: 'OpenAI' }, /ANALYSIS_PROVIDER="OpenAI"/],
    ['TELEPHONY_PROVIDER', { TELEPHONY_PROVIDER: 'twillio' }, /TELEPHONY_PROVIDER="twillio" is not valid: expected one of simulated, twilio/],
    ['LOG_RETENTION_DAYS', { LOG_RETENTION_DAYS: '45' }, /LOG_RETENTION_DAYS="45" is not valid: expected one of CloudWatch Logs' retention periods in days \(1, 3, 5, 7, 14, 30, 60, 90/],
    ['API_THROTTLE_RATE', { API_THROTTLE_RATE: 'fast', API_THROTTLE_BURST: '10' }, /API_THROTTLE_RATE="fast" is not valid: expected a whole number/],
    ['API_THROTTLE_BURST alone', { API_THROTTLE_RATE: '10' }, /API_THROTTLE_BURST="" is not valid: expected API_THROTTLE_RATE and API_THROTTLE_BURST set together/],
    ['VOICE_MIN_TASKS', { VOICE_MIN_TASKS: '0' }, /VOICE_MIN_TASKS="0" is not valid: expected a whole number from 1/],
    ['VOICE_MAX_TASKS below the minimum', { VOICE_MIN_TASKS: '4', VOICE_MAX_TASKS: '2' }, /VOICE_MAX_TASKS="2" is not valid: expected at least VOICE_MIN_TASKS \(4\)/],
    ['VOICE_CERTIFICATE_ARN without a domain', { VOICE_CERTIFICATE_ARN: 'arn:aws:acm:eu-west-1:1:certificate/x' }, /VOICE_DOMAIN_NAME="" is not valid/],
    ['LLM_TIMEOUT_MS', { LLM_TIMEOUT_MS: '20s' }, /LLM_TIMEOUT_MS="20s"/],
    ['LLM_BASE_URL', { LLM_BASE_URL: 'api.openai.com/v1' }, /LLM_BASE_URL="api.openai.com\/v1" is not valid: expected a https:\/\/ or http:\/\/ URL/],
    ['SOURCE_MAPS', { SOURCE_MAPS: 'yes' }, /SOURCE_MAPS="yes" is not valid: expected true or false/],
    ['MODEL_CONCURRENCY', { MODEL_CONCURRENCY: '0' }, /MODEL_CONCURRENCY="0" is not valid: expected a whole number from 1 to 1000, or off/],
  ])('refuses a bad %s, naming the variable', (_what, env, message) => {
    expect(() => deploySettingsFrom(env as Record<string, string>)).toThrow(message);
  });

  it('accepts every retention CloudWatch Logs allows and only those', () => {
    expect(LOG_RETENTION_DAYS).toEqual([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653]);
    for (const days of LOG_RETENTION_DAYS) expect(deploySettingsFrom({ LOG_RETENTION_DAYS: String(days) }).logRetention).toBe(days);
  });
});
