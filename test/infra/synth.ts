import { readFileSync } from 'node:fs';
import { AwsSolutionsChecks } from 'cdk-nag';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { VoiceAgentPlatformStack, type VoiceAgentPlatformStackProps } from '../../lib/stack';
import type { Operation } from '../../shared/http/operation';
import type { JobDefinition } from '../../shared/jobs/definition';

/** A resource of a synthesized template, with where it lives. */
export interface FoundResource {
  /** Which template: `parent`, or the area's name (apiArea). */
  stack: string;
  logicalId: string;
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
}

/** The synthesized stack and its nested area stacks, with lookups across all of them. */
export interface Synthesized {
  app: App;
  stack: VoiceAgentPlatformStack;
  parent: Template;
  /** Every template by name: `parent` and one per area (apiArea). */
  templates: Map<string, Template>;
  resources(type: string): FoundResource[];
  /** The resource a `Ref` or `Fn::GetAtt` points at, in the same template. */
  target(from: FoundResource, reference: unknown): FoundResource | undefined;
  /** Statements of every IAM policy attached to a function's role. */
  statementsOf(fn: FoundResource): Array<{ Action: string | string[]; Resource: unknown; Effect: string }>;
}

// The same feature flags `cdk synth` uses, so tests see the template the CLI would make.
const cdkContext = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')).context;

/**
 * Synthesizes the stack the fast way: no bundling (an empty `aws:cdk:bundling-stacks`, so
 * functions get placeholder code) and no built-in template validation (~1.5 s in all).
 */
export function synth(props: VoiceAgentPlatformStackProps = {}): Synthesized {
  const app = new App({ context: { ...cdkContext, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
  const stack = new VoiceAgentPlatformStack(app, 'VoiceAgentPlatform', props);
  const parent = Template.fromStack(stack);
  const templates = new Map<string, Template>([['parent', parent]]);
  for (const [name, area] of stack.areas) templates.set(name, Template.fromStack(area));

  const json = new Map([...templates].map(([name, template]) => [name, template.toJSON()]));
  const all: FoundResource[] = [...json].flatMap(([name, template]) =>
    Object.entries<any>(template.Resources ?? {}).map(([logicalId, resource]) => ({
      stack: name,
      logicalId,
      Type: resource.Type,
      Properties: resource.Properties ?? {},
      DeletionPolicy: resource.DeletionPolicy,
    })),
  );
  const byId = (stackName: string, logicalId: string) => all.find((r) => r.stack === stackName && r.logicalId === logicalId);

  const target: Synthesized['target'] = (from, reference) => {
    const ref = reference as { Ref?: string; 'Fn::GetAtt'?: [string, string] } | undefined;
    const id = ref?.Ref ?? ref?.['Fn::GetAtt']?.[0];
    return id ? byId(from.stack, id) : undefined;
  };

  return {
    app,
    stack,
    parent,
    templates,
    resources: (type) => all.filter((r) => r.Type === type),
    target,
    statementsOf(fn) {
      const role = target(fn, fn.Properties.Role);
      if (!role) throw new Error(`No role found for function ${fn.logicalId}`);
      return all
        .filter((r) => r.Type === 'AWS::IAM::Policy' && r.stack === fn.stack)
        .filter((policy) => (policy.Properties.Roles as unknown[]).some((ref) => target(policy, ref) === role))
        .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
    },
  };
}

/** The function of a registry operation (found by its description, `METHOD path: summary`). */
export function functionFor(s: Synthesized, operation: Operation): FoundResource {
  const found = s
    .resources('AWS::Lambda::Function')
    .filter((fn) => String(fn.Properties.Description).startsWith(`${operation.method} ${operation.path}: `));
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** The function of a job (found by its description, `Job name: …`). */
export function jobFunction(s: Synthesized, job: JobDefinition): FoundResource {
  const found = s
    .resources('AWS::Lambda::Function')
    .filter((fn) => String(fn.Properties.Description).startsWith(`Job ${job.name}: `));
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** Actions of a statement, always as a list. */
export function actionsOf(statement: { Action: string | string[] }): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** The one function whose description starts with `prefix` (fails the test when there is not exactly one). */
export function byDescription(s: Synthesized, prefix: string): FoundResource {
  const found = s.resources('AWS::Lambda::Function').filter((fn) => String(fn.Properties.Description).startsWith(prefix));
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** A function's environment variables. */
export const variables = (fn: FoundResource): Record<string, unknown> => fn.Properties.Environment.Variables;

/** The statements of a function's policy that let it read secrets. */
export const readsSecrets = (s: Synthesized, fn: FoundResource) => s.statementsOf(fn).filter((st) => actionsOf(st).includes('secretsmanager:GetSecretValue'));

/** The cdk-nag AwsSolutions rules the stack breaks at error level. */
export const nagErrors = (s: Synthesized) =>
  new AwsSolutionsChecks(s.app).validateScope(s.stack).violations.filter((v) => v.severity === 'error').map((v) => v.ruleName);
