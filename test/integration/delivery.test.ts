/**
 * Delivery (`delivery_status`, docs/delivery.md): the ASL file under aws-local-stepfunctions, the
 * same task functions as on AWS, the simulated carrier posting signed receipts to the real callback route.
 */
import { validateDefinition } from '../support/asl';
import { deriveKey } from '../../functions/adapters/crypto';
import { signPayload, SIGNATURE_HEADER } from '../../functions/adapters/providers/signature';
import { deliverOverChannel } from '../../functions/core/delivery';
import type { ApiContext, ApiEvent } from '../../functions/http/middleware';
import type { HttpResponse } from '../../functions/http/response';
import {
  dynamoEndpoint,
  startHarness,
  eventually,
  type Account,
  type ApiClient,
  type Harness,
} from '../support/harness';

const WAIT_SECONDS = 1;
let harness: Harness;
let account: Account;
let api: ApiClient;
let counter = 0;
/** UK mobiles reach all five channels: sna, viber, whatsapp, rcs, sms (cheapest first). */
const freshMobile = () => `+447400${String(1_100_000 + ++counter).slice(1)}`;

beforeAll(async () => {
  harness = await startHarness({ settings: { channelWaitSeconds: WAIT_SECONDS } });
  account = await harness.createAccount();
  api = harness.client(account);
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

/** Polls fetch as docs/api.md says a caller would, until delivery ends (DELIVERED or FAILED) or `status` holds. */
async function pollUntil(
  sid: string,
  done: (body: Record<string, unknown>) => boolean,
  timeoutMs = 15_000,
  client = api,
) {
  return eventually(
    async () => {
      const response = await client.fetch(sid);
      return done(response.body) ? response.body : undefined;
    },
    timeoutMs,
    100,
  );
}

const ended = (body: Record<string, unknown>) =>
  ['DELIVERED', 'FAILED', 'SENT'].includes(body.delivery_status as string);
const itemOf = async (sid: string) => (await harness.scanTable()).find((item) => item.sid === sid)!;
const messagesTo = (to: string) => harness.stack.carrier.messagesTo(to).reverse();

it('the state machine file is valid ASL', () => {
  expect(validateDefinition()).toEqual({ isValid: true, errors: [] });
});

it('first channel delivers: DELIVERED over the cheapest channel, one message', async () => {
  const to = freshMobile();
  const sent = await api.send({ To: to });
  expect(sent.body).toMatchObject({ channel: 'sna', delivery_status: 'PENDING' });
  const final = await pollUntil(sent.body.sid as string, (body) => body.delivery_status === 'DELIVERED');
  expect(final.channel).toBe('sna');
  expect(messagesTo(to).map((message) => message.channel)).toEqual(['sna']);
  await harness.stack.workflow.idle();
  expect((await itemOf(sent.body.sid as string)).sealed_code).toBeUndefined();
});

it('silent then deliver: switches after the wait, and `channel` becomes the delivering one', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: { deliver: 100 } } });
  const sent = await api.send({ To: to });
  const sid = sent.body.sid as string;
  const during = await api.fetch(sid);
  expect(during.body).toMatchObject({ delivery_status: 'PENDING', channel: 'sna' });
  const final = await pollUntil(sid, (body) => body.delivery_status === 'DELIVERED');
  expect(final.channel).toBe('viber');
  const [sna, viber] = messagesTo(to);
  expect([sna?.channel, viber?.channel]).toEqual(['sna', 'viber']);
  expect(Date.parse(viber!.time) - Date.parse(sna!.time)).toBeGreaterThanOrEqual(WAIT_SECONDS * 1000);
});

it('reject, reject, deliver: no wait between rejections', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({
    prefix: to,
    channels: { sna: 'reject', viber: 'reject', whatsapp: { deliver: 50 } },
  });
  const sent = await api.send({ To: to });
  const final = await pollUntil(sent.body.sid as string, (body) => body.delivery_status === 'DELIVERED');
  expect(final.channel).toBe('whatsapp');
  const messages = messagesTo(to);
  expect(messages.map((message) => [message.channel, message.outcome])).toEqual([
    ['sna', 'rejected'],
    ['viber', 'rejected'],
    ['whatsapp', 'delivered'],
  ]);
  expect(Date.parse(messages[2]!.time) - Date.parse(messages[0]!.time)).toBeLessThan(WAIT_SECONDS * 1000);
});

it('all silent: SENT after the last wait, then a late receipt makes it DELIVERED over its channel', async () => {
  const twoChannels = harness.client(await harness.createAccount({ channels: ['sms', 'whatsapp'] }));
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { whatsapp: 'silent', sms: 'silent' } });
  const sent = await twoChannels.send({ To: to });
  const sid = sent.body.sid as string;
  const final = await eventually(
    async () => {
      const body = (await twoChannels.fetch(sid)).body;
      return body.delivery_status === 'SENT' ? body : undefined;
    },
    15_000,
    100,
  );
  expect(final.channel).toBe('whatsapp');
  expect(messagesTo(to).map((message) => message.channel)).toEqual(['whatsapp', 'sms']);
  await harness.stack.workflow.idle();
  expect((await itemOf(sid)).sealed_code).toBeUndefined();

  // The first channel's receipt arrives late: DELIVERED, over whatsapp, even though sms was tried last.
  const whatsapp = messagesTo(to)[0]!;
  const receipt = await postReceipt({
    reference: whatsapp.reference,
    messageId: whatsapp.messageId!,
    status: 'delivered',
  });
  expect(receipt.status).toBe(200);
  expect((await twoChannels.fetch(sid)).body).toMatchObject({
    delivery_status: 'DELIVERED',
    channel: 'whatsapp',
  });
  // A duplicate of it changes nothing.
  expect(
    (
      await postReceipt({
        reference: whatsapp.reference,
        messageId: whatsapp.messageId!,
        status: 'delivered',
      })
    ).status,
  ).toBe(200);
  expect((await twoChannels.fetch(sid)).body.delivery_status).toBe('DELIVERED');
});

it('all reject: FAILED, and the number is refused with `unreachable` for every service', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({
    prefix: to,
    channels: { sna: 'reject', viber: 'reject', whatsapp: 'reject', rcs: 'reject', sms: 'reject' },
  });
  const sent = await api.send({ To: to });
  const final = await pollUntil(sent.body.sid as string, ended);
  expect(final.delivery_status).toBe('FAILED');
  await harness.stack.workflow.idle();
  for (const client of [api, harness.client(await harness.createAccount())]) {
    const again = await client.send({ To: to });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('unreachable');
  }
  // 30 days later (OTP_UNREACHABLE_DAYS), the number is tried again.
  harness.clock.advance(30 * 86_400_000 + 1000);
  harness.stack.carrier.clearRules();
  expect((await api.send({ To: to })).status).toBe(201);
  harness.clock.set(new Date());
});

it("one service's channels cannot make a number unreachable for another service", async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'reject' } });
  const snaOnly = harness.client(await harness.createAccount({ channels: ['sna'] }));
  const sent = await snaOnly.send({ To: to });
  expect((await pollUntil(sent.body.sid as string, ended, 15_000, snaOnly)).delivery_status).toBe('FAILED');
  await harness.stack.workflow.idle();
  // For the SNA-only service every channel it has rejected the number: refused.
  expect((await snaOnly.send({ To: to })).body.code).toBe('unreachable');
  // A service with all five channels is not refused: its plan leaves SNA out and the next channel delivers.
  const allChannels = harness.client(await harness.createAccount());
  const other = await allChannels.send({ To: to });
  expect(other.status).toBe(201);
  expect(other.body.channel).not.toBe('sna');
  const final = await pollUntil(other.body.sid as string, ended, 15_000, allChannels);
  expect(final.delivery_status).toBe('DELIVERED');
  expect(harness.stack.carrier.messagesTo(to).filter((m) => m.outcome !== 'rejected').length).toBe(1);
});

describe('receipts', () => {
  /** A send to a fresh number whose channels behave as `channels` say, and the first message the carrier got. */
  const sendUntilFirstMessage = async (
    channels: Parameters<typeof harness.stack.carrier.setRule>[0]['channels'],
  ) => {
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels });
    const sid = (await api.send({ To: to })).body.sid as string;
    return { to, sid, first: await eventually(async () => messagesTo(to)[0]) };
  };
  const ALL_SILENT = {
    sna: 'silent',
    viber: 'silent',
    whatsapp: 'silent',
    rcs: 'silent',
    sms: 'silent',
  } as const;

  it("at the receipt function's own URL (otp:receiptFunctionUrl): the deployed entry applies a signed one, refuses a forged one", async () => {
    const { sid, first: sna } = await sendUntilFirstMessage(ALL_SILENT);
    const body = JSON.stringify({ reference: sna.reference, messageId: sna.messageId!, status: 'delivered' });
    // The Lambda entry as deployed, built from its environment as on AWS (the harness's table and key).
    const environment = {
      TABLE_NAME: harness.tableName,
      DYNAMODB_ENDPOINT: dynamoEndpoint(),
      OTP_MASTER_KEY: harness.masterKey,
    };
    const before = Object.fromEntries(Object.keys(environment).map((name) => [name, process.env[name]]));
    Object.assign(process.env, environment);
    let entry!: (event: ApiEvent, context: ApiContext) => Promise<HttpResponse>;
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the entry reads its environment when loaded
      ({ handler: entry } = require('../../functions/entries/receipt') as { handler: typeof entry });
    });
    const restoreEnvironment = () => {
      for (const [name, value] of Object.entries(before)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    };
    // What a Lambda function URL passes: every path and method as route key `$default`, no path parameters.
    const atUrl = (signature: string) =>
      entry(
        {
          version: '2.0',
          routeKey: '$default',
          rawPath: '/v2/Callbacks/carrier',
          rawQueryString: '',
          headers: { 'content-type': 'application/json', [SIGNATURE_HEADER.toLowerCase()]: signature },
          requestContext: { http: { method: 'POST', path: '/v2/Callbacks/carrier' }, requestId: 'url-1' },
          body,
          isBase64Encoded: false,
        } as unknown as ApiEvent,
        { awsRequestId: 'url-1', functionName: 'Receipt' } as unknown as ApiContext,
      );
    let forged: HttpResponse;
    let genuine: HttpResponse;
    try {
      forged = await atUrl(signPayload(Buffer.alloc(32, 7), body, new Date()));
      expect(forged.statusCode).toBe(401);
      expect((await api.fetch(sid)).body.delivery_status).toBe('PENDING');
      genuine = await atUrl(signPayload(deriveKey(harness.masterKey, 'receipt:carrier'), body, new Date()));
    } finally {
      // The entry read its environment on its first call (its cold start); no other test may see it.
      restoreEnvironment();
    }
    expect(genuine.statusCode).toBe(200);
    expect((await api.fetch(sid)).body).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sna' });
  });

  it('a forged, replayed or foreign receipt changes nothing', async () => {
    const { sid, first: sna } = await sendUntilFirstMessage(ALL_SILENT);
    const genuine = { reference: sna.reference, messageId: sna.messageId!, status: 'delivered' as const };
    const secret = deriveKey(harness.masterKey, 'receipt:carrier');

    const forged = await postRaw(
      JSON.stringify(genuine),
      signPayload(Buffer.alloc(32, 7), JSON.stringify(genuine), new Date()),
    );
    const unsigned = await postRaw(JSON.stringify(genuine), undefined);
    const stale = await postRaw(
      JSON.stringify(genuine),
      // Stale for the service's clock, which a test may have left behind the real time.
      signPayload(secret, JSON.stringify(genuine), new Date(harness.clock.now().getTime() - 301_000)),
    );
    const tampered = await postRaw(
      JSON.stringify({ ...genuine, messageId: 'SMother' }),
      signPayload(secret, JSON.stringify(genuine), new Date()),
    );
    expect([forged.status, unsigned.status, stale.status, tampered.status]).toEqual([401, 401, 401, 401]);
    // Signed correctly but naming a message this verification never sent: acknowledged, ignored.
    // Once the carrier's answer is recorded (before it, any receipt signed for the reference is believed).
    await eventually(async () => {
      const deliveries = (await itemOf(sid)).deliveries as Record<string, { outcome: string }>;
      return deliveries['0']?.outcome === 'accepted' ? true : undefined;
    });
    const foreign = await postReceipt({ ...genuine, messageId: 'SM0000' });
    expect(foreign.status).toBe(200);
    expect((await api.fetch(sid)).body.delivery_status).toBe('PENDING');

    expect((await postReceipt(genuine)).status).toBe(200);
    expect((await api.fetch(sid)).body).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sna' });
  });

  it('a signed receipt for a channel never tried changes nothing', async () => {
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: 'silent' } });
    const sid = (await api.send({ To: to })).body.sid as string;
    const sna = await eventually(async () => messagesTo(to)[0]);
    // Channel 1 (viber) is not tried before the 1 s wait ends: a receipt for it names no attempt.
    const early = await postReceipt({
      reference: `${sid}.1`,
      messageId: sna.messageId!,
      status: 'delivered',
    });
    expect(early.status).toBe(200);
    const item = await itemOf(sid);
    expect(item.delivery_status).toBe('PENDING');
    expect(Object.keys(item.deliveries as object)).toEqual(['0']);
  });

  it('a receipt never turns FAILED into DELIVERED', async () => {
    const { sid, first: sna } = await sendUntilFirstMessage({
      sna: 'silent',
      viber: 'reject',
      whatsapp: 'reject',
      rcs: 'reject',
      sms: 'reject',
    });
    // Delivery ended FAILED (as the settling path may decide) while SNA's receipt was still on its way.
    await harness.stack.deps.store.finishDelivery(sid, 'FAILED', harness.clock.now());
    const late = await postReceipt({
      reference: sna.reference,
      messageId: sna.messageId!,
      status: 'delivered',
    });
    expect(late.status).toBe(200);
    expect((await api.fetch(sid)).body.delivery_status).toBe('FAILED');
    await harness.stack.workflow.idle();
  });
});

it('a task run twice sends once and writes once', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: 'silent' } });
  const sent = await api.send({ To: to });
  const sid = sent.body.sid as string;
  await eventually(async () => messagesTo(to)[0]);
  // While the workflow waits on sna, run the sna task again, and the viber task twice at once, as
  // at-least-once execution may.
  const input = (channelIndex: number) => ({ sid, channelIndex, waitSeconds: WAIT_SECONDS });
  const deps = harness.stack.deps;
  const [again, viber1, viber2] = await Promise.all([
    deliverOverChannel(deps, input(0)),
    deliverOverChannel(deps, input(1)),
    deliverOverChannel(deps, input(1)),
  ]);
  expect([again.next, viber1.next, viber2.next]).toEqual(['wait', 'wait', 'wait']);
  const item = await itemOf(sid);
  const deliveries = item.deliveries as Record<string, { messageId: string }>;
  expect(Object.keys(deliveries).sort()).toEqual(['0', '1']);
  // Only the run that claimed viber sent, and only it carries viber's answer on (for the workflow's next write).
  const answers = [again, viber1, viber2].flatMap((output) => output.answers ?? []);
  expect(answers).toEqual([{ channelIndex: 1, messageId: expect.any(String) }]);
  // When the workflow reaches viber itself, it finds it done and sends nothing more.
  await pollUntil(sid, (body) => body.delivery_status === 'PENDING' && messagesTo(to).length >= 2, 5000);
  await new Promise((resolve) => setTimeout(resolve, (WAIT_SECONDS + 0.5) * 1000));
  const carried = messagesTo(to);
  expect(carried.filter((message) => message.channel === 'sna')).toHaveLength(1);
  expect(carried.filter((message) => message.channel === 'viber')).toHaveLength(1);
  expect(carried.find((message) => message.channel === 'viber')!.messageId).toBe(answers[0]!.messageId);
  // The service itself called the carrier once per channel: the claim, not the carrier's deduplication.
  const requests = harness.stack.carrier.requestsByReference;
  expect([requests.get(`${sid}.0`), requests.get(`${sid}.1`)]).toEqual([1, 1]);
});

it('a second execution for the same verification (Express does not deduplicate names) sends nothing more', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: { deliver: 50 } } });
  const sid = (await api.send({ To: to })).body.sid as string;
  await harness.stack.workflow.start({ sid, waitSeconds: WAIT_SECONDS, restart: true });
  await pollUntil(sid, (body) => body.delivery_status === 'DELIVERED');
  await harness.stack.workflow.idle();
  expect(messagesTo(to).map((message) => message.channel)).toEqual(['sna', 'viber']);
  const requests = harness.stack.carrier.requestsByReference;
  expect([requests.get(`${sid}.0`), requests.get(`${sid}.1`)]).toEqual([1, 1]);
});

it('keeps the code out of the workflow input and history', async () => {
  const to = freshMobile();
  await api.send({ To: to });
  await pollUntil((await api.send({ To: freshMobile() })).body.sid as string, ended);
  await harness.stack.workflow.idle();
  const code = await api.latestCode(to);
  for (const entry of harness.stack.workflow.taskLog) {
    // A task's input is the previous task's output: a SID, a channel index, the wait, the routing word and the
    // providers' answers not yet written (a channel index and a message id each).
    for (const key of Object.keys(entry.input))
      expect(['sid', 'channelIndex', 'waitSeconds', 'next', 'answers']).toContain(key);
    for (const answer of (entry.input.answers as object[] | undefined) ?? [])
      expect(Object.keys(answer).sort()).toEqual(['channelIndex', 'messageId']);
    expect(JSON.stringify(entry)).not.toContain(code);
  }
});

async function postReceipt(receipt: {
  reference: string;
  messageId: string;
  status: 'delivered' | 'failed';
}) {
  return harness.postCarrierReceipt(receipt);
}

async function postRaw(body: string, signature: string | undefined) {
  return fetch(`${harness.stack.url}/v2/Callbacks/carrier`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(signature && { [SIGNATURE_HEADER]: signature }) },
    body,
  });
}
