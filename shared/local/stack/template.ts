import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The synthesized cloud assembly (cdk.out) read as CloudFormation would deploy it: the stack's
 * template and its nested stacks' templates, every intrinsic resolved. Physical names and ids are
 * made up here as CloudFormation makes them up (a name from the stack and the logical id, a short
 * random-looking id for APIs), deterministically, so one assembly always resolves the same way.
 * Nested stacks get their Parameters from the parent, and a parent's `Fn::GetAtt [Nested, Outputs.X]`
 * is the nested template's output, resolved first.
 */

export interface Pseudo {
  region: string;
  accountId: string;
  /** The stack's name (the CLI's stack id, e.g. VoiceAgentPlatform-dev). */
  stackName: string;
}

export interface RawResource {
  Type: string;
  Properties?: Record<string, any>;
  Metadata?: Record<string, any>;
  DependsOn?: string | string[];
}

export interface RawTemplate {
  Parameters?: Record<string, { Type: string; Default?: unknown }>;
  Resources: Record<string, RawResource>;
  Outputs?: Record<string, { Value: unknown }>;
  Conditions?: Record<string, unknown>;
}

/** One resource after resolution: its template (`parent` or the nested stack's logical id), physical id and attributes. */
export interface Resource {
  stack: string;
  logicalId: string;
  type: string;
  /** Properties with every intrinsic resolved. */
  props: Record<string, any>;
  /** What `Ref` gives. */
  ref: string;
  /** What `Fn::GetAtt` gives, by attribute. */
  attrs: Record<string, string>;
  metadata: Record<string, any>;
}

export interface ResolvedAssembly {
  pseudo: Pseudo;
  dir: string;
  resources: Resource[];
  /** The parent stack's outputs, resolved. */
  outputs: Record<string, string>;
  /** Resources of a type, across every template. */
  ofType(type: string): Resource[];
  /** A resource by its ARN or `Ref` value, across every template. */
  byRef(value: string): Resource | undefined;
}

/** The stack artifact's template file in a cloud assembly; the only stack when `stackName` is absent. */
export function stackTemplateFile(dir: string, stackName?: string): { file: string; stackName: string } {
  const manifestFile = join(dir, 'manifest.json');
  if (!existsSync(manifestFile)) throw new Error(`${dir} is not a cloud assembly (no manifest.json): run cdk synth first.`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { artifacts: Record<string, { type: string; properties?: { templateFile?: string } }> };
  const stacks = Object.entries(manifest.artifacts).filter(([, a]) => a.type === 'aws:cloudformation:stack');
  const chosen = stackName ? stacks.find(([id]) => id === stackName) : stacks.length === 1 ? stacks[0] : undefined;
  if (!chosen) throw new Error(`Cloud assembly ${dir} has stacks ${stacks.map(([id]) => id).join(', ') || '(none)'}; name one${stackName ? ` (not ${stackName})` : ''}.`);
  return { file: join(dir, chosen[1].properties!.templateFile!), stackName: chosen[0] };
}

const short = (seed: string, length: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789') => {
  const bytes = createHash('sha256').update(seed).digest();
  return [...bytes.subarray(0, length)].map((b) => alphabet[b % alphabet.length]).join('');
};

/** Ref and attributes of one resource, as CloudFormation would give them (names made up the way it makes them up). */
function physical(pseudo: Pseudo, stack: string, logicalId: string, resource: RawResource): { ref: string; attrs: Record<string, string> } {
  const { region, accountId: account, stackName } = pseudo;
  const props = resource.Properties ?? {};
  const seed = `${stackName}/${stack}/${logicalId}`;
  const suffix = short(seed, 12, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
  const named = (max: number, given?: unknown) => (typeof given === 'string' ? given : `${stackName}-${logicalId}`.slice(0, max - 13) + `-${suffix}`);
  switch (resource.Type) {
    case 'AWS::DynamoDB::Table': {
      const name = named(255, props.TableName);
      const arn = `arn:aws:dynamodb:${region}:${account}:table/${name}`;
      return { ref: name, attrs: { Arn: arn, StreamArn: `${arn}/stream/local` } };
    }
    case 'AWS::S3::Bucket': {
      const name = (typeof props.BucketName === 'string' ? props.BucketName : named(63)).toLowerCase();
      return { ref: name, attrs: { Arn: `arn:aws:s3:::${name}`, DomainName: `${name}.s3.amazonaws.com`, RegionalDomainName: `${name}.s3.${region}.amazonaws.com` } };
    }
    case 'AWS::SQS::Queue': {
      const name = named(80, props.QueueName);
      // The URL's host is replaced by the local endpoint's (resolveUrls); the path is SQS's.
      const url = `https://sqs.${region}.amazonaws.com/${account}/${name}`;
      return { ref: url, attrs: { Arn: `arn:aws:sqs:${region}:${account}:${name}`, QueueName: name, QueueUrl: url } };
    }
    case 'AWS::SecretsManager::Secret': {
      const name = typeof props.Name === 'string' ? props.Name : `${logicalId}-${short(seed, 12)}`;
      const arn = `arn:aws:secretsmanager:${region}:${account}:secret:${name}-${short(`${seed}#`, 6, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ')}`;
      return { ref: arn, attrs: { Id: arn } };
    }
    case 'AWS::KMS::Key': {
      const h = createHash('sha256').update(seed).digest('hex');
      const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
      return { ref: id, attrs: { Arn: `arn:aws:kms:${region}:${account}:key/${id}`, KeyId: id } };
    }
    case 'AWS::Lambda::Function': {
      const name = named(64, props.FunctionName);
      return { ref: name, attrs: { Arn: `arn:aws:lambda:${region}:${account}:function:${name}` } };
    }
    case 'AWS::IAM::Role': {
      const name = named(64, props.RoleName);
      return { ref: name, attrs: { Arn: `arn:aws:iam::${account}:role/${name}`, RoleId: `AROA${suffix}` } };
    }
    case 'AWS::Logs::LogGroup': {
      const name = typeof props.LogGroupName === 'string' ? props.LogGroupName : `${stackName}-${logicalId}-${suffix}`;
      return { ref: name, attrs: { Arn: `arn:aws:logs:${region}:${account}:log-group:${name}:*` } };
    }
    case 'AWS::ApiGatewayV2::Api': {
      const id = short(seed, 10);
      const scheme = props.ProtocolType === 'WEBSOCKET' ? 'wss' : 'https';
      return { ref: id, attrs: { ApiId: id, ApiEndpoint: `${scheme}://${id}.execute-api.${region}.amazonaws.com` } };
    }
    case 'AWS::ApiGateway::RestApi': {
      const id = short(seed, 10);
      return { ref: id, attrs: { RestApiId: id, RootResourceId: short(`${seed}/root`, 10) } };
    }
    case 'AWS::ApiGateway::Stage':
    case 'AWS::ApiGatewayV2::Stage':
      return { ref: String(props.StageName), attrs: {} };
    case 'AWS::CloudFront::Distribution': {
      const id = `E${suffix}`;
      return { ref: id, attrs: { Id: id, DomainName: `d${short(seed, 13)}.cloudfront.net` } };
    }
    case 'AWS::SNS::Topic': {
      const name = named(256, props.TopicName);
      const arn = `arn:aws:sns:${region}:${account}:${name}`;
      return { ref: arn, attrs: { TopicArn: arn, TopicName: name } };
    }
    case 'AWS::ElasticLoadBalancingV2::LoadBalancer': {
      const name = `${logicalId.slice(0, 20)}-${short(seed, 8)}`;
      return { ref: `arn:aws:elasticloadbalancing:${region}:${account}:loadbalancer/app/${name}/${short(seed, 16)}`, attrs: { DNSName: `${name}.${region}.elb.amazonaws.com`, LoadBalancerFullName: `app/${name}/${short(seed, 16)}`, CanonicalHostedZoneID: 'Z35SXDOTRQ7X7K' } };
    }
    case 'AWS::ElasticLoadBalancingV2::TargetGroup': {
      const name = `${logicalId.slice(0, 20)}-${short(seed, 8)}`;
      return { ref: `arn:aws:elasticloadbalancing:${region}:${account}:targetgroup/${name}/${short(seed, 16)}`, attrs: { TargetGroupFullName: `targetgroup/${name}/${short(seed, 16)}`, TargetGroupName: name } };
    }
    case 'AWS::ECS::Cluster': {
      const name = named(255, props.ClusterName);
      return { ref: name, attrs: { Arn: `arn:aws:ecs:${region}:${account}:cluster/${name}` } };
    }
    case 'AWS::ECS::Service': {
      const name = named(255, props.ServiceName);
      return { ref: `arn:aws:ecs:${region}:${account}:service/${name}`, attrs: { Name: name, ServiceArn: `arn:aws:ecs:${region}:${account}:service/${name}` } };
    }
    case 'AWS::ECS::TaskDefinition':
      return { ref: `arn:aws:ecs:${region}:${account}:task-definition/${logicalId}:1`, attrs: { TaskDefinitionArn: `arn:aws:ecs:${region}:${account}:task-definition/${logicalId}:1` } };
    case 'AWS::EC2::SecurityGroup':
      return { ref: `sg-${short(seed, 17, '0123456789abcdef')}`, attrs: { GroupId: `sg-${short(seed, 17, '0123456789abcdef')}`, VpcId: 'vpc-local' } };
    case 'AWS::CloudFormation::Stack':
      return { ref: `arn:aws:cloudformation:${region}:${account}:stack/${stackName}-${logicalId}/${suffix}`, attrs: {} };
    default: {
      const id = `${logicalId}-${suffix}`.toLowerCase();
      return { ref: id, attrs: { Arn: `arn:aws:local:${region}:${account}:${resource.Type.replace(/::/g, '-').toLowerCase()}/${id}` } };
    }
  }
}

const NO_VALUE = Symbol('AWS::NoValue');

/** What one template's intrinsics resolve against. */
interface Scope {
  refs: Record<string, unknown>;
  attrs: Record<string, Record<string, string>>;
  conditions: Record<string, unknown>;
  mappings: Record<string, Record<string, Record<string, unknown>>>;
  /** `where: what` for every intrinsic or attribute this module cannot resolve. */
  missing: string[];
  where: string;
}

/**
 * CloudFormation's intrinsic functions over one template: Ref, Fn::GetAtt, Fn::Join, Fn::Sub,
 * Fn::Select, Fn::Split, Fn::If, Fn::Equals/And/Or/Not, Condition, Fn::FindInMap, Fn::GetAZs,
 * Fn::Base64 and AWS::NoValue. Written here rather than taken from cfn-resolver-lib, which reads
 * an IAM statement's `Condition` block as a CloudFormation condition and leaves multi-key ones
 * unresolved (docs/operations.md, "The synthesized stack, run locally").
 */
export function evaluate(node: unknown, scope: Scope): unknown {
  if (Array.isArray(node)) return node.map((item) => evaluate(item, scope)).filter((item) => item !== NO_VALUE);
  if (!node || typeof node !== 'object') return node;
  const entries = Object.entries(node as Record<string, unknown>);
  if (entries.length === 1) {
    const [key, arg] = entries[0]!;
    const str = (value: unknown) => String(evaluate(value, scope));
    const miss = (what: string) => {
      scope.missing.push(`${scope.where}: ${what}`);
      return `<unresolved ${what}>`;
    };
    switch (key) {
      case 'Ref': {
        if (arg === 'AWS::NoValue') return NO_VALUE;
        const name = String(arg);
        return name in scope.refs ? scope.refs[name] : miss(`Ref ${name}`);
      }
      case 'Fn::GetAtt': {
        const [id, attr] = Array.isArray(arg) ? [String(arg[0]), str(arg[1])] : String(arg).split(/\.(.+)/);
        const value = scope.attrs[id!]?.[attr!];
        return value !== undefined ? value : miss(`Fn::GetAtt ${id}.${attr}`);
      }
      case 'Fn::Join': {
        const [sep, list] = arg as [string, unknown];
        return (evaluate(list, scope) as unknown[]).map(String).join(sep);
      }
      case 'Fn::Sub': {
        const [text, vars] = Array.isArray(arg) ? [String(arg[0]), evaluate(arg[1], scope) as Record<string, unknown>] : [String(arg), {}];
        return text.replace(/\$\{(!?)([^}]+)\}/g, (whole, bang: string, name: string) => {
          if (bang) return `\${${name}}`;
          if (name in vars) return String(vars[name]);
          if (name.includes('.')) return str({ 'Fn::GetAtt': name.split(/\.(.+)/).slice(0, 2) });
          return str({ Ref: name });
        });
      }
      case 'Fn::Select': {
        const [index, list] = arg as [unknown, unknown];
        return (evaluate(list, scope) as unknown[])[Number(evaluate(index, scope))];
      }
      case 'Fn::Split': {
        const [sep, text] = arg as [string, unknown];
        return str(text).split(sep);
      }
      case 'Fn::If': {
        const [condition, yes, no] = arg as [string, unknown, unknown];
        const chosen = evaluate(scope.conditions[condition] ?? miss(`Condition ${condition}`), scope) === true ? yes : no;
        return evaluate(chosen, scope);
      }
      case 'Fn::Equals': {
        const [a, b] = arg as [unknown, unknown];
        return JSON.stringify(evaluate(a, scope)) === JSON.stringify(evaluate(b, scope));
      }
      case 'Fn::And':
        return (arg as unknown[]).every((c) => evaluate(c, scope) === true);
      case 'Fn::Or':
        return (arg as unknown[]).some((c) => evaluate(c, scope) === true);
      case 'Fn::Not':
        return evaluate((arg as unknown[])[0], scope) !== true;
      case 'Condition':
        // A condition reference inside Fn::And/Or/Not (a string); an IAM statement's Condition block is an object.
        if (typeof arg === 'string') return evaluate(scope.conditions[arg] ?? miss(`Condition ${arg}`), scope);
        break;
      case 'Fn::FindInMap': {
        const [map, top, second] = (arg as unknown[]).map((a) => str(a));
        const value = scope.mappings[map!]?.[top!]?.[second!];
        return value !== undefined ? value : miss(`Fn::FindInMap ${map}.${top}.${second}`);
      }
      case 'Fn::GetAZs': {
        const region = str(arg) || String(scope.refs['AWS::Region']);
        return ['a', 'b', 'c'].map((zone) => `${region}${zone}`);
      }
      case 'Fn::Base64':
        return Buffer.from(str(arg)).toString('base64');
      default:
        if (key.startsWith('Fn::')) return miss(key);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    const resolved = evaluate(value, scope);
    if (resolved !== NO_VALUE) out[key] = resolved;
  }
  return out;
}

/**
 * Reads and resolves the assembly's stack. `missing` collects every reference the template makes
 * that this module cannot make up (reported at start-up, never silently empty).
 */
export function resolveAssembly(dir: string, pseudo: Omit<Pseudo, 'stackName'> & { stackName?: string }): ResolvedAssembly & { missing: string[] } {
  const { file, stackName } = stackTemplateFile(dir, pseudo.stackName);
  const full: Pseudo = { region: pseudo.region, accountId: pseudo.accountId, stackName };
  const missing: string[] = [];
  const resources: Resource[] = [];
  const base = { 'AWS::Region': full.region, 'AWS::AccountId': full.accountId, 'AWS::Partition': 'aws', 'AWS::URLSuffix': 'amazonaws.com', 'AWS::StackName': stackName, 'AWS::StackId': `arn:aws:cloudformation:${full.region}:${full.accountId}:stack/${stackName}/local` };

  const resolve = (stack: string, template: RawTemplate, parameters: Record<string, unknown>): Record<string, string> => {
    const made = new Map(Object.entries(template.Resources).map(([id, r]) => [id, physical(full, stack, id, r)]));
    const params = Object.fromEntries(Object.entries(template.Parameters ?? {}).map(([name, p]) => [name, name in parameters ? parameters[name] : p.Default]));
    const scope: Scope = {
      refs: { ...base, ...params, ...Object.fromEntries([...made].map(([id, p]) => [id, p.ref])) },
      attrs: Object.fromEntries([...made].map(([id, p]) => [id, { ...p.attrs }])),
      conditions: template.Conditions ?? {},
      mappings: (template as { Mappings?: Scope['mappings'] }).Mappings ?? {},
      missing,
      where: stack,
    };
    // Nested stacks first: their outputs are this template's `Outputs.X` attributes.
    for (const [id, r] of Object.entries(template.Resources)) {
      if (r.Type !== 'AWS::CloudFormation::Stack') continue;
      const assetPath = r.Metadata?.['aws:asset:path'] as string | undefined;
      if (!assetPath) throw new Error(`Nested stack ${id} has no aws:asset:path metadata: cannot find its template.`);
      const nestedTemplate = JSON.parse(readFileSync(join(dir, assetPath), 'utf8')) as RawTemplate;
      const outputs = resolve(id, nestedTemplate, evaluate(r.Properties?.Parameters ?? {}, { ...scope, where: `${stack}/${id}.Parameters` }) as Record<string, unknown>);
      scope.attrs[id] = Object.fromEntries(Object.entries(outputs).map(([k, v]) => [`Outputs.${k}`, v]));
    }
    for (const [id, r] of Object.entries(template.Resources)) {
      const p = made.get(id)!;
      const props = evaluate(r.Properties ?? {}, { ...scope, where: `${stack}/${id}` }) as Record<string, any>;
      resources.push({ stack, logicalId: id, type: r.Type, props, ref: p.ref, attrs: scope.attrs[id] ?? {}, metadata: r.Metadata ?? {} });
    }
    return Object.fromEntries(Object.entries(template.Outputs ?? {}).map(([k, o]) => [k, String(evaluate(o.Value, { ...scope, where: `${stack} output ${k}` }))]));
  };

  const template = JSON.parse(readFileSync(file, 'utf8')) as RawTemplate;
  const outputs = resolve('parent', template, {});
  const byRefMap = new Map<string, Resource>();
  for (const r of resources) {
    byRefMap.set(r.ref, r);
    for (const v of Object.values(r.attrs)) if (/^arn:/.test(v) && !byRefMap.has(v)) byRefMap.set(v, r);
  }
  return {
    pseudo: full,
    dir,
    resources,
    outputs,
    missing,
    ofType: (type) => resources.filter((r) => r.type === type),
    byRef: (value) => byRefMap.get(value),
  };
}
