import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Acknowledges the cdk-nag IAM5 finding for a wildcard that a CDK grant puts on a resource
 * (`<table arn>/index/*`, `<bucket arn>/*`, `<function arn>:*`).
 *
 * cdk-nag names such a finding after the resolved ARN (`Resource::<Ref>/index/*`), and an ARN
 * that crosses into a nested stack only becomes its final parameter reference when the app is
 * prepared for synthesis. So the finding id is computed in a validation hook, which runs after
 * that step and before cdk-nag reads the acknowledgments. Acknowledging the exact finding (not
 * IAM5 as a whole) keeps any other wildcard on the same role reported.
 */
export function acknowledgeGrantedResourceWildcard(holder: IConstruct, arn: string, suffix: string, reason: string): void {
  holder.node.addValidation({
    validate: () => {
      const resource = flattenReference(Stack.of(holder).resolve(arn));
      Validations.of(holder).acknowledge({ id: `AwsSolutions-IAM5[Resource::${resource}${suffix}]`, reason });
      return [];
    },
  });
}

/** Flattens a resolved CloudFormation reference the way cdk-nag names findings (`<Logical.Attr>`, `<Ref>`). */
function flattenReference(node: unknown): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/}/g, '>');
  const value = node as Record<string, unknown>;
  if (value['Fn::Join']) {
    const [delimiter, items] = value['Fn::Join'] as [string, unknown[]];
    return items.map(flattenReference).join(delimiter);
  }
  if (value['Fn::Sub']) return flattenReference(value['Fn::Sub']);
  if (value['Fn::GetAtt']) {
    const [resource, attribute] = value['Fn::GetAtt'] as [unknown, unknown];
    return `<${flattenReference(resource)}.${flattenReference(attribute)}>`;
  }
  if (value['Fn::ImportValue']) return flattenReference(value['Fn::ImportValue']);
  if (value.Ref) return `<${flattenReference(value.Ref)}>`;
  return JSON.stringify(node);
}
