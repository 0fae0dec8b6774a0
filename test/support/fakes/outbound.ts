import { createServer } from 'node:net';
import { hashKey } from '../../../lib/domain/keys.js';
import type { OutboundMessage } from '../../../lib/transports/port.js';
import { labelOf } from '../evidenceLabels.js';

/** A 64-hex idempotency key, as the dispatcher derives it from a readable dedupe key. */
export const keyFor = (readable: string): string => hashKey(readable);

export const emailMessage = (overrides: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: 'email',
  to: 'ada@example.com',
  subject: 'Your receipt',
  text: 'Thanks for your order.',
  html: '<p>Thanks for your order.</p>',
  dedupeKey: 'default:receipt:order-1:user-1:email:rev=3',
  label: labelOf('default:receipt:order-1:user-1:email:rev=3'),
  ...overrides,
});

export const smsMessage = (overrides: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: 'sms',
  to: '+15555550123',
  text: 'Your code is 123456',
  dedupeKey: 'default:password-reset:challenge-1:user-1:sms',
  label: labelOf('default:password-reset:challenge-1:user-1:sms'),
  ...overrides,
});

/** A loopback port with nothing listening on it: connecting is refused. */
export const closedPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject()));
    });
  });
