/**
 * Receipts as the providers send them (local/provider-simulator.ts, ReceiptNoise): every event twice and the
 * non-final ones after the final ones, through the real adapters and receipt functions. A verification settles
 * once, on a final event, and never moves back.
 *
 * The cases where AWS SMS reports a failure after its non-final `TEXT_SUCCESSFUL` are in
 * provider-receipts-final.test.ts.
 */
import { eventually, startHarness, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
let counter = 0;
/** Indian mobiles: sms (aws-sms) first. */
const indianMobile = () => `+9198766${String(100_000 + ++counter).slice(1)}`;
/** French mobiles: sms, whatsapp and rcs on vonage; rcs comes before sms in France's plan. */
const frenchMobile = () => `+33613${String(1_000_000 + ++counter).slice(1)}`;

beforeAll(async () => {
  harness = await startHarness({
    providerSimulator: { receiptNoise: { duplicate: 1, reorder: 1 } },
    settings: { channelWaitSeconds: 2 },
  });
  // The first start after a change to lib/ synthesizes the stack for the simulator's grants.
}, 180_000);
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

async function client(channels: ('sms' | 'whatsapp' | 'viber' | 'rcs' | 'sna')[]): Promise<ApiClient> {
  return harness.client(await harness.createAccount({ channels }));
}

async function statusOf(api: ApiClient, sid: string) {
  return (await api.fetch(sid)).body as { delivery_status: string; channel: string };
}

/** Waits until every receipt of the number's messages has come (duplicates and late non-final ones too). */
const quiet = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('AWS SMS: each event twice, TEXT_SUCCESSFUL last: DELIVERED once, on sms, and it stays', async () => {
  const api = await client(['sms', 'rcs']);
  const to = indianMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sms: { deliver: 200 } } });
  const sent = await api.send({ To: to });
  expect(sent.status).toBe(201);
  const sid = sent.body.sid as string;
  await eventually(async () =>
    (await statusOf(api, sid)).delivery_status === 'DELIVERED' ? true : undefined,
  );
  await quiet(600);
  expect(await statusOf(api, sid)).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sms' });
  const messages = await api.messages(to);
  expect(messages.map((m) => [m.channel, m.outcome])).toEqual([['sms', 'delivered']]);
});

test('Vonage: submitted after delivered, each twice: DELIVERED once, and it stays', async () => {
  const api = await client(['sms']);
  const to = frenchMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sms: { deliver: 200 } } });
  const sent = await api.send({ To: to });
  const sid = sent.body.sid as string;
  await eventually(async () =>
    (await statusOf(api, sid)).delivery_status === 'DELIVERED' ? true : undefined,
  );
  await quiet(600);
  expect(await statusOf(api, sid)).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sms' });
});

test('Vonage: undeliverable after submitted moves rcs on to sms, which delivers', async () => {
  const api = await client(['sms', 'rcs']);
  const to = frenchMobile();
  harness.stack.carrier.setRule({
    prefix: to,
    channels: { rcs: { undeliverable: 200 }, sms: { deliver: 200 } },
  });
  const sent = await api.send({ To: to });
  const sid = sent.body.sid as string;
  await eventually(
    async () => ((await statusOf(api, sid)).delivery_status === 'DELIVERED' ? true : undefined),
    15_000,
  );
  await quiet(600);
  expect(await statusOf(api, sid)).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sms' });
  const messages = (await api.messages(to)).reverse();
  expect(messages.map((m) => [m.channel, m.outcome])).toEqual([
    ['rcs', 'undelivered'],
    ['sms', 'delivered'],
  ]);
});
