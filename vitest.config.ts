import { defineConfig } from 'vitest/config';

const IAM_CHECK = 'test/infra/iamCommands.test.ts';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    env: {
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_EC2_METADATA_DISABLED: 'true',
      CDK_DISABLE_CLI_TELEMETRY: 'true',
      POWERTOOLS_DEV: 'false',
    },
    projects: [
      {
        // Unit tests start no server: no global setup, so `npx vitest run test/unit` needs no Java.
        extends: true,
        // Unit tests are not the integration suite: their clients (fakes named like real resources) are
        // never recorded for the IAM check, even when the servers project turned the recorder on.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], env: { SENDPROOF_AWS_COMMAND_LOG: '' } },
      },
      {
        // One DynamoDB Local for the run of these files only (vitest runs a project's global setup only
        // when one of its files is queued); each test file creates its own tables.
        extends: true,
        test: {
          name: 'servers',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', IAM_CHECK],
          // Also turns the AWS command recorder on for the run (lib/aws/commandLog.ts).
          globalSetup: ['test/support/globalSetup.ts'],
        },
      },
      {
        // The IAM check reads what the other projects' tests recorded, so it runs after them (alone, it
        // runs the function-level integration files itself first; test/infra/iamCommands.test.ts).
        extends: true,
        test: { name: 'iam', include: [IAM_CHECK], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
