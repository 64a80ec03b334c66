/**
 * The receipt wait in steps, on the local stack: the ASL under aws-local-stepfunctions, its
 * status reads (Step Functions' DynamoDB GetItem on AWS) done by the same GetItem against DynamoDB Local.
 * With a 4 s channel wait the steps are 1, 1 and 2 s: reads at 1 and 2 s, the AfterWait task at 4 s.
 * - A receipt ends the execution at the next read, not at the end of the wait, and nothing more is sent.
 * - Without a receipt the next channel is tried after the whole wait, no earlier, as with one Wait state.
 */
import { keys } from '../../functions/adapters/dynamodb/keys';
import { receiptWaitSteps } from '../../functions/core/delivery-time';
import { startHarness, eventually, type ApiClient, type Harness } from '../support/harness';

const WAIT_SECONDS = 4;
/** Scheduling slack on a shared machine: a read or a task may start this much late. */
const SLACK_MS = 1500;
let harness: Harness;
let api: ApiClient;
let counter = 0;
/** UK mobiles reach all five channels: sna, viber, whatsapp, rcs, sms (cheapest first). */
const freshMobile = () => `+447400${String(1_500_000 + ++counter).slice(1)}`;

beforeAll(async () => {
  harness = await startHarness({ settings: { channelWaitSeconds: WAIT_SECONDS } });
  api = harness.client(await harness.createAccount());
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const messagesTo = (to: string) => harness.stack.carrier.messagesTo(to).reverse();
const workflow = () => harness.stack.workflow;
const readsOf = (sid: string) => workflow().readLog.filter((read) => read.pk === keys.verification(sid).pk);
const tasksOf = (sid: string) => workflow().taskLog.filter((entry) => entry.input.sid === sid);
const executionOf = (sid: string) => workflow().executions.find((execution) => execution.sid === sid)!;

/** Sends to a number whose first channel (sna) stays silent; the test posts sna's receipt itself. */
async function sendSilent(): Promise<{ sid: string; to: string; sentAt: number }> {
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: 'silent' } });
  const sid = (await api.send({ To: to })).body.sid as string;
  const sna = await eventually(async () => messagesTo(to)[0], 5000, 10);
  // The deliver task has recorded the carrier's answer: the receipt wait is starting.
  await eventually(async () => (tasksOf(sid).length > 0 ? true : undefined), 5000, 10);
  return { sid, to, sentAt: Date.parse(sna.time) };
}

/**
 * The execution ended at its last status read, before the channel's wait was over. Bounds from the wait's own
 * lengths, not from how fast the machine is: the wait starts after the message is sent (`sentAt`), so an execution
 * that waited all of it ends `WAIT_SECONDS` after that or later; and one that waited on after the read would end a
 * step (1 s at least) after it, where only the Choice after the read runs in between (a few ms under load): half a
 * step tells the two apart.
 */
function endedAtTheLastRead(sid: string, sentAt: number): void {
  const endedAt = executionOf(sid).endedAt!;
  expect(endedAt - sentAt).toBeLessThan(WAIT_SECONDS * 1000);
  expect(endedAt - readsOf(sid).at(-1)!.at).toBeLessThan(500);
}

/** Posts sna's receipt as the carrier would, signed; resolves when the service has applied it. */
async function deliverReceipt(to: string): Promise<number> {
  const sna = messagesTo(to)[0]!;
  const receipt = { reference: sna.reference, messageId: sna.messageId, status: 'delivered' };
  expect((await harness.postCarrierReceipt(receipt)).status).toBe(200);
  return Date.now();
}

it('the channel wait is cut at 1 and 2 s, adding up to the whole wait', () => {
  expect(receiptWaitSteps(WAIT_SECONDS)).toEqual([1, 1, 2]);
});

it('a receipt before the first read ends the execution at that read, and nothing more is sent', async () => {
  const { sid, to, sentAt } = await sendSilent();
  await sleep(300);
  const receivedAt = await deliverReceipt(to);
  await workflow().idle();

  endedAtTheLastRead(sid, sentAt);
  // The first read after the receipt ends it. Posted 300 ms into a 1 s step, the receipt is applied before the
  // first read unless the machine is loaded (a CI run took over 700 ms to apply it): a read that came first saw
  // PENDING, and the wait went on to the next.
  const reads = readsOf(sid);
  expect(reads.at(-1)?.deliveryStatus).toBe('DELIVERED');
  for (const read of reads.slice(0, -1)) {
    expect(read.deliveryStatus).toBe('PENDING');
    expect(read.at).toBeLessThanOrEqual(receivedAt);
  }
  // No AfterWait task, no second channel.
  expect(tasksOf(sid).map((entry) => entry.state)).toEqual(['DeliverOverChannel']);
  await sleep(WAIT_SECONDS * 1000 - (Date.now() - sentAt) + 300);
  expect(messagesTo(to).map((message) => message.channel)).toEqual(['sna']);
  expect((await api.fetch(sid)).body).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sna' });
});

it('a receipt between two reads ends the execution at the next one', async () => {
  const { sid, to, sentAt } = await sendSilent();
  // Past the first read (1 s), before the second (2 s): posted as soon as the first read is seen, the receipt has
  // the whole 1 s step to be applied in (a loaded CI machine once took over 700 ms to apply one).
  await eventually(async () => (readsOf(sid).length === 1 ? true : undefined), 3000, 10);
  const receivedAt = await deliverReceipt(to);
  await workflow().idle();

  // The receipt came between the two reads: only the first was made before it.
  expect(readsOf(sid).filter((read) => read.at <= receivedAt)).toHaveLength(1);
  endedAtTheLastRead(sid, sentAt);
  expect(readsOf(sid).map((read) => read.deliveryStatus)).toEqual(['PENDING', 'DELIVERED']);
  expect(tasksOf(sid).map((entry) => entry.state)).toEqual(['DeliverOverChannel']);
  await sleep(WAIT_SECONDS * 1000 - (Date.now() - sentAt) + 300);
  expect(messagesTo(to).map((message) => message.channel)).toEqual(['sna']);
});

it('no receipt: the next channel exactly after the whole wait, not earlier', async () => {
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: { deliver: 100 } } });
  const sid = (await api.send({ To: to })).body.sid as string;
  await eventually(
    async () => ((await api.fetch(sid)).body.delivery_status === 'DELIVERED' ? true : undefined),
    15_000,
    100,
  );
  await workflow().idle();

  const [sna, viber] = messagesTo(to);
  expect([sna?.channel, viber?.channel]).toEqual(['sna', 'viber']);
  const gap = Date.parse(viber!.time) - Date.parse(sna!.time);
  expect(gap).toBeGreaterThanOrEqual(WAIT_SECONDS * 1000);
  // Later than one Wait state only by the reads' own latency (and this machine's scheduling).
  expect(gap).toBeLessThan(WAIT_SECONDS * 1000 + SLACK_MS);
  // sna: read at 1 and 2 s, both PENDING, then AfterWait at 4 s moved on; viber's receipt ended it at 1 s.
  expect(readsOf(sid).map((read) => read.deliveryStatus)).toEqual(['PENDING', 'PENDING', 'DELIVERED']);
  expect(tasksOf(sid).map((entry) => [entry.state, entry.input.channelIndex, entry.output.next])).toEqual([
    ['DeliverOverChannel', 0, 'wait'],
    ['AfterWait', 0, 'deliver'],
    ['DeliverOverChannel', 1, 'wait'],
  ]);
  // The AfterWait task got the SID, channel index, wait and sna's answer not yet written, not the steps'
  // bookkeeping nor a read.
  expect(Object.keys(tasksOf(sid)[1]!.input).sort()).toEqual([
    'answers',
    'channelIndex',
    'sid',
    'waitSeconds',
  ]);
  expect(tasksOf(sid)[1]!.input.answers).toEqual([{ channelIndex: 0, messageId: sna!.messageId }]);
  // viber's receipt ended its wait at a read, not at the end of its own wait.
  endedAtTheLastRead(sid, Date.parse(viber!.time));
});
