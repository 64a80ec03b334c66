/**
 * Failure receipts through the state machine (statemachine/delivery.asl.json under aws-local-stepfunctions) and
 * the real callback route, with the default 8 s channel wait (status reads at 1, 2 and 4 s into it):
 * - a channel whose provider reports the message undelivered did not carry it: when every channel tried failed
 *   so, delivery ends FAILED (the spec's "every channel failed"), not SENT;
 * - a failure receipt for a channel the workflow has moved past, first or repeated, does not hide the failure of
 *   the channel being waited on, which still moves on at the next status read.
 */
import type { CarriedMessage } from '../../local/carrier';
import { eventually, startHarness, type ApiClient, type Harness } from '../support/harness';

const WAIT_SECONDS = 8;
/** The last status read comes 4 s into the wait: a failure reported before it moves on by then, with slack. */
const EARLY_SWITCH_MS = 4000 + 1500;
let harness: Harness;
/** WhatsApp first, then SMS, for UK mobiles (functions/core/routing.ts). */
let twoChannels: ApiClient;
let counter = 0;
const freshMobile = () => `+447400${String(1_800_000 + ++counter).slice(1)}`;

beforeAll(async () => {
  harness = await startHarness({ settings: { channelWaitSeconds: WAIT_SECONDS } });
  twoChannels = harness.client(await harness.createAccount({ channels: ['sms', 'whatsapp'] }));
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

const messagesTo = (to: string) => harness.stack.carrier.messagesTo(to).reverse();
const executionOf = (sid: string) =>
  harness.stack.workflow.executions.find((execution) => execution.sid === sid)!;

async function postReceipt(message: CarriedMessage, status: 'delivered' | 'failed') {
  const { reference, messageId } = message;
  expect((await harness.postCarrierReceipt({ reference, messageId, status })).status).toBe(200);
}

it('every channel reports its message undelivered: FAILED, each channel sent once', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({
    prefix: to,
    channels: { whatsapp: { undeliverable: 100 }, sms: { undeliverable: 100 } },
  });
  const sid = (await twoChannels.send({ To: to })).body.sid as string;
  await eventually(async () => (executionOf(sid)?.endedAt ? true : undefined), 20_000, 50);
  expect((await twoChannels.fetch(sid)).body.delivery_status).toBe('FAILED');
  expect(messagesTo(to).map((message) => [message.channel, message.outcome])).toEqual([
    ['whatsapp', 'undelivered'],
    ['sms', 'undelivered'],
  ]);
  // Each failure moved delivery on at a status read, not after the whole wait.
  expect(executionOf(sid).endedAt! - executionOf(sid).startedAt).toBeLessThan(2 * EARLY_SWITCH_MS);
});

it('a channel may still deliver: one failed, the last silent, SENT', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({
    prefix: to,
    channels: { whatsapp: 'silent', sms: { undeliverable: 100 } },
  });
  const sid = (await twoChannels.send({ To: to })).body.sid as string;
  await eventually(async () => (executionOf(sid)?.endedAt ? true : undefined), 25_000, 50);
  expect((await twoChannels.fetch(sid)).body.delivery_status).toBe('SENT');
}, 30_000);

it.each([
  ['repeated', { undeliverable: 100 } as const],
  ['first, late', 'silent' as const],
])(
  "a %s failure receipt for the channel before does not hide the current channel's failure",
  async (_, whatsapp) => {
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { whatsapp, sms: 'silent' } });
    const sid = (await twoChannels.send({ To: to })).body.sid as string;
    const sms = await eventually(async () => messagesTo(to)[1], 15_000, 10);
    const whatsappMessage = messagesTo(to)[0]!;
    // SMS fails at once; then WhatsApp's failure comes (again, as a provider retrying its callback does, or for
    // the first time, after the switch), before the first status read of SMS's wait.
    await postReceipt(sms, 'failed');
    await postReceipt(whatsappMessage, 'failed');
    await eventually(async () => (executionOf(sid)?.endedAt ? true : undefined), 15_000, 50);
    expect(executionOf(sid).endedAt! - Date.parse(sms.time)).toBeLessThan(EARLY_SWITCH_MS);
    expect((await twoChannels.fetch(sid)).body.delivery_status).toBe('FAILED');
  },
  30_000,
);
