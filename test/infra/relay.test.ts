import { AwsSolutionsChecks } from 'cdk-nag';
import { websocketRoutes } from '../../shared/http/registry';
import { actionsOf, synth, type Synthesized } from './synth';

/** The ConversationRelay WebSocket API in the stack (issue 28): routes from the registry, least privilege, alarms, cdk-nag clean. */
describe('the relay WebSocket API', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth();
  });
  const fnOf = (routeKey: string) => {
    const route = s.resources('AWS::ApiGatewayV2::Route').find((r) => r.Properties.RouteKey === routeKey)!;
    const integration = s.target(route, { Ref: String(route.Properties.Target['Fn::Join'][1][1].Ref) })!;
    const uri = JSON.stringify(integration.Properties.IntegrationUri);
    return s.resources('AWS::Lambda::Function').find((f) => uri.includes(f.logicalId))!;
  };

  it('is a WebSocket API with $connect, $default and $disconnect, each a function of the registry, on a logged, throttled stage', () => {
    const [api] = s.resources('AWS::ApiGatewayV2::Api').filter((a) => a.Properties.ProtocolType === 'WEBSOCKET');
    expect(api).toBeDefined();
    const keys = s.resources('AWS::ApiGatewayV2::Route').filter((r) => s.target(r, r.Properties.ApiId) === api).map((r) => r.Properties.RouteKey);
    expect(keys.sort()).toEqual(['$connect', '$default', '$disconnect']);
    expect(websocketRoutes.map((r) => r.routeKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    for (const key of keys) expect(fnOf(key)).toBeDefined();
    const [stage] = s.resources('AWS::ApiGatewayV2::Stage').filter((st) => s.target(st, st.Properties.ApiId) === api);
    expect(stage.Properties.AccessLogSettings.DestinationArn).toBeDefined();
    expect(stage.Properties.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 500, ThrottlingBurstLimit: 1000 });
    expect(s.parent.toJSON().Outputs.RelayUrl).toBeDefined();
  });

  it('lets only the functions that answer manage connections, of this API\'s stage; $default runs the model and the table, $connect checks Twilio\'s signature', () => {
    const manage = (key: string) => s.statementsOf(fnOf(key)).filter((st) => actionsOf(st).includes('execute-api:ManageConnections'));
    const [statement] = manage('$default');
    expect(JSON.stringify(statement!.Resource)).toMatch(/@connections\/\*/);
    expect(JSON.stringify(statement!.Resource)).toMatch(/\/live\//);
    expect(manage('$disconnect')).toEqual([]);
    const actions = s.statementsOf(fnOf('$default')).flatMap(actionsOf);
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query']));
    expect(actions.filter((a) => a === 'dynamodb:Scan' || a === '*' || a === 'execute-api:*')).toEqual([]);
    const env = fnOf('$default').Properties.Environment.Variables;
    expect(Object.keys(env)).toEqual(expect.arrayContaining(['RELAY_CALLBACK_URL', 'TABLE_NAME', 'LLM_PROVIDER']));
    expect(Object.keys(fnOf('$connect').Properties.Environment.Variables)).toEqual(expect.arrayContaining(['TOKEN_SECRET_ARN', 'TELEPHONY_PROVIDER']));
    // $connect checks Twilio's signature over the URL Twilio opened: without RELAY_URL every call's relay was refused
    // (found by the stack tier, issue 41). Every relay function gets the same value as the RelayUrl output.
    const relayUrl = JSON.stringify(s.parent.toJSON().Outputs.RelayUrl.Value);
    for (const key of ['$connect', '$default', '$disconnect']) expect(JSON.stringify(fnOf(key).Properties.Environment.Variables.RELAY_URL)).toBe(relayUrl);
    expect(s.statementsOf(fnOf('$connect')).flatMap(actionsOf)).toContain('secretsmanager:GetSecretValue');
  });

  it('tells the telephony functions where the relay is (RELAY_URL), and alarms on its errors', () => {
    const twiml = s.resources('AWS::Lambda::Function').find((f) => String(f.Properties.Description).includes('/telephony/twilio/twiml'))!;
    expect(Object.keys(twiml.Properties.Environment.Variables)).toContain('RELAY_URL');
    const alarms = s.resources('AWS::CloudWatch::Alarm').map((a) => String(a.Properties.AlarmDescription));
    expect(alarms).toContain('The relay WebSocket API failed to run its functions (execution errors; refused connections are not counted)');
    const relayAlarm = s.resources('AWS::CloudWatch::Alarm').find((a) => String(a.Properties.AlarmDescription).startsWith('The relay WebSocket API'))!;
    expect(relayAlarm.Properties.MetricName).toBe('ExecutionError');
    expect(alarms.filter((a) => /^Relay(Connect|Default|Disconnect)Function failed/.test(a))).toHaveLength(3);
  });

  it('draws no unacknowledged cdk-nag finding on the relay', () => {
    const report = new AwsSolutionsChecks(s.app).validateScope(s.stack);
    const relay = report.violations.filter((v) => v.severity === 'error').flatMap((v) => v.violatingResources.filter((r) => /\/Relay\//.test(r.constructPath ?? "")).map((r) => `${v.ruleName}: ${r.constructPath ?? ""}`));
    expect(relay).toEqual([]);
  });
});
