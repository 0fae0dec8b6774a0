import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * cdk-nag acknowledgements, always with a reason. cdk-nag 3 matches acknowledgements by exact finding id
 * (`AwsSolutions-IAM5[Resource::<Bucket.Arn>/transitions/*]`), so wildcard findings are computed from the
 * same resource expression the grant used instead of being hand-typed with logical ids.
 */
export const acknowledge = (scope: IConstruct, id: string, reason: string): void => {
  Validations.of(scope).acknowledge({ id, reason });
};

/** Acknowledges one `AwsSolutions-IAM5[Resource::…]` finding for a resource expression (may hold tokens). */
export const acknowledgeWildcardResource = (scope: IConstruct, resource: string, reason: string): void => {
  acknowledge(scope, `AwsSolutions-IAM5[Resource::${flatten(Stack.of(scope).resolve(resource))}]`, reason);
};

/** The same flattening cdk-nag applies to a resolved CloudFormation expression before it names a finding. */
const flatten = (node: unknown): string => {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/}/g, '>');
  if (node && typeof node === 'object') {
    const value = node as Record<string, unknown>;
    if (Array.isArray(value['Fn::Join'])) {
      const [delimiter, items] = value['Fn::Join'] as [string, unknown[]];
      return items.map(flatten).join(delimiter);
    }
    if ('Fn::Sub' in value) return flatten(value['Fn::Sub']);
    if (Array.isArray(value['Fn::GetAtt'])) {
      const [resource, attribute] = value['Fn::GetAtt'] as [unknown, unknown];
      return `<${flatten(resource)}.${flatten(attribute)}>`;
    }
    if ('Fn::ImportValue' in value) return flatten(value['Fn::ImportValue']);
    if ('Ref' in value) return `<${flatten(value.Ref)}>`;
  }
  return JSON.stringify(node);
};
