/**
 * No delivery left PENDING forever, on the local stack: the ASL under aws-local-stepfunctions
 * with the same task functions as on AWS, DynamoDB Local with injected faults, the sweeper run by hand.
 * - A task that still fails after its retries is caught: the settling step ends the delivery from the record,
 *   SENT when a channel accepted, FAILED otherwise; the `verification.delivery.*` webhook fires.
 * - A delivery claimed but never ended (its execution died) is settled by the sweeper after its deadline,
 *   found by walking the ledger from its cursor, never by a scan.
 * The money audit holds over the whole table at the end.
 */
import { deliverOverChannel } from '../../functions/core/delivery';
import { UNSETTLED_DEADLINE_SECONDS } from '../../functions/core/delivery-time';
import { SETTLE_AGE_SECONDS, STALL_SECONDS } from '../../functions/core/sweeper';
import type { WebhookPost } from '../../local/webhooks';
import { adminJson } from '../support/admin-cli';
import { Books } from '../support/books';
import { DynamoFaults, FlakyWorkflow, type DynamoCall } from '../support/faults';
import { eventually, startHarness, type Account, type Harness } from '../support/harness';

const WAIT_SECONDS = 1;
let harness: Harness;
let books: Books;
let flaky: FlakyWorkflow;
const faults = new DynamoFaults();

beforeAll(async () => {
  harness = await startHarness({
    settings: { channelWaitSeconds: WAIT_SECONDS },
    decorateDynamoClient: faults.install,
    wrapWorkflow: (workflow) => (flaky = new FlakyWorkflow(workflow)),
  });
  books = new Books(harness);
});
afterEach(async () => {
  faults.reset();
  flaky.reset();
  harness.stack.carrier.clearRules();
  // Back to the real time (signed receipts must be fresh), and the sweeper's cursor with it: where it would stand
  // had it last run now. It walks the ledger forward, so a cursor ahead of the clock would skip the next sends.
  const now = Date.now();
  harness.clock.set(new Date(now));
  const store = harness.stack.deps.store;
  const cursor = await store.getSweepCursor();
  if (cursor) {
    const back = (seconds: number) => new Date(now - seconds * 1000).toISOString();
    const rewound = {
      ...cursor,
      restartedThrough: back(STALL_SECONDS),
      settledThrough: back(SETTLE_AGE_SECONDS),
      version: cursor.version + 1,
    };
    expect(await store.saveSweepCursor(rewound, cursor)).toBe(true);
  }
});
afterAll(async () => {
  await harness.stack.workflow.idle();
  // Settled or not, every verification was charged exactly once and the balances add up.
  expect(await books.audit()).toEqual([]);
  await harness.close();
});

let counter = 0;
/** UK mobiles reach all five channels: sna, viber, whatsapp, rcs, sms (cheapest first). */
const freshMobile = () => `+447400${String(1_300_000 + ++counter).slice(1)}`;

/** The deliver task's own writes: the claim of a channel and the record of its provider's answer. */
const deliverTaskWrite = (call: DynamoCall) =>
  call.operation === 'UpdateItem' && (call.update?.includes('deliveries.') ?? false);

const itemOf = async (sid: string) => (await harness.scanTable()).find((item) => item.sid === sid)!;

/** An account with a webhook endpoint on the local receiver; returns its client and the endpoint SID. */
async function accountWithWebhook(): Promise<{ account: Account; endpointSid: string }> {
  const account = await books.open();
  const { endpointSid } = await adminJson<{ endpointSid: string }>(
    ['webhook', 'add', account.serviceSid, `${harness.stack.url}/_local/webhooks/receiver`],
    harness,
  );
  return { account, endpointSid };
}

/** Waits for a successful POST of `type` for the verification, and returns it. */
async function webhook(endpointSid: string, sid: string, type: string): Promise<WebhookPost> {
  return eventually(async () => {
    const query = new URLSearchParams({ endpoint: endpointSid, verification: sid });
    const posts = (await (
      await fetch(`${harness.stack.url}/_local/webhooks?${query}`)
    ).json()) as WebhookPost[];
    return posts.find(
      (post) =>
        post.eventType === type && post.response && 'status' in post.response && post.response.status === 200,
    );
  }, 15_000);
}

async function deliveryStatusBecomes(account: Account, sid: string, status: string, timeoutMs = 20_000) {
  return eventually(
    async () => {
      const body = (await harness.client(account).fetch(sid)).body;
      return body.delivery_status === status ? body : undefined;
    },
    timeoutMs,
    100,
  );
}

describe('a task that still fails after its retries', () => {
  it('no channel accepted: the Catch settles FAILED, the webhook fires, the execution still fails', async () => {
    const { account, endpointSid } = await accountWithWebhook();
    // Every claim fails: the deliver task of channel 0 throws on each of its runs.
    const injected = faults.inject({ where: deliverTaskWrite, times: Number.POSITIVE_INFINITY });
    const to = freshMobile();
    const sent = await harness.client(account).send({ To: to });
    expect(sent.status).toBe(201);
    const sid = sent.body.sid as string;

    const final = await deliveryStatusBecomes(account, sid, 'FAILED');
    expect(final.status).toBe('PENDING');
    await harness.stack.workflow.idle();
    // The first run and the three retries of the ASL's Retry, then the Catch.
    expect(injected.fired).toBe(4);
    expect(harness.stack.carrier.messagesTo(to)).toEqual([]);

    const item = await itemOf(sid);
    expect(item.delivery_status).toBe('FAILED');
    expect(item.sealed_code).toBeUndefined();
    expect(item.deliveries).toEqual({});

    // The settling step got the SID, channel index and wait only: not the error, not the code.
    const settles = harness.stack.workflow.taskLog.filter((entry) => entry.input.sid === sid);
    expect(settles.map((entry) => entry.state)).toEqual(['SettleAfterError']);
    expect(settles[0]!.input).toEqual({ sid, channelIndex: 0, waitSeconds: WAIT_SECONDS, settle: true });
    expect(settles[0]!.output).toMatchObject({ next: 'end', deliveryStatus: 'FAILED' });
    // Settled, but the execution ends in the DeliveryTaskFailed Fail state (its Cause is logged locally), so
    // the ExecutionsFailed alarm still sees it on AWS.
    expect(
      harness.logs.some(
        (line) =>
          line.includes('delivery.execution_failed') &&
          line.includes(sid) &&
          line.includes('A delivery task still failed after its retries'),
      ),
    ).toBe(true);

    const post = await webhook(endpointSid, sid, 'verification.delivery.failed');
    expect((post.payload as { data: { delivery_status: string } }).data.delivery_status).toBe('FAILED');
  });

  it('a channel had accepted: the Catch settles SENT, and the webhook says so', async () => {
    const { account, endpointSid } = await accountWithWebhook();
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent' } });
    // sna's claim goes through; every write of the next channel's deliver task fails, its claim first (which
    // would have recorded sna's answer).
    const injected = faults.inject({ where: deliverTaskWrite, skip: 1, times: Number.POSITIVE_INFINITY });
    const sid = (await harness.client(account).send({ To: to })).body.sid as string;

    await deliveryStatusBecomes(account, sid, 'SENT');
    await harness.stack.workflow.idle();
    expect(injected.fired).toBe(4);
    expect(harness.stack.carrier.messagesTo(to).map((message) => message.channel)).toEqual(['sna']);
    const item = await itemOf(sid);
    expect(item).toMatchObject({ delivery_status: 'SENT', channel: 'sna' });
    expect(item.sealed_code).toBeUndefined();
    expect(Object.keys(item.deliveries as object)).toEqual(['0']);
    // sna's answer never reached the record (the settling step trusts the SID only): left `sending`, which the
    // settling counts as carried.
    expect((item.deliveries as Record<string, { outcome: string }>)['0']!.outcome).toBe('sending');

    const post = await webhook(endpointSid, sid, 'verification.delivery.sent');
    expect((post.payload as { data: { delivery_status: string } }).data.delivery_status).toBe('SENT');
  });
});

describe('the sweeper settles deliveries claimed but never ended', () => {
  /** A send whose execution dies right after its first task: StartExecution fails, one task runs by hand. */
  async function abandonedAfterFirstTask(account: Account, to: string): Promise<string> {
    flaky.failNext(1);
    const sent = await harness.client(account).send({ To: to });
    expect(sent.status).toBe(201);
    const sid = sent.body.sid as string;
    await deliverOverChannel(harness.stack.deps, { sid, channelIndex: 0, waitSeconds: WAIT_SECONDS });
    return sid;
  }

  it('an accepted channel: left PENDING until the deadline, then SENT, with its webhook', async () => {
    const { account, endpointSid } = await accountWithWebhook();
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent' } });
    const claimedAt = harness.clock.now().getTime();
    const sid = await abandonedAfterFirstTask(account, to);
    // The claim dated the delivery's start.
    const claimed = await itemOf(sid);
    expect(Date.parse((claimed.deliveries as Record<string, { at: string }>)['0']!.at)).toBe(claimedAt);

    // Claimed, so never restarted; before its deadline, never settled (an execution may still run it).
    harness.clock.advance(31_000);
    expect(await harness.stack.sweep()).toEqual([]);
    harness.clock.set(new Date(claimedAt + (UNSETTLED_DEADLINE_SECONDS - 1) * 1000));
    expect(await harness.stack.settle()).toEqual([]);
    expect((await harness.client(account).fetch(sid)).body.delivery_status).toBe('PENDING');

    harness.clock.set(new Date(claimedAt + UNSETTLED_DEADLINE_SECONDS * 1000 + 1000));
    faults.reset();
    expect(await harness.stack.settle()).toEqual([sid]);
    // Found through the ledger: the cursor, the directory and the services' charge lines (queries), the sends'
    // verifications in a batch, the one to settle read again and ended, the cursor saved; no scan.
    expect([...new Set(faults.calls.map((call) => call.operation))].sort()).toEqual([
      'BatchGetItem',
      'GetItem',
      'PutItem',
      'Query',
      'UpdateItem',
    ]);
    const item = await itemOf(sid);
    expect(item).toMatchObject({ delivery_status: 'SENT', channel: 'sna' });
    expect(item.sealed_code).toBeUndefined();
    expect(harness.logs.some((line) => line.includes('"delivery.ended"') && line.includes(sid))).toBe(true);
    // Past the cursor: the next run has nothing new to look at.
    expect(await harness.stack.settle()).toEqual([]);
    expect(harness.stack.carrier.messagesTo(to)).toHaveLength(1);

    const post = await webhook(endpointSid, sid, 'verification.delivery.sent');
    expect((post.payload as { data: { delivery_status: string } }).data.delivery_status).toBe('SENT');
  });

  it('no channel accepted: FAILED by the same rule as the workflow', async () => {
    const { account, endpointSid } = await accountWithWebhook();
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'reject' } });
    const sid = await abandonedAfterFirstTask(account, to);

    harness.clock.advance((UNSETTLED_DEADLINE_SECONDS + 1) * 1000);
    expect(await harness.stack.settle()).toEqual([sid]);
    expect((await harness.client(account).fetch(sid)).body.delivery_status).toBe('FAILED');
    await webhook(endpointSid, sid, 'verification.delivery.failed');
  });

  it('a delivery that ended normally is left alone, and a late claim cannot reopen it', async () => {
    const account = await books.open();
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: { deliver: 20 } } });
    const sid = (await harness.client(account).send({ To: to })).body.sid as string;
    await deliveryStatusBecomes(account, sid, 'DELIVERED');
    await harness.stack.workflow.idle();
    harness.clock.advance((UNSETTLED_DEADLINE_SECONDS + 1) * 1000);
    expect(await harness.stack.settle()).toEqual([]);

    // A claim that comes after the end (a duplicate run that read PENDING just before) is refused, so an
    // ended delivery never looks unsettled to the sweeper nor sends again.
    const late = { channel: 'viber' as const, outcome: 'sending' as const, at: new Date().toISOString() };
    expect(await harness.stack.deps.store.claimChannel(sid, 1, late)).toBe(false);
    const item = await itemOf(sid);
    expect(item.delivery_status).toBe('DELIVERED');
    expect(Object.keys(item.deliveries as object)).toEqual(['0']);
  });
});
