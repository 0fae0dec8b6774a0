import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type { NotificationLedgerProps } from '../../infra/NotificationLedger.js';
import { SendproofStack, type SendproofStackProps } from '../../infra/SendproofStack.js';

/** A realistic configuration: SES for email, End User Messaging SMS for text. */
export const SES_AND_SMS: NotificationLedgerProps = {
  email: { transport: 'ses', fromAddress: 'no-reply@example.com', sesIdentity: 'example.com' },
  sms: {
    transport: 'sms-v2',
    originationIdentityArn: 'arn:aws:sms-voice:eu-west-1:111122223333:phone-number/phone-0123456789abcdef',
  },
  archiveRetentionDays: 400,
};

/**
 * Synthesizes one SendproofStack for assertions. Bundling is skipped (esbuild output is not what these tests
 * look at; `npm run synth` bundles for real) and CloudFormation validation is off, per TOOLCHAIN.md.
 */
export const synthStack = (ledger: SendproofStackProps['ledger']) => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
  const stack = new SendproofStack(app, 'Test', {
    env: { account: '111122223333', region: 'eu-west-1' },
    ledger,
  });
  return { app, stack, template: Template.fromStack(stack) };
};

export interface Statement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

/** Every Allow statement attached to one role, with actions as an array. */
export const statementsOf = (stack: Stack, template: Template, role: iam.Role): Statement[] => {
  const roleId = stack.getLogicalId(role.node.defaultChild as never);
  const policies = template.findResources('AWS::IAM::Policy');
  return Object.values(policies)
    .filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[])
    .map((s) => ({ ...s, Action: typeof s.Action === 'string' ? [s.Action] : s.Action }));
};

export const actionsOf = (statements: Statement[]): string[] =>
  [...new Set(statements.flatMap((s) => s.Action as string[]))].sort();

/** The statements that allow `action`. */
export const allowing = (statements: Statement[], action: string): Statement[] =>
  statements.filter((s) => s.Effect === 'Allow' && (s.Action as string[]).includes(action));
