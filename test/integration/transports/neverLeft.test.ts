import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sesClient } from '../../../lib/aws/messagingClients.js';
import { classifyAwsError, classifyExchangeFailure } from '../../../lib/transports/classify.js';
import { RestTransport } from '../../../lib/transports/RestTransport.js';
import { SesTransport } from '../../../lib/transports/SesTransport.js';
import { closedPort, emailMessage, keyFor } from '../../support/fakes/outbound.js';
import { ClientSocketFaults, startReadingServer, systemError } from '../../support/fakes/socketFaults.js';

const rest = (baseUrl: string) => new RestTransport({ baseUrl, channel: 'email' });
const ses = (endpoint: string) =>
  new SesTransport({ client: sesClient({ region: 'us-east-1', endpoint }), from: 'receipts@sendproof.test' });

describe('a "never left" network code counts only before the request was written (pure rules)', () => {
  it('any code after the last byte was handed to the kernel is ambiguous, route codes included', () => {
    // Act
    const afterWrite = ['EHOSTUNREACH', 'ENETUNREACH', 'ECONNREFUSED', 'EADDRNOTAVAIL'].map((code) =>
      classifyExchangeFailure({ kind: 'failure', stage: 'response', code }),
    );
    const beforeConnect = classifyExchangeFailure({
      kind: 'failure',
      stage: 'connect',
      code: 'EHOSTUNREACH',
    });
    // Assess
    expect(afterWrite.map((r) => r.kind)).toEqual(['ambiguous', 'ambiguous', 'ambiguous', 'ambiguous']);
    expect(afterWrite[0]).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:EHOSTUNREACH' });
    expect(beforeConnect).toEqual({ kind: 'retryable', reason: 'request_never_left:EHOSTUNREACH' });
  });

  it('an AWS SDK network error is never-left only when connect() or the DNS lookup raised it', () => {
    // Act
    const kinds = [
      systemError('EHOSTUNREACH', 'connect'),
      systemError('ENETUNREACH', 'connect'),
      systemError('ENOTFOUND', 'getaddrinfo'),
      systemError('EHOSTUNREACH', 'read'),
      systemError('ENETUNREACH', 'write'),
      Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), // no syscall: no proof
    ].map((error) => classifyAwsError(error, {}, 0).kind);
    // Assess
    expect(kinds).toEqual(['retryable', 'retryable', 'retryable', 'ambiguous', 'ambiguous', 'ambiguous']);
  });
});

describe('a "never left" network code counts only before the request was written (real loopback sockets)', () => {
  const faults = new ClientSocketFaults();
  let resetting: Awaited<ReturnType<typeof startReadingServer>>;
  let unreachable: Awaited<ReturnType<typeof startReadingServer>>;

  beforeAll(async () => {
    faults.start();
    // Reads the whole request, then resets the connection (RST) without a byte of answer.
    resetting = await startReadingServer((socket) => socket.resetAndDestroy());
    // Reads the whole request; then the client's established socket fails as the kernel reports a lost
    // route (EHOSTUNREACH on a read), while the provider already holds the request.
    unreachable = await startReadingServer((socket) => faults.failPeerOf(socket, 'EHOSTUNREACH'));
  });

  afterAll(async () => {
    faults.stop();
    await resetting.stop();
    await unreachable.stop();
  });

  it('REST: a refused port is retryable; nothing reached a server', async () => {
    // Prepare
    const port = await closedPort();
    // Act
    const result = await rest(`http://127.0.0.1:${port}`).send(emailMessage(), keyFor('refused'));
    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
  });

  it('REST: a server that resets after reading the request leaves the send ambiguous', async () => {
    // Act
    const result = await rest(resetting.url).send(emailMessage(), keyFor('reset'));
    // Assess
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:ECONNRESET' });
    expect(resetting.received()).toBe(1);
  });

  it('REST: EHOSTUNREACH after the server read the request is ambiguous, not "never left"', async () => {
    // Act
    const result = await rest(unreachable.url).send(emailMessage(), keyFor('unreachable'));
    // Assess
    expect(unreachable.received()).toBe(1);
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:EHOSTUNREACH' });
  });

  it('REST: ENETUNREACH raised by connect() is retryable; the server never saw the request', async () => {
    // Prepare
    const before = unreachable.received();
    faults.failNextConnect('ENETUNREACH');
    // Act
    const result = await rest(unreachable.url).send(emailMessage(), keyFor('no-route'));
    // Assess
    expect(result).toEqual({ kind: 'retryable', reason: 'request_never_left:ENETUNREACH' });
    expect(unreachable.received()).toBe(before);
  });

  it('SES (AWS SDK): EHOSTUNREACH after the server read the request is ambiguous', async () => {
    // Prepare
    const before = unreachable.received();
    // Act
    const result = await ses(unreachable.url).send(emailMessage(), keyFor('ses-unreachable'));
    // Assess
    expect(unreachable.received()).toBe(before + 1);
    expect(result).toEqual({ kind: 'ambiguous', reason: 'connection_lost_after_send:EHOSTUNREACH' });
  });

  it('SES (AWS SDK): EHOSTUNREACH raised by connect() and a refused port are retryable', async () => {
    // Prepare
    const before = unreachable.received();
    const port = await closedPort();
    faults.failNextConnect('EHOSTUNREACH');
    // Act
    const noRoute = await ses(unreachable.url).send(emailMessage(), keyFor('ses-no-route'));
    const refused = await ses(`http://127.0.0.1:${port}`).send(emailMessage(), keyFor('ses-refused'));
    // Assess
    expect(noRoute).toEqual({ kind: 'retryable', reason: 'request_never_left:EHOSTUNREACH' });
    expect(refused).toEqual({ kind: 'retryable', reason: 'request_never_left:ECONNREFUSED' });
    expect(unreachable.received()).toBe(before);
  });
});
