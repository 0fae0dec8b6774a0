// A service publishing notification intents with Sendproof's publisher (plain JavaScript, `node publish.mjs`).
import { SQSClient } from '@aws-sdk/client-sqs';
import { PurposeRegistry, publishIntents } from 'sendproof';
import { ORDER_SHIPPED } from './purposes.mjs';

// SQS_ENDPOINT only for a local queue (fauxqs, as in Sendproof's test); unset, the SDK uses the region's endpoint.
const sqs = new SQSClient(process.env.SQS_ENDPOINT ? { endpoint: process.env.SQS_ENDPOINT } : {});
const results = await publishIntents(
  sqs,
  process.env.NOTIFICATIONS_QUEUE_URL,
  [
    {
      eventId: 'shipment-5512',
      purpose: 'order-shipped',
      recipient: { ref: 'customer-881', email: 'kim@example.org', phone: '+15555550199' },
      channels: ['email', 'sms'],
      template: { id: 'order-shipped', revision: 'v1' },
      data: { customerName: 'Kim', orderId: 'ord-5512', trackingUrl: 'https://track.example.org/5512' },
      tenant: 'shop',
    },
    {
      // Refused before it reaches the queue: email is asked for, but there is no address to send to.
      eventId: 'shipment-5513',
      purpose: 'order-shipped',
      recipient: { ref: 'customer-882', phone: '+15555550142' },
      channels: ['email', 'sms'],
      template: { id: 'order-shipped', revision: 'v1' },
      data: { customerName: 'Lee', orderId: 'ord-5513', trackingUrl: 'https://track.example.org/5513' },
      tenant: 'shop',
    },
    {
      // Refused before it reaches the queue: template order-shipped/v1 declares trackingUrl.
      eventId: 'shipment-5514',
      purpose: 'order-shipped',
      recipient: { ref: 'customer-883', email: 'max@example.org', phone: '+15555550143' },
      channels: ['email', 'sms'],
      template: { id: 'order-shipped', revision: 'v1' },
      data: { customerName: 'Max', orderId: 'ord-5514' },
      tenant: 'shop',
    },
  ],
  // The same templates folder the CDK app deploys (templatesDir): what the dispatcher will render.
  { purposes: PurposeRegistry.withOverrides([ORDER_SHIPPED]), templates: 'templates' },
);
for (const result of results)
  if (result.ok) console.log(`published ${result.messageId}: ${result.dedupeKeys.join(', ')}`);
  else console.log(`refused #${result.index}: ${JSON.stringify(result)}`);
process.stdout.write(`${JSON.stringify(results)}\n`);
