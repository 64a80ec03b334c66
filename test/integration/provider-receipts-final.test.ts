/**
 * AWS SMS settles only on final events: the carrier's `TEXT_SUCCESSFUL` with `isFinal: false` is no receipt,
 * so a later `TEXT_UNREACHABLE` still fails the channel and the next one carries the code; and a non-final
 * event that arrives after the final one (SNS does not keep order) changes nothing. And WhatsApp over AWS,
 * with its statuses sent, delivered and read, each twice, settles once on whatsapp.
 */
import { eventually, startHarness, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
let counter = 0;
/** Indian mobiles: sms (aws-sms) first, rcs (aws-sms, from the RCS agent) next. */
const indianMobile = () => `+9198767${String(100_000 + ++counter).slice(1)}`;

async function statusOf(api: ApiClient, sid: string) {
  return (await api.fetch(sid)).body as { delivery_status: string; channel: string };
}

describe.each([
  ['in order', { duplicate: 0, reorder: 0 }],
  ['duplicated, the non-final event last', { duplicate: 1, reorder: 1 }],
])('receipts %s', (_name, receiptNoise) => {
  beforeAll(async () => {
    harness = await startHarness({
      providerSimulator: { receiptNoise },
      settings: { channelWaitSeconds: 2 },
    });
    // The first start after a change to lib/ synthesizes the stack for the simulator's grants.
  }, 180_000);
  afterAll(() => harness.close());

  test('TEXT_SUCCESSFUL (not final) then TEXT_UNREACHABLE: not delivered over sms; rcs carries the code', async () => {
    const api = await harness.client(await harness.createAccount({ channels: ['sms', 'rcs'] }));
    const to = indianMobile();
    harness.stack.carrier.setRule({
      prefix: to,
      channels: { sms: { undeliverable: 300 }, rcs: { deliver: 200 } },
    });
    const sent = await api.send({ To: to });
    expect(sent.status).toBe(201);
    const sid = sent.body.sid as string;
    await eventually(
      async () => ((await statusOf(api, sid)).delivery_status === 'DELIVERED' ? true : undefined),
      15_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await statusOf(api, sid)).toMatchObject({ delivery_status: 'DELIVERED', channel: 'rcs' });
    const messages = (await api.messages(to)).reverse();
    expect(messages.map((m) => [m.channel, m.outcome])).toEqual([
      ['sms', 'undelivered'],
      ['rcs', 'delivered'],
    ]);
  });

  test('WhatsApp over AWS: sent, delivered, read: DELIVERED on whatsapp, and it stays', async () => {
    const api = await harness.client(await harness.createAccount({ channels: ['whatsapp', 'rcs'] }));
    const to = indianMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { whatsapp: { deliver: 200 } } });
    const sent = await api.send({ To: to });
    const sid = sent.body.sid as string;
    await eventually(
      async () => ((await statusOf(api, sid)).delivery_status === 'DELIVERED' ? true : undefined),
      15_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await statusOf(api, sid)).toMatchObject({ delivery_status: 'DELIVERED', channel: 'whatsapp' });
  });
});
