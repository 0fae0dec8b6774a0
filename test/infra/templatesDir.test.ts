import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { NotificationLedger } from '../../infra/NotificationLedger.js';
import { copyBuiltIns, makeTemplatesDir, writeRevision } from '../unit/templates/revisionFixture.js';
import { SES_AND_SMS } from './synth.js';

const build = (templatesDir: string) => () => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new NotificationLedger(new Stack(app, 'Host'), 'Ledger', { ...SES_AND_SMS, templatesDir });
};

const REVISION = {
  definition: { owner: 'application', channels: ['sms'], variables: ['orderId'], defaultLocale: 'en' },
  files: { 'sms.txt': 'Order {{orderId}} shipped' },
};

describe('NotificationLedger templatesDir', () => {
  it('accepts a folder whose revisions are all published and check clean', () => {
    const { dir, remove } = makeTemplatesDir();
    try {
      writeRevision(dir, 'order-shipped', 'v1', REVISION);
      expect(build(dir)).not.toThrow();
    } finally {
      remove();
    }
  });

  it('fails synth on a revision the dispatcher would refuse, naming it', () => {
    const { dir, remove } = makeTemplatesDir();
    try {
      copyBuiltIns(dir);
      writeRevision(dir, 'order-shipped', 'v1', { ...REVISION, publish: false });
      expect(build(dir)).toThrow(
        /templatesDir: order-shipped\/v1: order-shipped\/v1 is not in manifest\.json/,
      );
      writeRevision(dir, 'order-shipped', 'v2', {
        ...REVISION,
        files: { 'sms.txt': 'Order {{order}} shipped' },
      });
      expect(build(dir)).toThrow(
        /order-shipped\/v2\/sms\.txt: uses order, which template\.json declares neither/,
      );
      expect(build(join(dir, 'missing'))).toThrow(/templatesDir .*missing does not exist/);
    } finally {
      remove();
    }
  });
});
