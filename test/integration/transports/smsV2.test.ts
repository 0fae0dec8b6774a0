import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsV2Client } from '../../../lib/aws/messagingClients.js';
import { SmsV2Transport } from '../../../lib/transports/SmsV2Transport.js';
import { awsJson10Error } from '../../support/fakes/awsErrors.js';
import { closedPort, keyFor, smsMessage } from '../../support/fakes/outbound.js';
import { type RecordedRequest, ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';
import { ManualClock } from '../../support/manualClock.js';

/** An AWS JSON 1.0 endpoint for End User Messaging SMS: answers SendTextMessage, refuses anything else. */
const smsV2Endpoint = (req: RecordedRequest) =>
  req.method === 'POST' &&
  req.headers['x-amz-target'] === 'PinpointSMSVoiceV2.SendTextMessage' &&
  String(req.headers['content-type']).startsWith('application/x-amz-json-1.0')
    ? {
        reply: 200,
        headers: { 'content-type': 'application/x-amz-json-1.0' },
        body: { MessageId: randomUUID() },
      }
    : awsJson10Error(400, 'UnknownOperationException', 'unknown operation');

interface SendTextMessageWire {
  DestinationPhoneNumber: string;
  MessageBody: string;
  MessageType: string;
  Context: Record<string, string>;
  TimeToLive?: number;
  OriginationIdentity?: string;
  ConfigurationSetName?: string;
}

describe('SmsV2Transport against an AWS JSON 1.0 End User Messaging SMS fake', () => {
  let fake: ScriptedHttpServer;
  const clock = new ManualClock();

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start(smsV2Endpoint);
  });

  afterAll(async () => {
    await fake.stop();
  });

  const transport = (endpoint = fake.url) =>
    new SmsV2Transport({
      client: smsV2Client({ region: 'us-east-1', endpoint }),
      originationIdentity: 'arn:aws:sms-voice:us-east-1:111122223333:pool/pool-1',
      configurationSetName: 'sendproof-sms-events',
      timeoutMs: 300,
      clock,
    });
  const lastWire = () => JSON.parse(fake.requests.at(-1)!.body) as SendTextMessageWire;

  it('an accepted send returns the MessageId and carries Context, TTL, type and identities', async () => {
    // Prepare
    const message = smsMessage({ expiresAtMs: clock.now() + 15 * 60_000 });
    const key = keyFor(message.dedupeKey);

    // Act
    const result = await transport().send(message, key);

    // Assess
    expect(result).toEqual({ kind: 'accepted', providerMessageId: expect.any(String) });
    expect(fake.requests.at(-1)?.headers['x-amz-target']).toBe('PinpointSMSVoiceV2.SendTextMessage');
    const wire = lastWire();
    // The sealed label only: SMS events name their row by it, and the Context shows nothing readable.
    expect(wire.Context).toEqual({ 'sendproof-key': message.label });
    expect(wire.TimeToLive).toBe(900);
    expect(wire.MessageType).toBe('TRANSACTIONAL');
    expect(wire.DestinationPhoneNumber).toBe('+15555550123');
    expect(wire.OriginationIdentity).toBe('arn:aws:sms-voice:us-east-1:111122223333:pool/pool-1');
    expect(wire.ConfigurationSetName).toBe('sendproof-sms-events');
  });

  it('omits TimeToLive without an expiry and clamps it to the 5..259200 s range AWS accepts', async () => {
    // Act
    await transport().send(smsMessage(), keyFor('a'));
    const none = lastWire().TimeToLive;
    await transport().send(smsMessage({ expiresAtMs: clock.now() + 2_000 }), keyFor('b'));
    const floor = lastWire().TimeToLive;
    await transport().send(smsMessage({ expiresAtMs: clock.now() + 30 * 86_400_000 }), keyFor('c'));
    const ceiling = lastWire().TimeToLive;

    // Assess
    expect(none).toBeUndefined();
    expect(floor).toBe(5);
    expect(ceiling).toBe(259_200);
  });

  it('an already expired message is rejected without calling AWS', async () => {
    // Prepare
    const before = fake.requests.length;

    // Act
    const result = await transport().send(smsMessage({ expiresAtMs: clock.now() - 1 }), keyFor('late'));

    // Assess
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'message_expired_before_send',
      code: 'expired',
      cause: 'content',
    });
    expect(fake.requests.length).toBe(before);
  });

  it('ThrottlingException is retryable', async () => {
    // Prepare
    fake.enqueue(awsJson10Error(400, 'ThrottlingException', 'Rate exceeded'));

    // Act
    const result = await transport().send(smsMessage(), keyFor('t'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'ThrottlingException' });
  });

  it('ServiceQuotaExceededException is retryable and names the quota', async () => {
    // Prepare
    fake.enqueue(
      awsJson10Error(402, 'ServiceQuotaExceededException', 'spend limit', {
        Reason: 'MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT',
      }),
    );

    // Act
    const result = await transport().send(smsMessage(), keyFor('q'));

    // Assess
    // A spend limit refuses every text until it is raised or the month turns: the transport is held.
    expect(result).toEqual({
      kind: 'retryable',
      reason: 'ServiceQuotaExceededException:MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT',
      retryAfterMs: 3_600_000,
      hold: { reason: 'spend_limit' },
    });
  });

  it('ValidationException (invalid destination) is permanent', async () => {
    // Prepare
    fake.enqueue(
      awsJson10Error(400, 'ValidationException', 'invalid phone number', {
        Reason: 'INVALID_PARAMETER',
        Fields: [{ Name: 'DestinationPhoneNumber', Message: 'invalid phone number' }],
      }),
    );

    // Act
    const result = await transport().send(smsMessage({ to: '+1555' }), keyFor('v'));

    // Assess
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'ValidationException:INVALID_PARAMETER',
      // The service's Reason travels with the code, so the ledger can tell an opt-out from a bad number.
      code: 'ValidationException:INVALID_PARAMETER',
      // The field list names the destination: the recipient caused it, no other provider would take it.
      cause: 'recipient',
    });
  });

  it('ConflictException DESTINATION_PHONE_NUMBER_OPTED_OUT is a rejection caused by an opt-out', async () => {
    // Prepare
    fake.enqueue(
      awsJson10Error(400, 'ConflictException', 'destination opted out', {
        Reason: 'DESTINATION_PHONE_NUMBER_OPTED_OUT',
        ResourceType: 'opted-out-number',
        ResourceId: '+15555550123',
      }),
    );

    // Act
    const result = await transport().send(smsMessage(), keyFor('o'));

    // Assess
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'ConflictException:DESTINATION_PHONE_NUMBER_OPTED_OUT',
      code: 'ConflictException:DESTINATION_PHONE_NUMBER_OPTED_OUT',
      cause: 'opted_out',
    });
  });

  it('InternalServerException is ambiguous', async () => {
    // Prepare
    fake.enqueue(awsJson10Error(500, 'InternalServerException', 'oops'));

    // Act
    const result = await transport().send(smsMessage(), keyFor('i'));

    // Assess
    expect(result.kind).toBe('ambiguous');
  });

  it('a socket destroyed after the request was read is ambiguous', async () => {
    // Prepare
    fake.enqueue({ destroyAfterRequest: true });

    // Act
    const result = await transport().send(smsMessage(), keyFor('d'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
  });

  it('no answer within the timeout is ambiguous', async () => {
    // Prepare
    fake.enqueue({ hang: true });

    // Act
    const result = await transport().send(smsMessage(), keyFor('h'));

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_timeout_after_send' });
  });

  it('connection refused is retryable', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const result = await transport(`http://127.0.0.1:${port}`).send(smsMessage(), keyFor('r'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });
});
