import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { appConfigFromContext } from './appConfig.js';
import { SendproofStack } from './SendproofStack.js';

/**
 * `npm run synth` / `npx cdk deploy`: the standalone Sendproof stack. Everything a user chooses comes from
 * CDK context (cdk.json or `-c key=value`), so no code change is needed to deploy. No lookups: synth works
 * offline.
 */
const app = new App();
const config = appConfigFromContext((key) => app.node.tryGetContext(key));
new SendproofStack(app, config.stackName, {
  description: 'Sendproof: delivery-claim ledger for transactional email and SMS',
  env: config.env,
  ledger: config.ledger,
});
// cdk-nag runs on every synth: an unsuppressed AwsSolutions finding fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
