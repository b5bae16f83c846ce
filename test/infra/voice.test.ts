import { AwsSolutionsChecks } from 'cdk-nag';
import { operations } from '../../shared/http/registry';
import { actionsOf, synth, type FoundResource, type Synthesized } from './synth';

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

/** The voice runtime in the stack: an ECS service on Fargate (ARM64) behind a load balancer and CloudFront. */
describe('the voice runtime', () => {
  let s: Synthesized;
  let taskRoleStatements: Statement[];
  beforeAll(() => {
    s = synth();
    const task = s.resources('AWS::ECS::TaskDefinition')[0]!;
    const role = s.target(task, task.Properties.TaskRoleArn)!;
    taskRoleStatements = s
      .resources('AWS::IAM::Policy')
      .filter((p) => (p.Properties.Roles as unknown[]).some((ref) => s.target(p, ref) === role))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
  });
  const grantsOn = (pattern: RegExp) => taskRoleStatements.filter((st) => pattern.test(JSON.stringify(st.Resource))).flatMap(actionsOf);

  it('runs as a Fargate service on ARM64, draining for the 120 s ECS allows, behind a load balancer checked on /health', () => {
    const [task] = s.resources('AWS::ECS::TaskDefinition');
    expect(task.Properties.RequiresCompatibilities).toEqual(['FARGATE']);
    expect(task.Properties.RuntimePlatform).toEqual({ CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' });
    const [container] = task.Properties.ContainerDefinitions;
    expect(container.StopTimeout).toBe(120);
    expect(container.PortMappings).toEqual([expect.objectContaining({ ContainerPort: 8080 })]);
    expect(container.LogConfiguration.LogDriver).toBe('awslogs');
    expect(container.Secrets.map((x: { Name: string }) => x.Name)).toContain('REALTIME_API_KEY');
    const env = Object.fromEntries(container.Environment.map((e: { Name: string; Value: unknown }) => [e.Name, e.Value]));
    expect(Object.keys(env)).toEqual(expect.arrayContaining(['TABLE_NAME', 'TOKEN_SECRET_ARN', 'TWILIO_SECRET_ARN', 'TELEPHONY_PROVIDER', 'PORT']));
    expect(s.resources('AWS::ECS::Service')).toHaveLength(1);
    const [group] = s.resources('AWS::ElasticLoadBalancingV2::TargetGroup');
    expect(group.Properties.HealthCheckPath).toBe('/health');
    expect(group.Properties.TargetGroupAttributes).toContainEqual({ Key: 'deregistration_delay.timeout_seconds', Value: '120' });
  });

  it('scales on open calls, and alarms on errors and unhealthy tasks', () => {
    const [policy] = s.resources('AWS::ApplicationAutoScaling::ScalingPolicy');
    const spec = policy.Properties.TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification;
    expect(spec).toMatchObject({ MetricName: 'OpenCalls', Namespace: 'VoiceAgentPlatform', Statistic: 'Average' });
    const alarms = s.resources('AWS::CloudWatch::Alarm').map((a) => String(a.Properties.AlarmDescription));
    expect(alarms).toEqual(expect.arrayContaining(['The voice runtime logged errors', 'A voice runtime task fails its health check']));
  });

  it('gives the task role the table, knowledge-base reads, the token key and carrier secret, the call-end queues, and nothing else', () => {
    const actions = taskRoleStatements.flatMap(actionsOf);
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 's3:GetObject', 'sqs:SendMessage']));
    expect(actions.filter((a) => a === 'dynamodb:Scan' || a.includes('*'))).toEqual([]);
    expect(actions.filter((a) => a.startsWith('s3:'))).toEqual(['s3:GetObject']);
    expect(grantsOn(/TokenSigningKey/)).toContain('secretsmanager:GetSecretValue');
    expect(grantsOn(/TwilioCredentials/)).toContain('secretsmanager:GetSecretValue');
    // The Realtime key reaches the container as an injected secret (the execution role), not through the task role.
    expect(grantsOn(/RealtimeApiKey/)).toEqual([]);
    expect(taskRoleStatements.filter((st) => JSON.stringify(st.Resource) === '"*"')).toEqual([]);
  });

  it('puts CloudFront in front (a TLS endpoint for Twilio), and the load balancer forwards only requests with its origin header', () => {
    const [distribution] = s.resources('AWS::CloudFront::Distribution');
    const origin = distribution.Properties.DistributionConfig.Origins[0];
    expect(origin.CustomOriginConfig.OriginProtocolPolicy).toBe('http-only');
    expect(origin.OriginCustomHeaders.map((h: { HeaderName: string }) => h.HeaderName)).toEqual(['x-origin-verify']);
    const [listener] = s.resources('AWS::ElasticLoadBalancingV2::Listener');
    expect(listener.Properties.DefaultActions[0]).toMatchObject({ Type: 'fixed-response', FixedResponseConfig: { StatusCode: '403' } });
    const [rule] = s.resources('AWS::ElasticLoadBalancingV2::ListenerRule');
    expect(rule.Properties.Conditions[0]).toMatchObject({ Field: 'http-header', HttpHeaderConfig: { HttpHeaderName: 'x-origin-verify' } });
  });

  it('gives every API function VOICE_RUNTIME_URL: wss:// the CloudFront domain /stream', () => {
    const functions = s.resources('AWS::Lambda::Function').filter((f: FoundResource) => operations.some((op) => String(f.Properties.Description).startsWith(`${op.method} ${op.path}: `)));
    expect(functions.length).toBe(operations.length);
    for (const fn of functions) {
      const url = JSON.stringify(fn.Properties.Environment.Variables.VOICE_RUNTIME_URL);
      expect(url).toMatch(/wss:\/\//);
      expect(url).toMatch(/Distribution/);
      expect(url).toMatch(/\/stream/);
    }
  });

  it('uses the operator\'s domain and certificate when given (HTTPS on the load balancer, no CloudFront)', () => {
    const custom = synth({ voiceDomainName: 'voice.example.com', voiceCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc' });
    expect(custom.resources('AWS::CloudFront::Distribution')).toHaveLength(0);
    const [listener] = custom.resources('AWS::ElasticLoadBalancingV2::Listener');
    expect(listener.Properties).toMatchObject({ Port: 443, Protocol: 'HTTPS' });
    const fn = custom.resources('AWS::Lambda::Function').find((f) => String(f.Properties.Description).startsWith('POST /api/v1/telephony/twilio/inbound'))!;
    expect(fn.Properties.Environment.Variables.VOICE_RUNTIME_URL).toBe('wss://voice.example.com/stream');
  });

  it('deploys no runtime when VOICE_RUNTIME_URL names one elsewhere', () => {
    const elsewhere = synth({ voiceRuntimeUrl: 'wss://voice.elsewhere.test/stream' });
    expect(elsewhere.resources('AWS::ECS::Service')).toHaveLength(0);
  });

  it('draws no cdk-nag error', () => {
    const report = new AwsSolutionsChecks(s.app).validateScope(s.stack);
    expect(report.violations.filter((v) => v.severity === 'error').map((v) => `${v.ruleName} ${(v as { resourcePath?: string }).resourcePath ?? ''}`)).toEqual([]);
  });
});
