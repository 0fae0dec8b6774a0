import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sesClient } from '../../../lib/aws/messagingClients.js';
import { startSesLocal } from '../../../lib/local/sesLocal.js';
import { SesTransport } from '../../../lib/transports/SesTransport.js';
import { sesV2Error } from '../../support/fakes/awsErrors.js';
import { closedPort, emailMessage, keyFor } from '../../support/fakes/outbound.js';
import { ScriptedHttpServer } from '../../support/fakes/ScriptedHttpServer.js';

interface StoredEmail {
  messageId: string;
  from: string;
  destination: { to: string[] };
  subject: string;
  body: { text?: string; html?: string };
  attachments: Array<{ content: string; contentType: string; filename?: string; size: number }>;
}

const sesTransport = (endpoint: string, extra: { configurationSetName?: string; timeoutMs?: number } = {}) =>
  new SesTransport({
    client: sesClient({ region: 'us-east-1', endpoint }),
    from: 'receipts@sendproof.test',
    ...extra,
  });

const pdf = new Uint8Array(Buffer.from('%PDF-1.7 fake receipt bytes'));

describe('SesTransport against aws-ses-v2-local (real SES v2 emulator)', () => {
  let emulator: { url: string; stop(): Promise<void> };
  let emulatorUrl: string;
  let recorder: ScriptedHttpServer;

  beforeAll(async () => {
    emulator = await startSesLocal();
    emulatorUrl = emulator.url;
    // Relays to the emulator and keeps the wire request: the emulator does not store EmailTags.
    recorder = await ScriptedHttpServer.start(() => ({ forwardTo: emulatorUrl }));
  });

  afterAll(async () => {
    await recorder.stop();
    await emulator.stop();
  });

  const stored = async (): Promise<StoredEmail[]> =>
    ((await (await fetch(`${emulatorUrl}/store`)).json()) as { emails: StoredEmail[] }).emails;

  it('an accepted send returns the SES message id, and the email with its attachment arrives', async () => {
    // Prepare
    const transport = sesTransport(emulatorUrl);
    const message = emailMessage({
      attachments: [{ filename: 'receipt-1.pdf', contentType: 'application/pdf', content: pdf }],
    });

    // Act
    const result = await transport.send(message, keyFor(message.dedupeKey));

    // Assess
    expect(result.kind).toBe('accepted');
    const email = (await stored()).find(
      (e) => result.kind === 'accepted' && e.messageId === result.providerMessageId,
    );
    expect(email).toBeDefined();
    expect(email?.destination.to).toEqual(['ada@example.com']);
    expect(email?.subject).toBe('Your receipt');
    expect(email?.body.text).toBe('Thanks for your order.');
    expect(email?.attachments).toHaveLength(1);
    expect(email?.attachments[0]).toMatchObject({
      filename: 'receipt-1.pdf',
      contentType: 'application/pdf',
    });
    expect(Buffer.from(email!.attachments[0]!.content, 'base64')).toEqual(Buffer.from(pdf));
  });

  it('carries the sealed label, and nothing readable, in EmailTags and sets the configuration set', async () => {
    // Prepare
    const transport = sesTransport(recorder.url, { configurationSetName: 'sendproof-events' });
    const message = emailMessage();
    const key = keyFor(message.dedupeKey);

    // Act
    const result = await transport.send(message, key);

    // Assess
    expect(result.kind).toBe('accepted');
    const wire = JSON.parse(recorder.requests.at(-1)!.body) as {
      EmailTags: Array<{ Name: string; Value: string }>;
      ConfigurationSetName: string;
    };
    // The sealed label only, in SES's tag alphabet (API_MessageTag: [A-Za-z0-9_-], at most 256).
    expect(wire.EmailTags).toEqual([{ Name: 'sendproof-key', Value: message.label }]);
    expect(wire.EmailTags.every((t) => /^[A-Za-z0-9_-]{1,256}$/.test(t.Value))).toBe(true);
    expect(wire.ConfigurationSetName).toBe('sendproof-events');
    // The emulator accepted exactly that request.
    expect(
      (await stored()).some((e) => result.kind === 'accepted' && e.messageId === result.providerMessageId),
    ).toBe(true);
  });
});

describe('SesTransport against an SES v2 error fake (answers the emulator never gives)', () => {
  let fake: ScriptedHttpServer;

  beforeAll(async () => {
    fake = await ScriptedHttpServer.start();
  });

  afterAll(async () => {
    await fake.stop();
  });

  const send = () => sesTransport(fake.url, { timeoutMs: 300 }).send(emailMessage(), keyFor('k'));

  it('429 TooManyRequestsException is retryable and keeps Retry-After', async () => {
    // Prepare
    fake.enqueue(
      sesV2Error(429, 'TooManyRequestsException', 'Maximum sending rate exceeded.', { 'retry-after': '2' }),
    );

    // Act
    const result = await send();

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'TooManyRequestsException', retryAfterMs: 2_000 });
  });

  it('ThrottlingException "Maximum sending rate exceeded" (HTTP 400) is retryable, not rejected', async () => {
    // Prepare: the SES developer guide, "Errors related to the sending quotas": the API answers
    // ThrottlingException; the SDK does not model it, so it arrives as a plain SESv2ServiceException
    fake.enqueue(sesV2Error(400, 'ThrottlingException', 'Maximum sending rate exceeded.'));

    // Act
    const result = await send();

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'ThrottlingException' });
  });

  it('ThrottlingException "Daily message quota exceeded" holds the transport: retryable with a hold', async () => {
    // Prepare
    fake.enqueue(sesV2Error(400, 'ThrottlingException', 'Daily message quota exceeded.'));

    // Act
    const result = await send();

    // Assess: every send would be refused until the quota resets, so the transport waits (10 min, as
    // the guide advises: "wait for an interval of up to 10 minutes, and then retry")
    expect(result).toEqual({
      kind: 'retryable',
      reason: 'ThrottlingException',
      retryAfterMs: 600_000,
      hold: { reason: 'daily_quota' },
    });
  });

  it('SendingPausedException holds the transport: retryable with a hold, never rejected', async () => {
    // Prepare
    fake.enqueue(sesV2Error(400, 'SendingPausedException', 'Sending is paused for this account.'));

    // Act
    const result = await send();

    // Assess
    expect(result).toEqual({
      kind: 'retryable',
      reason: 'SendingPausedException',
      retryAfterMs: 600_000,
      hold: { reason: 'sending_paused' },
    });
  });

  it('an unmodeled error the SDK retries as transient (RequestTimeoutException, 400) is not rejected', async () => {
    // Prepare: no table names it; the adapter asks the SDK's own retry classification
    fake.enqueue(sesV2Error(400, 'RequestTimeoutException', 'Request timed out.'));

    // Act
    const result = await send();

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'RequestTimeoutException' });
  });

  it('400 MessageRejected is permanent', async () => {
    // Prepare
    fake.enqueue(sesV2Error(400, 'MessageRejected', 'Email address is not verified.'));

    // Act
    const result = await send();

    // Assess
    // "Email address is not verified": an identity SES has not verified is our configuration at SES.
    expect(result).toEqual({
      kind: 'rejected',
      reason: 'MessageRejected',
      code: 'MessageRejected',
      cause: 'provider',
    });
  });

  it('AccountSuspendedException is permanent (no retry budget outlasts a suspension)', async () => {
    // Prepare
    fake.enqueue(sesV2Error(400, 'AccountSuspendedException', 'Account suspended.'));

    // Act
    const result = await send();

    // Assess
    expect(result).toMatchObject({ kind: 'rejected', code: 'AccountSuspendedException', cause: 'account' });
  });

  it('a 5xx is ambiguous: SES may have taken the message', async () => {
    // Prepare
    fake.enqueue(sesV2Error(500, 'InternalFailure', 'Internal failure.'));

    // Act
    const result = await send();

    // Assess
    expect(result.kind).toBe('ambiguous');
  });

  it('a connection reset after the request was written is ambiguous', async () => {
    // Prepare
    fake.enqueue({ destroyAfterRequest: true });
    const before = fake.requests.length;

    // Act
    const result = await send();

    // Assess
    expect(fake.requests.length).toBe(before + 1);
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
  });

  it('no answer within the timeout is ambiguous', async () => {
    // Prepare
    fake.enqueue({ hang: true });

    // Act
    const result = await send();

    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'provider_timeout_after_send' });
  });

  it('connection refused is retryable: the request never left', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const result = await sesTransport(`http://127.0.0.1:${port}`).send(emailMessage(), keyFor('k'));

    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });
});
