import * as path from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { objectActions, tableActions } from '../shared/access/enforce';
import { queueUrlVariable } from '../shared/jobs/definition';
import { OPEN_CALLS_METRIC } from '../voice/open-calls-metric';
import { acknowledgeGrantedResourceWildcard } from './acknowledge';
import type { Monitoring } from './monitoring';
import { operatorSecret } from './operator-secret';

/** The port the runtime listens on in its container (voice/main.ts reads PORT). */
export const VOICE_PORT = 8080;
/** The path Twilio opens the media stream on (VOICE_RUNTIME_URL ends with it). */
export const VOICE_STREAM_PATH = '/stream';
/** Where the runtime publishes its open calls (EMF log lines, voice/open-calls-metric.ts). */
export { OPEN_CALLS_METRIC };
/** Fargate's limit: a task gets at most 120 s between SIGTERM and SIGKILL, so a call in progress at a deploy has that long. */
export const VOICE_STOP_TIMEOUT_SECONDS = 120;
/** Never walked when the image's build context is staged (the .dockerignore narrows it further). */
const ASSET_EXCLUDES = ['node_modules', '.git', 'cdk.out', '.data', '.build', '.tmp', 'dist', 'coverage', 'docs', 'test', 'bench'];
/** Availability Zones the VPC spans and the service spreads its tasks over. */
export const VOICE_ZONES = 2;
/** Tasks always running (VOICE_MIN_TASKS): one per zone, so a zone's loss or a task's replacement never leaves calls nowhere to go. */
export const DEFAULT_VOICE_MIN_TASKS = 2;

export interface VoiceEndpointProps {
  /** The operator's domain for the runtime (`voiceDomainName`), with its ACM certificate in the stack's region; default: CloudFront's own domain. */
  domainName?: string;
  certificateArn?: string;
}

export interface VoiceServiceProps {
  /** The container image; default built by CDK from the repository's Dockerfile (voice/main.ts). */
  image?: ecs.ContainerImage;
  /** Settings every process reads (shared/config.ts): table, bucket, PUBLIC_BASE_URL… */
  environment: Record<string, string>;
  table: dynamodb.ITable;
  bucket: s3.IBucket;
  /** Object key patterns the runtime reads (the knowledge bases). */
  bucketPrefixes: string[];
  tokens: secretsmanager.ISecret;
  telephony: { provider: string; secret: secretsmanager.ISecret };
  /** The key that seals tenants' secrets (webhook tool secrets, Cal.com keys): a call's tools open them (SECRETS_KEY_ID). */
  secretsKey: kms.IKey;
  /** Queues the calls service sends to when a call ends (events, analysis, campaigns), by job name. */
  queues: ReadonlyMap<string, sqs.IQueue>;
  queueNames: string[];
  /** Chat model settings and key secret, when the engine's model is needed (optional). */
  llm?: { environment: Record<string, string>; secret?: secretsmanager.ISecret };
  /** REALTIME_BASE_URL; default the runtime's (wss://api.openai.com/v1/realtime). */
  realtimeBaseUrl?: string;
  monitoring: Monitoring;
  logRetention?: logs.RetentionDays;
  /** Tasks at least (the desired count at deployment) and at most; default DEFAULT_VOICE_MIN_TASKS and 10. */
  minTasks?: number;
  maxTasks?: number;
  /** Open calls per task the scaling keeps to; default 50. */
  callsPerTask?: number;
}

/**
 * The voice runtime in the stack: the one long-lived process (WebSockets for minutes do not fit
 * Lambda). An ECS service on Fargate (ARM64) in a VPC of its own spanning two Availability Zones,
 * behind an Application Load Balancer. Twilio needs a TLS endpoint (wss://):
 * - by default CloudFront gives one with no custom domain, and reaches the load balancer through a
 *   CloudFront VPC origin: the load balancer is internal (no public address, in subnets with no
 *   route to the internet), so nothing but this account's CloudFront can reach it, and the hop
 *   from CloudFront runs over AWS's private network into the VPC, not across the internet
 *   (WebSockets through VPC origins: supported since May 2026). No certificate is needed and no
 *   shared secret header travels with each request. Chosen over an HTTPS origin, which needs a
 *   certificate for a name the operator owns;
 * - with the operator's domain and certificate (VOICE_DOMAIN_NAME, VOICE_CERTIFICATE_ARN), the load
 *   balancer is internet-facing and listens on HTTPS itself (TLS 1.2+), and CloudFront is not made.
 *
 * Built in two steps: the endpoint first (the API functions need VOICE_RUNTIME_URL), the service
 * once the queues it sends to exist (`addService`).
 */
export class VoiceRuntime extends Construct {
  readonly vpc: ec2.Vpc;
  readonly cluster: ecs.Cluster;
  readonly loadBalancer: elbv2.ApplicationLoadBalancer;
  readonly listener: elbv2.ApplicationListener;
  readonly distribution?: cloudfront.Distribution;
  /** VOICE_RUNTIME_URL: `wss://<domain>/stream`. */
  readonly url: string;
  /** REALTIME_API_KEY's secret (JSON `{"api_key": "..."}`), put by the operator. */
  readonly realtimeSecret: secretsmanager.Secret;
  service?: ecs.FargateService;
  taskRole?: iam.Role;

  constructor(scope: Construct, id: string, props: VoiceEndpointProps = {}) {
    super(scope, id);
    const custom = !!(props.domainName && props.certificateArn);
    // Tasks run in public subnets: they reach the model, Twilio and AWS APIs directly (no NAT
    // gateway to pay for); their security group admits only the load balancer. Behind CloudFront
    // the load balancer sits in isolated subnets (no route out or in), free of charge.
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: VOICE_ZONES,
      natGateways: 0,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        ...(custom ? [] : [{ name: 'origin', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }]),
      ],
      flowLogs: { rejected: { trafficType: ec2.FlowLogTrafficType.REJECT } },
      // Nothing is placed in the default security group (the load balancer and the tasks have their
      // own), so no custom-resource Lambda is deployed to empty its rules.
      restrictDefaultSecurityGroup: false,
    });
    this.cluster = new ecs.Cluster(this, 'Cluster', { vpc: this.vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });
    this.realtimeSecret = operatorSecret(this, 'RealtimeApiKey', {
      description: 'API key of the speech-to-speech (Realtime) model provider: JSON {"api_key": "..."}, created with a placeholder; put the real key, then deploy the service again (ECS reads it at task start)',
      issuer: 'the model provider',
      // ECS resolves `api_key` when it starts a task and refuses to start one whose secret lacks
      // it: an empty secret would roll the first deployment back.
      jsonKey: 'api_key',
    });

    const lbSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', { vpc: this.vpc, description: 'The voice runtime load balancer', allowAllOutbound: false });
    this.loadBalancer = new elbv2.ApplicationLoadBalancer(this, 'LoadBalancer', {
      vpc: this.vpc,
      internetFacing: custom,
      vpcSubnets: { subnetType: custom ? ec2.SubnetType.PUBLIC : ec2.SubnetType.PRIVATE_ISOLATED },
      securityGroup: lbSecurityGroup,
      // A call's stream is never idle for long (20 ms media frames); this bounds a stuck one.
      idleTimeout: Duration.seconds(300),
      dropInvalidHeaderFields: true,
    });

    if (custom) {
      lbSecurityGroup.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'Twilio media streams (wss) on the operator\'s domain');
      this.listener = this.loadBalancer.addListener('Https', {
        port: 443,
        certificates: [elbv2.ListenerCertificate.fromArn(props.certificateArn!)],
        sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
        defaultAction: elbv2.ListenerAction.fixedResponse(404),
      });
      this.url = `wss://${props.domainName}${VOICE_STREAM_PATH}`;
      Validations.of(lbSecurityGroup).acknowledge({
        id: 'AwsSolutions-EC23',
        reason: 'Twilio media streams come from Twilio\'s changing edge addresses; streams are admitted by a signed token.',
      });
    } else {
      // CloudFront's VPC origin places its network interfaces in this VPC: nothing outside it reaches an internal load balancer.
      lbSecurityGroup.addIngressRule(ec2.Peer.ipv4(this.vpc.vpcCidrBlock), ec2.Port.tcp(80), 'CloudFront, through its VPC origin (interfaces in this VPC)');
      Validations.of(lbSecurityGroup).acknowledge({
        id: 'AwsSolutions-EC23',
        reason: 'The one rule admits this VPC\'s own CIDR (a reference cdk-nag cannot resolve), where CloudFront\'s VPC origin places its interfaces; the load balancer is internal, in isolated subnets.',
      });
      // Not `open`: that would admit 0.0.0.0/0, where the rule above admits this VPC only.
      this.listener = this.loadBalancer.addListener('Http', { port: 80, open: false, defaultAction: elbv2.ListenerAction.fixedResponse(404) });
      this.distribution = new cloudfront.Distribution(this, 'Distribution', {
        comment: 'Voice runtime: TLS endpoint for Twilio media streams (WebSockets)',
        defaultBehavior: {
          origin: origins.VpcOrigin.withApplicationLoadBalancer(this.loadBalancer, {
            // Inside the VPC, from AWS's network: the internal load balancer has no certificate.
            protocolPolicy: cloudfront.OriginProtocolPolicy.HTTP_ONLY,
            readTimeout: Duration.seconds(60),
          }),
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
          allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
          cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
          // WebSocket upgrade headers and Twilio's query string reach the runtime.
          originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        },
        priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      });
      this.url = `wss://${this.distribution.distributionDomainName}${VOICE_STREAM_PATH}`;
      const cdn = 'CloudFront is the TLS endpoint Twilio reaches without a custom domain;';
      Validations.of(this.distribution).acknowledge(
        { id: 'AwsSolutions-CFR1', reason: `${cdn} callers and Twilio's media edges are worldwide, so no geo restriction applies.` },
        { id: 'AwsSolutions-CFR2', reason: `${cdn} every stream is admitted by the runtime only with a short-lived signed token; a WAF adds cost and nothing to that check.` },
        { id: 'AwsSolutions-CFR3', reason: `${cdn} the runtime logs every stream it admits or refuses (CloudWatch Logs); CloudFront access logs would need a logging bucket with ACLs.` },
        { id: 'AwsSolutions-CFR4', reason: `${cdn} the default *.cloudfront.net certificate cannot pin a minimum TLS version; give voiceDomainName and voiceCertificateArn for TLS 1.2 only.` },
        { id: 'AwsSolutions-CFR5', reason: `${cdn} its origin is a VPC origin: an internal load balancer reached over AWS's private network, never the internet.` },
      );
    }
    Validations.of(this.loadBalancer).acknowledge({
      id: 'AwsSolutions-ELB2',
      reason: 'The runtime logs each stream (admitted or refused, with the call) to CloudWatch Logs; load balancer access logs would need an S3 bucket for the same facts.',
    });
  }

  /** What the platform's dashboard shows of the runtime: open calls per task (the scaling metric) and running tasks (Container Insights). */
  dashboardMetrics(): { openCalls: cloudwatch.IMetric; runningTasks: cloudwatch.IMetric } | undefined {
    if (!this.service) return undefined;
    return {
      openCalls: new cloudwatch.Metric({ ...OPEN_CALLS_METRIC, statistic: cloudwatch.Stats.AVERAGE, period: Duration.minutes(1) }),
      runningTasks: new cloudwatch.Metric({
        namespace: 'ECS/ContainerInsights',
        metricName: 'RunningTaskCount',
        dimensionsMap: { ClusterName: this.cluster.clusterName, ServiceName: this.service.serviceName },
        statistic: cloudwatch.Stats.AVERAGE,
        period: Duration.minutes(1),
      }),
    };
  }

  /** The Fargate service: task definition, least-privilege task role, scaling on open calls, draining, logs and alarms. */
  addService(props: VoiceServiceProps): ecs.FargateService {
    const logGroup = new logs.LogGroup(this, 'Logs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.RETAIN });
    const taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'The voice runtime: the table, knowledge-base objects, the token key, the carrier credentials, the call-end queues',
    });
    this.taskRole = taskRole;
    const task = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: 1024,
      memoryLimitMiB: 2048,
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.ARM64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      taskRole,
    });

    // Grants, each named for what it gives (the same action lists the functions get).
    props.table.grant(taskRole, ...tableActions('RW'));
    acknowledgeGrantedResourceWildcard(taskRole, props.table.tableArn, '/index/*', "The table grant covers this table's indexes (<table arn>/index/*); no other table.");
    iam.Grant.addToPrincipal({ grantee: taskRole, actions: objectActions('R'), resourceArns: props.bucketPrefixes.map((p) => props.bucket.arnForObjects(p)) });
    for (const p of props.bucketPrefixes) {
      acknowledgeGrantedResourceWildcard(taskRole, props.bucket.bucketArn, `/${p}`, 'Knowledge-base objects are per organization: the grant names their key patterns in this one bucket, read only.');
    }
    props.tokens.grantRead(taskRole);
    props.telephony.secret.grantRead(taskRole);
    // Envelope encryption as a `secrets: true` function has it (ApiFunction.bindSecretsKey): webhook tools and Cal.com bookings open sealed secrets.
    props.secretsKey.grant(taskRole, 'kms:GenerateDataKey', 'kms:Decrypt');
    const environment: Record<string, string> = {
      ...props.environment,
      RUNTIME: 'aws',
      PORT: String(VOICE_PORT),
      TOKEN_SECRET_ARN: props.tokens.secretArn,
      TELEPHONY_PROVIDER: props.telephony.provider,
      TWILIO_SECRET_ARN: props.telephony.secret.secretArn,
      SECRETS_KEY_ID: props.secretsKey.keyArn,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      ...(props.realtimeBaseUrl ? { REALTIME_BASE_URL: props.realtimeBaseUrl } : {}),
      ...(props.llm?.environment ?? {}),
    };
    // Traces (TRACES=true: the shared environment names X-Ray's OTLP endpoint): the task signs its exports with its role, as
    // each function does with the grant active tracing gives it. The actions take no resource (X-Ray has no resource-level permissions).
    if (environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
      taskRole.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], resources: ['*'] }));
      Validations.of(taskRole).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray\'s OTLP endpoint takes xray:PutTraceSegments, which supports no resource-level permissions; the infra test checks that "*" carries only the X-Ray actions.',
      });
    }
    // The chat model's key (the engine's tools and prompts), read by ARN as the functions do.
    if (props.llm?.secret) {
      props.llm.secret.grantRead(taskRole);
      environment.LLM_SECRET_ARN = props.llm.secret.secretArn;
    }
    for (const name of props.queueNames) {
      const queue = props.queues.get(name);
      if (!queue) throw new Error(`The voice runtime sends to queue "${name}", but no queue job has that name.`);
      queue.grantSendMessages(taskRole);
      environment[queueUrlVariable(name)] = queue.queueUrl;
    }
    // Injected by ECS at start (the execution role reads them); never in the task definition.
    const secrets: Record<string, ecs.Secret> = { REALTIME_API_KEY: ecs.Secret.fromSecretsManager(this.realtimeSecret, 'api_key') };

    task.addContainer('Runtime', {
      // Staged at synth (no Docker needed: .dockerignore keeps it to the sources), built and pushed by `cdk deploy`.
      image: props.image ?? ecs.ContainerImage.fromAsset(path.resolve(__dirname, '..'), { file: 'Dockerfile', platform: Platform.LINUX_ARM64, exclude: ASSET_EXCLUDES }),
      environment,
      secrets,
      portMappings: [{ containerPort: VOICE_PORT }],
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'voice', logGroup }),
      stopTimeout: Duration.seconds(VOICE_STOP_TIMEOUT_SECONDS),
      healthCheck: {
        command: ['CMD-SHELL', `node -e "fetch('http://127.0.0.1:${VOICE_PORT}/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"`],
        interval: Duration.seconds(15),
        startPeriod: Duration.seconds(20),
      },
    });

    const serviceSecurityGroup = new ec2.SecurityGroup(this, 'ServiceSecurityGroup', { vpc: this.vpc, description: 'Voice runtime tasks: from the load balancer only' });
    const minTasks = props.minTasks ?? DEFAULT_VOICE_MIN_TASKS;
    const service = new ecs.FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: task,
      desiredCount: minTasks,
      assignPublicIp: true,
      // Both zones' public subnets: ECS spreads a service's tasks across the zones it is given.
      vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC },
      securityGroups: [serviceSecurityGroup],
      circuitBreaker: { rollback: true },
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
    });
    this.service = service;
    const targets = new elbv2.ApplicationTargetGroup(this, 'Targets', {
      vpc: this.vpc,
      port: VOICE_PORT,
      protocol: elbv2.ApplicationProtocol.HTTP,
      targets: [service],
      healthCheck: { path: '/health', interval: Duration.seconds(15), healthyThresholdCount: 2 },
      // Draining: a task leaving keeps its open streams up to the ECS stop limit.
      deregistrationDelay: Duration.seconds(VOICE_STOP_TIMEOUT_SECONDS),
    });
    this.listener.addAction('Runtime', { priority: 1, conditions: [elbv2.ListenerCondition.pathPatterns(['/*'])], action: elbv2.ListenerAction.forward([targets]) });

    // Scaling on open calls: each task publishes OpenCalls (EMF); the service keeps the average per task at the target.
    const scaling = service.autoScaleTaskCount({ minCapacity: minTasks, maxCapacity: Math.max(minTasks, props.maxTasks ?? 10) });
    scaling.scaleToTrackCustomMetric('OpenCalls', {
      metric: new cloudwatch.Metric({ ...OPEN_CALLS_METRIC, statistic: cloudwatch.Stats.AVERAGE, period: Duration.minutes(1) }),
      targetValue: props.callsPerTask ?? 50,
      scaleOutCooldown: Duration.minutes(1),
      // Scaling in stops a task (and its calls, after the 120 s drain): slowly.
      scaleInCooldown: Duration.minutes(15),
    });

    // Scaling is blind without the metric (a runtime that stopped publishing, a log group that lost
    // EMF): alarm when no task has published for 5 minutes, whatever the count.
    const silent = new cloudwatch.Alarm(this, 'OpenCallsMissingAlarm', {
      alarmDescription: 'The voice runtime published no OpenCalls metric for 5 minutes: scaling on open calls is blind',
      metric: new cloudwatch.Metric({ ...OPEN_CALLS_METRIC, statistic: cloudwatch.Stats.SAMPLE_COUNT, period: Duration.minutes(1) }),
      threshold: 1,
      evaluationPeriods: 5,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    props.monitoring.notify(silent);

    // Alarms like the functions': errors logged, and targets the load balancer finds unhealthy.
    const errors = new logs.MetricFilter(this, 'ErrorLines', {
      logGroup,
      filterPattern: logs.FilterPattern.stringValue('$.level', '=', 'ERROR'),
      metricNamespace: OPEN_CALLS_METRIC.namespace,
      metricName: 'VoiceRuntimeErrors',
      defaultValue: 0,
    });
    const errorAlarm = new cloudwatch.Alarm(this, 'ErrorsAlarm', {
      alarmDescription: 'The voice runtime logged errors',
      metric: errors.metric({ statistic: cloudwatch.Stats.SUM, period: Duration.minutes(5) }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    props.monitoring.notify(errorAlarm);
    const unhealthy = new cloudwatch.Alarm(this, 'UnhealthyAlarm', {
      alarmDescription: 'A voice runtime task fails its health check',
      metric: targets.metrics.unhealthyHostCount({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
      threshold: 0,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    props.monitoring.notify(unhealthy);

    Validations.of(task).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason: 'The environment holds names and URLs (table, queues, secret ARNs), never secret values: those come from Secrets Manager (container secrets, or read by ARN at run time).',
    });
    const executionRole = task.obtainExecutionRole();
    Validations.of(executionRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken, which pulling the image needs, supports no resource-level permission.',
    });
    return service;
  }
}
