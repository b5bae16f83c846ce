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

  it('gives the task role the table, knowledge-base reads, the token key and carrier secret, the secrets key, the call-end queues, and nothing else', () => {
    const actions = taskRoleStatements.flatMap(actionsOf);
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 's3:GetObject', 'sqs:SendMessage']));
    expect(actions.filter((a) => a === 'dynamodb:Scan' || a.includes('*'))).toEqual([]);
    expect(actions.filter((a) => a.startsWith('s3:'))).toEqual(['s3:GetObject']);
    expect(grantsOn(/TokenSigningKey/)).toContain('secretsmanager:GetSecretValue');
    expect(grantsOn(/TwilioCredentials/)).toContain('secretsmanager:GetSecretValue');
    // Webhook tools and Cal.com bookings open tenants' sealed secrets: envelope encryption with the secrets key, exactly.
    expect(actions.filter((a) => a.startsWith('kms:')).sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
    expect(grantsOn(/SecretsKey/).sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
    // The Realtime key reaches the container as an injected secret (the execution role), not through the task role.
    expect(grantsOn(/RealtimeApiKey/)).toEqual([]);
    expect(taskRoleStatements.filter((st) => JSON.stringify(st.Resource) === '"*"')).toEqual([]);
    const [task] = s.resources('AWS::ECS::TaskDefinition');
    const env = Object.fromEntries(task.Properties.ContainerDefinitions[0].Environment.map((e: { Name: string; Value: unknown }) => [e.Name, e.Value]));
    expect(JSON.stringify(env.SECRETS_KEY_ID)).toMatch(/SecretsKey/);
  });

  it('creates the Realtime key secret as JSON with the api_key the task reads, so a first deployment starts its tasks', () => {
    const [secret] = s.resources('AWS::SecretsManager::Secret').filter((r) => r.logicalId.startsWith('VoiceRealtimeApiKey'));
    expect(secret.Properties.GenerateSecretString).toMatchObject({ SecretStringTemplate: '{}', GenerateStringKey: 'api_key' });
    expect(JSON.parse(secret.Properties.GenerateSecretString.SecretStringTemplate)).toEqual({});
    expect(secret.DeletionPolicy).toBe('Retain');
    const [task] = s.resources('AWS::ECS::TaskDefinition');
    const [realtime] = task.Properties.ContainerDefinitions[0].Secrets.filter((x: { Name: string }) => x.Name === 'REALTIME_API_KEY');
    // ECS's `<secret arn>:<json key>::` names the key the template generates.
    expect(JSON.stringify(realtime.ValueFrom)).toContain(`${secret.logicalId}`);
    expect(JSON.stringify(realtime.ValueFrom)).toContain(':api_key::');
  });

  it('runs two tasks at least, spread over public subnets in two Availability Zones, and scales up to ten', () => {
    const [service] = s.resources('AWS::ECS::Service');
    expect(service.Properties.DesiredCount).toBe(2);
    const [target] = s.resources('AWS::ApplicationAutoScaling::ScalableTarget');
    expect(target.Properties).toMatchObject({ MinCapacity: 2, MaxCapacity: 10 });
    const subnets = service.Properties.NetworkConfiguration.AwsvpcConfiguration.Subnets.map((ref: unknown) => s.target(s.resources('AWS::ECS::Service')[0], ref)!);
    expect(subnets).toHaveLength(2);
    expect(subnets.every((subnet: FoundResource) => subnet.Properties.MapPublicIpOnLaunch === true)).toBe(true);
    const zones = subnets.map((subnet: FoundResource) => JSON.stringify(subnet.Properties.AvailabilityZone));
    expect(new Set(zones).size).toBe(2);
  });

  it('alarms when no task publishes OpenCalls (missing data breaches), on the metric the scaling policy reads', () => {
    const [policy] = s.resources('AWS::ApplicationAutoScaling::ScalingPolicy');
    const spec = policy.Properties.TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification;
    const alarm = s.resources('AWS::CloudWatch::Alarm').find((a) => String(a.Properties.AlarmDescription).startsWith('The voice runtime published no OpenCalls'))!;
    expect(alarm.Properties).toMatchObject({ Namespace: spec.Namespace, MetricName: spec.MetricName, Dimensions: spec.Dimensions, TreatMissingData: 'breaching', ComparisonOperator: 'LessThanThreshold', Threshold: 1 });
    expect(alarm.Properties.AlarmActions).toHaveLength(1);
  });

  it('puts CloudFront in front (a TLS endpoint for Twilio) and reaches an internal load balancer through a VPC origin, never across the internet', () => {
    const [distribution] = s.resources('AWS::CloudFront::Distribution');
    const origin = distribution.Properties.DistributionConfig.Origins[0];
    expect(origin.CustomOriginConfig).toBeUndefined();
    expect(origin.OriginCustomHeaders).toBeUndefined();
    const [vpcOrigin] = s.resources('AWS::CloudFront::VpcOrigin');
    expect(JSON.stringify(origin.VpcOriginConfig.VpcOriginId)).toContain(vpcOrigin.logicalId);
    const [lb] = s.resources('AWS::ElasticLoadBalancingV2::LoadBalancer');
    expect(lb.Properties.Scheme).toBe('internal');
    expect(JSON.stringify(vpcOrigin.Properties.VpcOriginEndpointConfig.Arn)).toContain(lb.logicalId);
    // Isolated subnets: no route to an internet gateway.
    for (const ref of lb.Properties.Subnets) expect(s.target(lb, ref)!.Properties.MapPublicIpOnLaunch).toBe(false);
    const [group] = s.resources('AWS::EC2::SecurityGroup').filter((g) => g.logicalId.startsWith('VoiceLoadBalancerSecurityGroup'));
    expect(group.Properties.SecurityGroupIngress).toEqual([expect.objectContaining({ FromPort: 80, ToPort: 80, CidrIp: { 'Fn::GetAtt': [expect.stringMatching(/^VoiceVpc/), 'CidrBlock'] } })]);
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
