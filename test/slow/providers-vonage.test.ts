/**
 * Vonage: the Messages API request on the wire (to a local server given as the base URL), the application JWT
 * verified with the application's public key, and the signed-webhook checks of status callbacks.
 */
import { createVerify, generateKeyPairSync } from 'node:crypto';
import { VonageProvider, type ReplayGuard } from '../../functions/adapters/providers/vonage';
import { vonageSignedWebhookToken } from '../../local/vonage-signed-webhook';
import type { OutboundMessage } from '../../functions/core/providers';
import { startWireServer, type WireServer } from '../support/provider-wire';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const credentials = {
  applicationId: 'aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab',
  privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  signatureSecret: 'a-signature-secret-of-vonage-0123',
};
const now = new Date('2026-03-01T12:00:00Z');
const reference = 'VE0123456789abcdef0123456789abcdef.2';
const message = (overrides: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: 'viber',
  to: '+447700900123',
  body: 'Your code is 482913.',
  code: '482913',
  reference,
  expiresAt: '2026-03-01T12:04:10Z',
  ...overrides,
});

class MemoryReplays implements ReplayGuard {
  readonly seen = new Set<string>();
  firstUse(id: string): Promise<boolean> {
    if (this.seen.has(id)) return Promise.resolve(false);
    this.seen.add(id);
    return Promise.resolve(true);
  }
}

let server: WireServer;
beforeAll(async () => {
  server = await startWireServer({
    status: 202,
    body: { message_uuid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab' },
  });
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
  server.answer = { status: 202, body: { message_uuid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab' } };
});

const provider = (replays: ReplayGuard = new MemoryReplays()) =>
  new VonageProvider({
    baseUrl: server.url,
    credentials: () => Promise.resolve(credentials),
    from: { viber: '16273', sms: 'Acme', rcs: 'acme_agent', whatsapp: '447700900000' },
    whatsappTemplate: { name: 'otp_code', language: 'en_GB' },
    replays,
    now: () => now,
  });

function decodeJwt(token: string) {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const verified = createVerify('RSA-SHA256')
    .update(`${header}.${payload}`)
    .verify(publicKey, Buffer.from(signature, 'base64url'));
  return {
    verified,
    header: JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>,
  };
}

describe('sending', () => {
  test('viber: POST /v1/messages, RS256 application JWT, viber_service with TTL and our client_ref', async () => {
    await expect(provider().send(message())).resolves.toEqual({
      status: 'accepted',
      messageId: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab',
    });
    const [request] = server.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/v1/messages');
    const token = /^Bearer (.+)$/.exec(request!.headers.authorization ?? '')?.[1];
    const jwt = decodeJwt(token!);
    expect(jwt.verified).toBe(true);
    expect(jwt.header).toEqual({ alg: 'RS256', typ: 'JWT' });
    expect(jwt.claims).toEqual({
      application_id: credentials.applicationId,
      iat: now.getTime() / 1000,
      exp: now.getTime() / 1000 + 900,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(JSON.parse(request!.body)).toEqual({
      to: '447700900123',
      from: '16273',
      client_ref: reference,
      channel: 'viber_service',
      message_type: 'text',
      text: 'Your code is 482913.',
      // Vonage documents `viber_service.type` for templates only (set up with Vonage): a text message has none.
      viber_service: { ttl: 250, category: 'transaction' },
    });
  });

  test('whatsapp: the code fills the template as data, whatever else the text holds', async () => {
    await provider().send(
      message({ channel: 'whatsapp', body: 'Order 20261126: your code is AB12CD.', code: 'AB12CD' }),
    );
    const sent = JSON.parse(server.requests[0]!.body) as {
      custom: { template: { components: { parameters: { text: string }[] }[] } };
    };
    expect(sent.custom.template.components.map((component) => component.parameters[0]!.text)).toEqual([
      'AB12CD',
      'AB12CD',
    ]);
  });

  test('errors of ours carry a code; a send with no answer is given up as a timeout', async () => {
    server.answer = { status: 401, body: { title: 'Unauthorized' } };
    await expect(provider().send(message())).rejects.toMatchObject({ code: 'access_denied' });
    server.answer = { status: 429, body: { title: 'Too Many Requests' } };
    await expect(provider().send(message())).rejects.toMatchObject({ code: 'throttled' });
    server.answer = { status: 202, body: { message_uuid: 'late' }, delayMs: 5_000 };
    const slow = new VonageProvider({
      baseUrl: server.url,
      credentials: () => Promise.resolve(credentials),
      from: { viber: '16273' },
      timeoutMs: 200,
      now: () => now,
    });
    await expect(slow.send(message())).rejects.toMatchObject({ code: 'timeout' });
  });

  // A send given up while Vonage is still taking it may be delivered anyway: the next channel would be a second
  // message, paid. The limit sits below the 8 s channel switch but well above Vonage's usual answer.
  test('a slow but accepted send (4 s) is not abandoned', async () => {
    server.answer = { status: 202, body: { message_uuid: 'slow-but-fine' }, delayMs: 4_000 };
    await expect(provider().send(message())).resolves.toEqual({
      status: 'accepted',
      messageId: 'slow-but-fine',
    });
  }, 10_000);

  test('sms, rcs and whatsapp bodies', async () => {
    for (const channel of ['sms', 'rcs', 'whatsapp'] as const) await provider().send(message({ channel }));
    const [sms, rcs, whatsapp] = server.requests.map(
      (request) => JSON.parse(request.body) as Record<string, unknown>,
    );
    expect(sms).toEqual({
      to: '447700900123',
      from: 'Acme',
      client_ref: reference,
      channel: 'sms',
      message_type: 'text',
      text: 'Your code is 482913.',
    });
    expect(rcs).toMatchObject({ channel: 'rcs', from: 'acme_agent', message_type: 'text', ttl: 250 });
    // The template's TTL is its own (set on the template at Meta), never a field of the message.
    expect(JSON.stringify(whatsapp)).not.toContain('ttl');
    expect(whatsapp).toMatchObject({
      channel: 'whatsapp',
      message_type: 'custom',
      from: '447700900000',
      custom: {
        type: 'template',
        template: {
          name: 'otp_code',
          language: { code: 'en_GB' },
          components: [
            { type: 'body', parameters: [{ type: 'text', text: '482913' }] },
            { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: '482913' }] },
          ],
        },
      },
    });
  });

  test('a refused `to` is a rejection of the number; other errors are thrown', async () => {
    server.answer = {
      status: 422,
      body: { title: 'Invalid params', invalid_parameters: [{ name: 'to', reason: 'Invalid number' }] },
    };
    await expect(provider().send(message())).resolves.toEqual({
      status: 'rejected',
      reason: 'Invalid params',
    });
    // Vonage's Node SDK types `invalid_parameters` as one object, its OpenAPI document as a list: both read.
    server.answer = { status: 422, body: { title: 'Invalid params', invalid_parameters: { name: 'to' } } };
    await expect(provider().send(message())).resolves.toMatchObject({ status: 'rejected' });
    server.answer = { status: 422, body: { title: 'Invalid params', invalid_parameters: [null, 'from'] } };
    await expect(provider().send(message())).rejects.toThrow(/422/);
    server.answer = { status: 429, body: { title: 'Rate Limit Hit' } };
    await expect(provider().send(message())).rejects.toThrow(/429/);
    server.answer = { status: 401, body: { title: 'Unauthorized' } };
    await expect(provider().send(message())).rejects.toThrow(/401/);
  });
});

describe('signed status callbacks', () => {
  // Source: Vonage Messages API v1 reference, message status webhook (developer.vonage.com/en/api/messages),
  // a Viber delivered status; `client_ref` is what we sent.
  const status = (value = 'delivered') =>
    JSON.stringify({
      message_uuid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab',
      to: '447700900123',
      from: '16273',
      timestamp: '2026-03-01T12:00:01Z',
      status: value,
      channel: 'viber_service',
      client_ref: reference,
      usage: { currency: 'EUR', price: '0.0333' },
    });
  // Vonage's token, made apart from the adapter's verifier (local/vonage-signed-webhook.ts).
  const token = (body: string, overrides: { secret?: string; at?: Date; jti?: string } = {}) =>
    vonageSignedWebhookToken(body, {
      secret: overrides.secret ?? credentials.signatureSecret,
      at: overrides.at ?? now,
      apiKey: 'a1b2c3d4',
      applicationId: credentials.applicationId,
      ...(overrides.jti !== undefined && { jti: overrides.jti }),
    });
  const signed = (body: string, overrides: { secret?: string; at?: Date; jti?: string } = {}) => ({
    headers: {
      authorization: `Bearer ${token(body, overrides)}`,
    },
    body,
  });

  test('a valid callback is a receipt: delivered, read → delivered; rejected, undeliverable → failed', async () => {
    const vonage = provider();
    const cases = [
      ['delivered', 'delivered'],
      ['read', 'delivered'],
      ['rejected', 'failed'],
      ['undeliverable', 'failed'],
    ] as const;
    for (const [value, outcome] of cases) {
      await expect(vonage.parseReceipt(signed(status(value)), now)).resolves.toEqual({
        reference,
        messageId: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab',
        status: outcome,
      });
    }
  });

  test('tampered body, wrong secret, stale iat, replayed jti and missing token are refused', async () => {
    const vonage = provider();
    const body = status();
    const tampered = { ...signed(body), body: body.replace('delivered', 'read') };
    await expect(vonage.parseReceipt(tampered, now)).resolves.toBeUndefined();
    await expect(
      vonage.parseReceipt(signed(body, { secret: 'another-secret-of-16+chars' }), now),
    ).resolves.toBeUndefined();
    await expect(
      vonage.parseReceipt(signed(body, { at: new Date(now.getTime() - 301_000) }), now),
    ).resolves.toBeUndefined();
    await expect(
      vonage.parseReceipt(signed(body, { at: new Date(now.getTime() + 301_000) }), now),
    ).resolves.toBeUndefined();
    const once = signed(body, { jti: 'jti-1' });
    await expect(vonage.parseReceipt(once, now)).resolves.toMatchObject({ status: 'delivered' });
    await expect(vonage.parseReceipt(once, now)).resolves.toBeUndefined();
    await expect(vonage.parseReceipt({ headers: {}, body }, now)).resolves.toBeUndefined();
    await expect(
      vonage.parseReceipt({ headers: { authorization: 'Bearer x.y' }, body }, now),
    ).resolves.toBeUndefined();
  });

  test('a token with alg none or RS256 is refused, and a refused token is not spent', async () => {
    const replays = new MemoryReplays();
    const vonage = provider(replays);
    const body = status();
    const [, payload] = token(body, { jti: 'jti-2' }).split('.');
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
    await expect(
      vonage.parseReceipt({ headers: { authorization: `Bearer ${none}` }, body }, now),
    ).resolves.toBeUndefined();
    await expect(
      vonage.parseReceipt(signed(body, { secret: 'another-secret-of-16+chars', jti: 'jti-3' }), now),
    ).resolves.toBeUndefined();
    expect(replays.seen.size).toBe(0);
  });

  test('a signed status that is no receipt (submitted) is acknowledged without a reference', async () => {
    await expect(provider().parseReceipt(signed(status('submitted')), now)).resolves.toMatchObject({
      reference: '',
    });
  });
});
