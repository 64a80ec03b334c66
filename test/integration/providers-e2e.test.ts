/**
 * The real provider adapters end to end, through the local stack with the provider simulator
 * (local/provider-simulator.ts): aws-sms for sms and rcs (SendTextMessage, awsJson1_0, receipts as the
 * configuration set's SNS events), aws-whatsapp (SendWhatsAppMessage, restJson, receipts as the WABA's SNS
 * events), vonage for viber and, in France (a per-country override), for sms, whatsapp and rcs (Messages API with
 * the RS256 application JWT, receipts as signed webhooks to `POST /v2/Callbacks/vonage`); sna stays on the
 * simulated carrier. The carrier's rules drive the simulator.
 */
import { generateKeyPairSync } from 'node:crypto';
import { applicationJwt } from '../../functions/adapters/providers/vonage-jwt';
import { eventually, startHarness, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
/** Short for the tests, long enough that moving on at once and moving on after it stay apart on a loaded machine. */
const CHANNEL_WAIT_SECONDS = 2;
let counter = 0;
/** Indian mobiles: with these providers sms (aws-sms) is the cheapest channel, then whatsapp, then rcs. */
const indianMobile = () => `+9198765${String(100_000 + ++counter).slice(1)}`;
/** UK mobiles reach viber (vonage). */
const ukMobile = () => `+447400${String(1_500_000 + ++counter).slice(1)}`;
/** French mobiles: the simulator's configuration gives France's sms, whatsapp and rcs to vonage. */
const frenchMobile = () => `+33612${String(1_000_000 + ++counter).slice(1)}`;

beforeAll(async () => {
  // A 2 s channel wait: the simulated receipts come 200 ms after the send, but a loaded machine (the whole suite on
  // two cores) once took over 1 s to hand WhatsApp's to the SNS receipt function, and the fallback test moved on.
  harness = await startHarness({
    providerSimulator: true,
    settings: { channelWaitSeconds: CHANNEL_WAIT_SECONDS },
  });
  // The first start after a change to lib/ synthesizes the stack for the simulator's grants.
}, 180_000);
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

const simulator = () => harness.stack.providerSimulator!;

async function client(channels?: ('sms' | 'whatsapp' | 'viber' | 'rcs' | 'sna')[]): Promise<ApiClient> {
  return harness.client(await harness.createAccount(channels ? { channels } : {}));
}

async function pollUntil(api: ApiClient, sid: string, status: string, timeoutMs = 15_000) {
  return eventually(
    async () => {
      const response = await api.fetch(sid);
      return response.body.delivery_status === status ? response.body : undefined;
    },
    timeoutMs,
    50,
  );
}

/** Sends, waits for DELIVERED, checks the delivered code; the messages to the number, oldest first. */
async function deliveredOver(api: ApiClient, to: string, channel: string) {
  const sent = await api.send({ To: to });
  expect(sent.status).toBe(201);
  const sid = sent.body.sid as string;
  const final = await pollUntil(api, sid, 'DELIVERED');
  expect(final.channel).toBe(channel);
  // The inbox shows it delivered once the receipt handler has taken the receipt.
  const messages = await eventually(async () => {
    const all = await api.messages(to);
    return all[0]?.outcome === 'delivered' ? all.reverse() : undefined;
  });
  const checked = await api.check({ VerificationSid: sid, Code: await api.latestCode(to) });
  expect(checked.body.status).toBe('VERIFIED');
  return { sid, messages };
}

test('sms over aws-sms: SendTextMessage, then TEXT_DELIVERED through the SNS receipt function', async () => {
  const api = await client();
  const to = indianMobile();
  const { messages } = await deliveredOver(api, to, 'sms');
  expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([['sms', 'aws-sms', 'delivered']]);
  expect(messages[0]!.body).toMatch(/Your code is \d{6}\./);
  expect(harness.logs.some((line) => /"source":"sns".*"provider":"aws-sms".*"applied"/.test(line))).toBe(
    true,
  );
});

test('rcs over aws-sms: sent from the RCS agent, RCS_DELIVERED settles it', async () => {
  const api = await client(['rcs']);
  const to = indianMobile();
  const { messages } = await deliveredOver(api, to, 'rcs');
  expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([['rcs', 'aws-sms', 'delivered']]);
});

test('whatsapp over aws-whatsapp: the authentication template, a delivered status through SNS', async () => {
  const api = await client(['whatsapp']);
  const to = indianMobile();
  const { messages } = await deliveredOver(api, to, 'whatsapp');
  expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([
    ['whatsapp', 'aws-whatsapp', 'delivered'],
  ]);
  expect(messages[0]!.body).toMatch(/^\d{6} is your verification code/);
  expect(harness.logs.some((line) => /"source":"sns".*"provider":"aws-whatsapp".*"applied"/.test(line))).toBe(
    true,
  );
});

test('viber over vonage: the application JWT is verified, a signed status webhook settles it', async () => {
  const api = await client(['viber']);
  const to = ukMobile();
  const { messages } = await deliveredOver(api, to, 'viber');
  expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([['viber', 'vonage', 'delivered']]);
  expect(
    simulator()
      .requests.filter((r) => r.provider === 'vonage')
      .map((r) => r.status),
  ).toContain(202);
  expect(harness.logs.some((line) => /"provider":"vonage".*"result":"applied"/.test(line))).toBe(true);
});

test('a silent SMS falls back to WhatsApp after the wait, and WhatsApp’s receipt settles it', async () => {
  const api = await client();
  const to = indianMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sms: 'silent' } });
  const { messages } = await deliveredOver(api, to, 'whatsapp');
  expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([
    ['sms', 'aws-sms', 'accepted'],
    ['whatsapp', 'aws-whatsapp', 'delivered'],
  ]);
  // Not before the channel wait was over.
  expect(Date.parse(messages[1]!.time) - Date.parse(messages[0]!.time)).toBeGreaterThanOrEqual(
    CHANNEL_WAIT_SECONDS * 1000,
  );
});

test('an SMS the number refused (opted out) moves on to WhatsApp at once', async () => {
  const api = await client();
  const to = indianMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sms: 'reject' } });
  const { messages } = await deliveredOver(api, to, 'whatsapp');
  expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([
    ['sms', 'aws-sms', 'rejected'],
    ['whatsapp', 'aws-whatsapp', 'delivered'],
  ]);
  // Within the channel wait: it moved on at the rejection, not at the wait's end (a loaded machine took 1.2 s).
  expect(Date.parse(messages[1]!.time) - Date.parse(messages[0]!.time)).toBeLessThan(
    CHANNEL_WAIT_SECONDS * 1000,
  );
  expect(
    simulator()
      .requests.filter((r) => r.provider === 'aws-sms')
      .map((r) => r.status),
  ).toContain(400);
});

test.each([
  ['sms', /^Your code is \d{6}\.$/],
  ['whatsapp', /^\d{6} is your verification code/],
  ['rcs', /^Your code is \d{6}\.$/],
] as const)(
  '%s over vonage (France): the Messages API request of that channel, a signed status webhook settles it',
  async (channel, body) => {
    const api = await client([channel]);
    const to = frenchMobile();
    const before = simulator().requests.filter((r) => r.provider === 'vonage').length;
    const { messages } = await deliveredOver(api, to, channel);
    expect(messages.map((m) => [m.channel, m.provider, m.outcome])).toEqual([
      [channel, 'vonage', 'delivered'],
    ]);
    expect(messages[0]!.body).toMatch(body);
    // The simulator accepted exactly one Messages API request (202) for it.
    expect(
      simulator()
        .requests.filter((r) => r.provider === 'vonage')
        .slice(before)
        .map((r) => r.status),
    ).toEqual([202]);
  },
);

test("the Vonage simulator refuses a body that is not the channel's documented message (422)", async () => {
  const { applicationId, privateKey } = simulator().vonage;
  const post = (message: object) =>
    fetch(`${simulator().url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${applicationJwt(applicationId, privateKey, new Date())}`,
      },
      body: JSON.stringify({ to: '33612000000', from: 'OTPLocal', client_ref: 'ref', ...message }),
    });
  // WhatsApp's authentication template has a button: a `custom` message, never `text` or `template`.
  expect(
    (await post({ channel: 'whatsapp', message_type: 'text', text: 'Your code is 123456.' })).status,
  ).toBe(422);
  expect(
    (await post({ channel: 'whatsapp', message_type: 'template', template: { name: 'otp_authentication' } }))
      .status,
  ).toBe(422);
  // A `custom` message whose template is not the approved one.
  expect(
    (
      await post({
        channel: 'whatsapp',
        message_type: 'custom',
        custom: {
          type: 'template',
          template: { name: 'marketing', language: { code: 'en_US' }, components: [] },
        },
      })
    ).status,
  ).toBe(422);
  // An SMS or RCS without its text; an SMS TTL below Vonage's 300 s.
  expect((await post({ channel: 'sms', message_type: 'text' })).status).toBe(422);
  expect((await post({ channel: 'rcs', message_type: 'text' })).status).toBe(422);
  expect((await post({ channel: 'sms', message_type: 'text', text: 'hi', ttl: 10 })).status).toBe(422);
});

test('the Vonage simulator takes only the application JWT of the configured key', async () => {
  const body = JSON.stringify({
    to: '447400150000',
    from: 'OTPLocal',
    channel: 'viber_service',
    message_type: 'text',
    text: 'hello',
  });
  const post = (authorization?: string) =>
    fetch(`${simulator().url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization && { authorization }) },
      body,
    });
  const { privateKey: otherKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = otherKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const { applicationId, privateKey } = simulator().vonage;
  expect((await post()).status).toBe(401);
  expect((await post(`Bearer ${applicationJwt(applicationId, other, new Date())}`)).status).toBe(401);
  expect((await post(`Bearer ${applicationJwt('another-app', privateKey, new Date())}`)).status).toBe(401);
  const expired = new Date(Date.now() - 3_600_000);
  expect((await post(`Bearer ${applicationJwt(applicationId, privateKey, expired)}`)).status).toBe(401);
});

test('forged Vonage callbacks (bad signature, tampered body, replayed jti) get 401 and change nothing', async () => {
  const api = await client(['viber']);
  const to = ukMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { viber: 'silent' } });
  const sent = await api.send({ To: to });
  const sid = sent.body.sid as string;
  const attempt = await eventually(async () => {
    const verification = await harness.stack.deps.store.getVerification(sid);
    const delivery = verification?.deliveries['0'];
    return delivery?.outcome === 'accepted' ? delivery : undefined;
  });
  const callback = (body: string, authorization: string) =>
    fetch(`${harness.stack.url}/v2/Callbacks/vonage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${authorization}` },
      body,
    });
  const status = (value: string) =>
    JSON.stringify({
      message_uuid: attempt.messageId,
      to: to.slice(1),
      from: 'OTPLocal',
      timestamp: new Date().toISOString(),
      status: value,
      channel: 'viber_service',
      client_ref: `${sid}.0`,
    });
  const sign = (body: string, overrides?: { secret?: string; jti?: string }) =>
    simulator().signedVonageCallback(body, now, overrides);
  const now = harness.clock.now();
  const tokensBefore = (await harness.scanTable()).filter((item) =>
    String(item.pk).startsWith('RECEIPTTOKEN#'),
  ).length;

  // Signed with another secret.
  const delivered = status('delivered');
  expect(
    (await callback(delivered, sign(delivered, { secret: 'not-the-signature-secret-0123' }))).status,
  ).toBe(401);
  // A genuine token over another body: the payload hash does not match.
  const submitted = status('submitted');
  expect((await callback(delivered, sign(submitted))).status).toBe(401);
  // No token at all.
  expect((await callback(delivered, '')).status).toBe(401);
  // A genuine `submitted` status (no receipt) is taken once; the same token again is a replay.
  const token = sign(submitted, { jti: 'jti-replayed-once' });
  expect((await callback(submitted, token)).status).toBe(200);
  expect((await callback(submitted, token)).status).toBe(401);

  const fetched = await api.fetch(sid);
  expect(fetched.body.delivery_status).not.toBe('DELIVERED');
  const items = await harness.scanTable();
  const verification = items.find((item) => item.sid === sid)!;
  expect((verification.deliveries as Record<string, { outcome: string }>)['0']!.outcome).toBe('accepted');
  // Only the genuine token was spent.
  expect(items.filter((item) => String(item.pk).startsWith('RECEIPTTOKEN#'))).toHaveLength(tokensBefore + 1);
  const [message] = await api.messages(to);
  expect(message).toMatchObject({ channel: 'viber', provider: 'vonage', outcome: 'accepted' });
});

test('no plaintext code in any log line; no provider secret in the table, the logs or the workflow input', async () => {
  await harness.stack.workflow.idle();
  const codes = new Set<string>();
  for (const message of harness.stack.carrier.messagesTo(undefined)) {
    const code = /(\d{6})/.exec(message.body)?.[1];
    if (code) codes.add(code);
  }
  expect(codes.size).toBeGreaterThanOrEqual(7);
  const logs = harness.logs.join('\n');
  for (const code of codes) expect(logs).not.toContain(code);

  const { privateKey, signatureSecret } = simulator().vonage;
  const keyBody = privateKey.split('\n')[1]!;
  const table = JSON.stringify(await harness.scanTable());
  const workflowInput = JSON.stringify(harness.stack.workflow.taskLog);
  for (const text of [logs, table, workflowInput]) {
    expect(text).not.toContain(signatureSecret);
    expect(text).not.toContain(keyBody);
    expect(text).not.toContain('local-simulator-secret');
  }
});
