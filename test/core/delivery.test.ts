/**
 * The delivery tasks (channel fallback, rejections, receipts, settling) through the core with the memory store,
 * a scripted provider and a fake clock; the test plays the state machine's part.
 */
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { deferredKeyRing, masterKeyRing, type KeyRing } from '../../functions/adapters/keyring';
import {
  NOT_YET_WRITTEN_PAUSES_MS,
  acceptReceipt,
  afterReceiptWait,
  deliverOverChannel,
  settleDelivery,
  type DeliveryTaskInput,
} from '../../functions/core/delivery';
import {
  MAX_SENDS_PER_HALF,
  restartStalledDeliveries,
  settleOverdueDeliveries,
  sweepDeliveries,
} from '../../functions/core/sweeper';
import type { Verification } from '../../functions/core/model';
import { InMemoryMetrics, METRIC } from '../../functions/core/metrics';
import { ProviderError } from '../../functions/core/providers';
import type { TimeSpan } from '../../functions/core/ports';
import {
  CORE_MASTER_KEY,
  ScriptedProvider,
  UK_MOBILE,
  coreWorld,
  type CoreWorld,
} from '../support/core-world';

let world: CoreWorld;
let serviceSid: string;
const CODE = '550219';

beforeEach(() => {
  world = coreWorld({ channelWaitSeconds: 8 });
  serviceSid = world.addService({ enabledChannels: ['sna', 'viber', 'sms'] }).sid;
});

const sendOne = async (): Promise<string> => {
  world.random.codes.push(CODE);
  return (await world.send({ serviceSid })).verification.sid;
};

const input = (sid: string, channelIndex = 0): DeliveryTaskInput => ({ sid, channelIndex, waitSeconds: 8 });
/** What the state machine gives the AfterWait task after a receipt wait (statemachine/delivery.asl.json). */
const afterWaitInput = ({
  sid,
  channelIndex,
  waitSeconds,
  answers,
}: DeliveryTaskInput): DeliveryTaskInput => ({
  sid,
  channelIndex,
  waitSeconds,
  answers,
});
/** Writes the store took, of any kind (the provider's answer rides one the workflow makes anyway). */
const countWrites = () => {
  const writes: string[] = [];
  for (const name of ['claimChannel', 'recordChannelOutcome', 'finishDelivery', 'markDelivered'] as const) {
    const original = world.store[name].bind(world.store) as (...args: unknown[]) => Promise<unknown>;
    jest
      .spyOn(world.store, name)
      .mockImplementation((...args: unknown[]) => (writes.push(name), original(...args)) as never);
  }
  return writes;
};
const stored = async (sid: string): Promise<Verification> => (await world.store.getVerification(sid))!;

const receipt = (
  sid: string,
  channelIndex: number,
  messageId: string,
  status: 'delivered' | 'failed' = 'delivered',
) =>
  acceptReceipt(
    world.deliveryDeps,
    'carrier',
    ScriptedProvider.receipt({ reference: `${sid}.${channelIndex}`, messageId, status }),
  );

it('delivers over the cheapest channel; a receipt ends delivery', async () => {
  const sid = await sendOne();
  const writes = countWrites();
  expect(await deliverOverChannel(world.deliveryDeps, input(sid))).toEqual({
    ...input(sid),
    answers: [{ channelIndex: 0, messageId: 'msg-1' }],
    next: 'wait',
    waits: [1, 1, 2, 4],
  });
  // One write, the claim: the provider's answer travels with the workflow, not in a write of its own.
  expect(writes).toEqual(['claimChannel']);
  expect((await stored(sid)).deliveries['0']).toMatchObject({ channel: 'sna', outcome: 'sending' });
  expect(world.provider.sent).toEqual([
    expect.objectContaining({
      channel: 'sna',
      to: UK_MOBILE,
      body: `Your code is ${CODE}.`,
      reference: `${sid}.0`,
    }),
  ]);
  expect(await receipt(sid, 0, 'msg-1')).toBe('applied');
  expect(writes).toEqual(['claimChannel', 'markDelivered']);
  const delivered = await stored(sid);
  expect(delivered).toMatchObject({ deliveryStatus: 'DELIVERED', channel: 'sna' });
  // The receipt's write recorded the message it names on the channel still claimed.
  expect(delivered.deliveries['0']).toMatchObject({
    channel: 'sna',
    outcome: 'accepted',
    messageId: 'msg-1',
  });
  expect(delivered.sealedCode).toBeUndefined();
  world.clock.advance(8000);
  expect(await afterReceiptWait(world.deliveryDeps, input(sid))).toEqual({
    ...input(sid),
    next: 'end',
    deliveryStatus: 'DELIVERED',
  });
  // Ended: the sweeper's passes over it (restart at 30 s, settle at 6 minutes) leave it alone.
  const sweeper = { ...world.deliveryDeps, store: world.store, workflow: world.workflow };
  world.clock.advance(22_000);
  expect(await sweepDeliveries(sweeper)).toMatchObject({ restarted: [], settled: [], read: 1 });
  world.clock.advance(360_000);
  expect(await sweepDeliveries(sweeper)).toMatchObject({ restarted: [], settled: [], read: 1 });
});

it('falls back to the next channel when no receipt comes; SENT when the last is silent; a late receipt still counts', async () => {
  const sid = await sendOne();
  const writes = countWrites();
  const first = await deliverOverChannel(world.deliveryDeps, input(sid));
  expect(first.next).toBe('wait');
  world.clock.advance(8000);
  const toSecond = await afterReceiptWait(world.deliveryDeps, afterWaitInput(first));
  expect(toSecond).toEqual({
    ...input(sid, 1),
    answers: [{ channelIndex: 0, messageId: 'msg-1' }],
    next: 'deliver',
  });
  const second = await deliverOverChannel(world.deliveryDeps, toSecond);
  expect(second.next).toBe('wait');
  // The second channel's claim recorded the first channel's answer.
  expect((await stored(sid)).deliveries).toMatchObject({
    0: { channel: 'sna', outcome: 'accepted', messageId: 'msg-1' },
    1: { channel: 'viber', outcome: 'sending' },
  });
  world.clock.advance(8000);
  const toThird = await afterReceiptWait(world.deliveryDeps, afterWaitInput(second));
  expect(toThird).toEqual({
    ...input(sid, 2),
    answers: [{ channelIndex: 1, messageId: 'msg-2' }],
    next: 'deliver',
  });
  const third = await deliverOverChannel(world.deliveryDeps, toThird);
  world.clock.advance(8000);
  expect(await afterReceiptWait(world.deliveryDeps, afterWaitInput(third))).toEqual({
    ...input(sid, 2),
    answers: [{ channelIndex: 2, messageId: 'msg-3' }],
    next: 'end',
    deliveryStatus: 'SENT',
  });
  expect(world.provider.sent.map((m) => m.channel)).toEqual(['sna', 'viber', 'sms']);
  // Three claims and the end: every answer recorded, none by a write of its own.
  expect(writes).toEqual(['claimChannel', 'claimChannel', 'claimChannel', 'finishDelivery']);
  expect((await stored(sid)).deliveries).toMatchObject({
    0: { outcome: 'accepted', messageId: 'msg-1' },
    1: { outcome: 'accepted', messageId: 'msg-2' },
    2: { channel: 'sms', outcome: 'accepted', messageId: 'msg-3' },
  });
  expect((await stored(sid)).sealedCode).toBeUndefined();
  // The first channel's receipt arrives late: DELIVERED over the channel that delivered.
  expect(await receipt(sid, 0, 'msg-1')).toBe('applied');
  expect(await stored(sid)).toMatchObject({ deliveryStatus: 'DELIVERED', channel: 'sna' });
});

it('moves on at once past a rejection; all rejected is FAILED and the number unreachable for the plan', async () => {
  world.provider.behaviour.sna = 'reject';
  world.provider.behaviour.viber = 'reject';
  world.provider.behaviour.sms = 'reject';
  const sid = await sendOne();
  expect(await deliverOverChannel(world.deliveryDeps, input(sid))).toEqual({
    ...input(sid, 1),
    answers: [],
    next: 'deliver',
  });
  expect(await deliverOverChannel(world.deliveryDeps, input(sid, 1))).toEqual({
    ...input(sid, 2),
    answers: [],
    next: 'deliver',
  });
  expect(await deliverOverChannel(world.deliveryDeps, input(sid, 2))).toEqual({
    ...input(sid, 2),
    answers: [],
    next: 'end',
    deliveryStatus: 'FAILED',
  });
  // A refusal is written when it comes: the end and `unreachable` read it from the record.
  expect((await stored(sid)).deliveries['1']).toMatchObject({ channel: 'viber', outcome: 'rejected' });
  const number = await world.store.getNumber(UK_MOBILE);
  const until = world.clock.now().getTime() + 30 * 86_400_000;
  expect(number.rejectedUntil).toEqual({ sna: until, viber: until, sms: until });
  world.clock.advance(301_000);
  await expect(world.send({ serviceSid })).rejects.toMatchObject({ code: 'unreachable' });
});

it('ends FAILED when every channel that accepted reported its message undelivered; SENT while one may deliver', async () => {
  world.provider.behaviour.sms = 'reject';
  const sid = await sendOne();
  const first = await deliverOverChannel(world.deliveryDeps, input(sid));
  // Before the answer is on the record (believed from the channel's provider), then after it.
  expect(await receipt(sid, 0, 'msg-1', 'failed')).toBe('applied');
  const second = await deliverOverChannel(
    world.deliveryDeps,
    await afterReceiptWait(world.deliveryDeps, afterWaitInput(first)),
  );
  const atLast = await afterReceiptWait(world.deliveryDeps, afterWaitInput(second));
  // The first channel's failure again (a provider retrying its callback): a duplicate, whatever came since.
  expect(await receipt(sid, 0, 'msg-1', 'failed')).toBe('duplicate');
  const silentSecond = await deliverOverChannel(world.deliveryDeps, atLast);
  expect(silentSecond).toMatchObject({ next: 'end', deliveryStatus: 'SENT' });

  // The next send's plan leaves out sms, which rejected the number: sna and viber, both failing.
  const other = await sendOne();
  let step = await deliverOverChannel(world.deliveryDeps, input(other));
  expect(await receipt(other, 0, 'msg-4', 'failed')).toBe('applied');
  step = await deliverOverChannel(
    world.deliveryDeps,
    await afterReceiptWait(world.deliveryDeps, afterWaitInput(step)),
  );
  expect(await receipt(other, 1, 'msg-5', 'failed')).toBe('applied');
  step = await deliverOverChannel(
    world.deliveryDeps,
    await afterReceiptWait(world.deliveryDeps, afterWaitInput(step)),
  );
  expect(step).toMatchObject({ next: 'end', deliveryStatus: 'FAILED' });
  expect(world.provider.sent.map((message) => message.channel)).toEqual([
    'sna',
    'viber',
    'sms',
    'sna',
    'viber',
  ]);
  // A failure receipt says nothing of the number's reach on its own: only the rejecting channel is remembered.
  expect(Object.keys((await world.store.getNumber(UK_MOBILE)).rejectedUntil ?? {})).toEqual(['sms']);
});

it('treats a provider error like a rejection for delivery, but not for the number', async () => {
  world.provider.behaviour.sna = 'error';
  const sid = await sendOne();
  expect(await deliverOverChannel(world.deliveryDeps, input(sid))).toEqual({
    ...input(sid, 1),
    answers: [],
    next: 'deliver',
  });
  expect((await stored(sid)).deliveries['0']).toMatchObject({
    outcome: 'failed',
    reason: 'carrier time-out',
  });
  world.provider.behaviour.viber = 'reject';
  world.provider.behaviour.sms = 'reject';
  await deliverOverChannel(world.deliveryDeps, input(sid, 1));
  await deliverOverChannel(world.deliveryDeps, input(sid, 2));
  expect((await stored(sid)).deliveryStatus).toBe('FAILED');
  expect(Object.keys((await world.store.getNumber(UK_MOBILE)).rejectedUntil).sort()).toEqual([
    'sms',
    'viber',
  ]);
});

it('counts a provider error by its code: the ones an operator must fix are alarmed on', async () => {
  const metrics = new InMemoryMetrics();
  const deps = { ...world.deliveryDeps, metrics };
  const send = world.provider.send.bind(world.provider);
  world.provider.send = (message) =>
    message.channel === 'sna'
      ? Promise.reject(new ProviderError('sandbox_destination_not_verified', 'not verified'))
      : message.channel === 'viber'
        ? Promise.reject(new Error('socket hang up'))
        : send(message);
  const sid = await sendOne();
  await deliverOverChannel(deps, input(sid));
  await deliverOverChannel(deps, input(sid, 1));
  expect(metrics.total(METRIC.providerErrors, { code: 'sandbox_destination_not_verified' })).toBe(1);
  expect(metrics.total(METRIC.providerErrors, { code: 'provider_error' })).toBe(1);
  expect((await stored(sid)).deliveries['0']).toMatchObject({
    outcome: 'failed',
    reason: 'not verified',
    errorCode: 'sandbox_destination_not_verified',
  });
  expect((await stored(sid)).deliveries['1']).toMatchObject({
    outcome: 'failed',
    errorCode: 'provider_error',
  });
});

it('skips a channel the code cannot live long enough for, sends nothing on it, and never names it', async () => {
  // sna's provider needs more life than the code has: it is skipped, viber carries the message.
  world.provider.minimumLifeSeconds = (channel) => (channel === 'sna' ? 10_000 : 0);
  const sid = await sendOne();
  expect((await stored(sid)).channel).toBe('sna');
  expect(await deliverOverChannel(world.deliveryDeps, input(sid))).toMatchObject({
    channelIndex: 1,
    next: 'deliver',
  });
  expect((await stored(sid)).deliveries['0']).toMatchObject({
    channel: 'sna',
    outcome: 'failed',
    skipped: true,
  });
  // Nothing handed over yet: no channel to name.
  expect((await stored(sid)).channel).toBeNull();
  await deliverOverChannel(world.deliveryDeps, input(sid, 1));
  expect(world.provider.sent.map((message) => message.channel)).toEqual(['viber']);
  expect((await stored(sid)).channel).toBe('viber');
});

it('sends once when a task runs twice', async () => {
  const sid = await sendOne();
  await deliverOverChannel(world.deliveryDeps, input(sid));
  expect(await deliverOverChannel(world.deliveryDeps, input(sid))).toEqual({
    ...input(sid),
    answers: [],
    next: 'wait',
    waits: [1, 1, 2, 4],
  });
  expect(world.provider.sent).toHaveLength(1);
});

it('records a carried answer only on a channel still claimed, and ignores what the workflow could not have made', async () => {
  world.provider.behaviour.sna = 'reject';
  const sid = await sendOne();
  const toSecond = await deliverOverChannel(world.deliveryDeps, input(sid));
  const rejected = (await stored(sid)).deliveries['0'];
  const carried = [
    { channelIndex: 0, messageId: 'other' },
    { channelIndex: 'x', messageId: 'm' },
    null,
    { channelIndex: 4, messageId: 'm' },
  ];
  expect(
    (await deliverOverChannel(world.deliveryDeps, { ...toSecond, answers: carried as never })).next,
  ).toBe('wait');
  const { deliveries } = await stored(sid);
  expect(deliveries['0']).toEqual(rejected);
  expect(Object.keys(deliveries).sort()).toEqual(['0', '1']);
});

describe('a first task that runs before the send’s transaction is visible (the workflow starts beside it)', () => {
  it('reads again after short pauses and delivers once the record is there', async () => {
    const sid = await sendOne();
    let visible = false;
    const store = Object.create(world.store) as typeof world.store;
    store.getVerification = async (id) => (visible ? world.store.getVerification(id) : undefined);
    const pauses: number[] = [];
    const pause = async (ms: number) => {
      pauses.push(ms);
      // The transaction becomes visible during the third pause.
      if (pauses.length === 3) visible = true;
    };
    expect((await deliverOverChannel({ ...world.deliveryDeps, store, pause }, input(sid))).next).toBe('wait');
    expect(pauses).toEqual(NOT_YET_WRITTEN_PAUSES_MS.slice(0, 3));
    expect(world.provider.sent).toHaveLength(1);
  });

  it('ends, sending nothing, when the record never comes (the transaction was refused)', async () => {
    const pauses: number[] = [];
    const pause = async (ms: number) => void pauses.push(ms);
    const sid = `VE${'0'.repeat(31)}a`;
    expect(await deliverOverChannel({ ...world.deliveryDeps, pause }, input(sid))).toEqual({
      ...input(sid),
      next: 'end',
    });
    expect(pauses).toEqual(NOT_YET_WRITTEN_PAUSES_MS);
    expect(NOT_YET_WRITTEN_PAUSES_MS.reduce((a, b) => a + b)).toBeLessThan(1500);
    expect(world.provider.sent).toEqual([]);
  });

  it('does not pause when the record is there', async () => {
    const sid = await sendOne();
    const pauses: number[] = [];
    await deliverOverChannel(
      { ...world.deliveryDeps, pause: async (ms) => void pauses.push(ms) },
      input(sid),
    );
    expect(pauses).toEqual([]);
  });
});

it('tries no further channel once the code is verified', async () => {
  const sid = await sendOne();
  await deliverOverChannel(world.deliveryDeps, input(sid));
  await world.store.spendAttempt(sid, serviceSid, world.vault.hash(sid, CODE), world.clock.now());
  world.clock.advance(8000);
  expect(await afterReceiptWait(world.deliveryDeps, input(sid))).toMatchObject({
    next: 'end',
    deliveryStatus: 'SENT',
  });
  expect(world.provider.sent).toHaveLength(1);
});

describe('receipts move delivery forward only', () => {
  it('ignores forged, unknown and mismatched receipts; a failure receipt only marks its channel', async () => {
    const sid = await sendOne();
    const first = await deliverOverChannel(world.deliveryDeps, input(sid));
    // The provider's answer is on the record once the workflow's next write took it (here the next claim).
    world.clock.advance(8000);
    await deliverOverChannel(
      world.deliveryDeps,
      await afterReceiptWait(world.deliveryDeps, afterWaitInput(first)),
    );
    const forged = ScriptedProvider.receipt(
      { reference: `${sid}.0`, messageId: 'msg-1', status: 'delivered' },
      'bad',
    );
    expect(await acceptReceipt(world.deliveryDeps, 'carrier', forged)).toBe('invalid');
    expect(await acceptReceipt(world.deliveryDeps, 'other', forged)).toBe('invalid');
    expect(await receipt(sid, 2, 'msg-1')).toBe('unknown'); // channel 2 never tried
    expect(await receipt(sid, 0, 'msg-2')).toBe('unknown'); // not the message sent
    expect(await receipt(`VE${'0'.repeat(31)}f`, 0, 'msg-1')).toBe('unknown');
    // A failure receipt for a channel the workflow moved past is recorded, once, but leaves the mark (what the
    // state machine reads to end a channel's wait) to the channel being waited on.
    expect(await receipt(sid, 1, 'msg-2', 'failed')).toBe('applied');
    expect(world.store.receiptFailed.get(sid)).toBe(1);
    expect(await receipt(sid, 0, 'msg-1', 'failed')).toBe('applied');
    expect(world.store.receiptFailed.get(sid)).toBe(1);
    expect((await stored(sid)).failedReceipts).toEqual([0, 1]);
    expect(await receipt(sid, 0, 'msg-1', 'failed')).toBe('duplicate');
    expect((await stored(sid)).deliveryStatus).toBe('PENDING');
    expect(await receipt(sid, 0, 'msg-1')).toBe('applied');
    expect(await receipt(sid, 0, 'msg-1')).toBe('duplicate');
  });

  it('leaves FAILED final', async () => {
    world.provider.behaviour.sna = 'reject';
    const sid = await sendOne();
    await world.store.claimChannel(sid, 1, { channel: 'viber', outcome: 'accepted', messageId: 'm', at: '' });
    await world.store.finishDelivery(sid, 'FAILED', world.clock.now());
    expect(await receipt(sid, 1, 'm')).toBe('duplicate');
    expect((await stored(sid)).deliveryStatus).toBe('FAILED');
  });

  it("believes a receipt that beats the provider's answer, from that channel's provider", async () => {
    const sid = await sendOne();
    await world.store.claimChannel(sid, 0, {
      channel: 'sna',
      outcome: 'sending',
      at: world.clock.now().toISOString(),
    });
    expect(await receipt(sid, 0, 'whatever-id')).toBe('applied');
    expect((await stored(sid)).deliveryStatus).toBe('DELIVERED');
  });
});

describe('settling', () => {
  it('settles a delivery left sending as SENT, from the record only', async () => {
    const sid = await sendOne();
    await world.store.claimChannel(sid, 0, {
      channel: 'sna',
      outcome: 'sending',
      at: world.clock.now().toISOString(),
    });
    expect(await settleDelivery(world.deliveryDeps, { ...input(sid, 2) })).toMatchObject({
      next: 'end',
      deliveryStatus: 'SENT',
    });
  });

  it('lets the sweeper settle a delivery whose execution died, after its deadline', async () => {
    const sid = await sendOne();
    // The first claim sets the settle-by time: claim + 5 min + 1 min.
    world.provider.behaviour.sna = 'reject';
    await deliverOverChannel(world.deliveryDeps, input(sid));
    const deps = { ...world.deliveryDeps, store: world.store };
    expect(await settleOverdueDeliveries(deps)).toEqual([]);
    world.clock.advance(360_000);
    expect(await settleOverdueDeliveries(deps)).toEqual([
      { ...input(sid), next: 'end', deliveryStatus: 'FAILED' },
    ]);
    expect((await stored(sid)).deliveryStatus).toBe('FAILED');
    expect(await settleOverdueDeliveries(deps)).toEqual([]);
  });

  it("the sweeper's one pass restarts and settles, reading each send's verification once, in one batch", async () => {
    // A delivery claimed and left (its execution died), 7 minutes old: past its deadline. A send whose workflow
    // never started, 1 minute old. One running normally.
    world.provider.behaviour.sna = 'reject';
    const died = await sendOne();
    await deliverOverChannel(world.deliveryDeps, input(died));
    world.clock.advance(360_000);
    const stalled = await sendOne();
    const running = await sendOne();
    world.clock.advance(60_000);
    await world.store.claimChannel(running, 0, {
      channel: 'sna',
      outcome: 'sending',
      at: world.clock.now().toISOString(),
    });
    world.workflow.started.length = 0;
    const listings: (readonly TimeSpan[])[] = [];
    const batches: string[][] = [];
    const store = Object.create(world.store) as typeof world.store;
    store.listAcceptedSends = (spans) => {
      listings.push(spans);
      return world.store.listAcceptedSends(spans);
    };
    store.readVerifications = (sids) => {
      batches.push(sids);
      return world.store.readVerifications(sids);
    };
    const sweeper = { ...world.deliveryDeps, store, workflow: world.workflow };
    const result = await sweepDeliveries(sweeper);
    expect(result).toMatchObject({ restarted: [stalled], failures: [], read: 3 });
    expect(result.settled).toEqual([{ ...input(died), next: 'end', deliveryStatus: 'FAILED' }]);
    expect(world.workflow.started).toEqual([{ sid: stalled, waitSeconds: 8, restart: true }]);
    // One listing of the ledger with a span per half (restart: 30 s old and younger than the code; settle: 6
    // minutes old), one batch read.
    expect(listings.map((spans) => spans.length)).toEqual([2]);
    expect(batches).toHaveLength(1);
    expect([...batches[0]!].sort()).toEqual([died, stalled, running].sort());
    expect((await stored(running)).deliveryStatus).toBe('PENDING');

    // The next run a minute later looks only at what became old enough since: nothing here.
    world.clock.advance(60_000);
    expect(await sweepDeliveries(sweeper)).toMatchObject({ restarted: [], settled: [], read: 0 });
    expect(world.workflow.started).toHaveLength(1);
  });

  it('tries a failed restart again in the next run: the cursor stops just before it', async () => {
    world.workflow.failing = true;
    const stalled = await sendOne();
    world.clock.advance(1000);
    const later = await sendOne();
    world.clock.advance(31_000);
    const sweeper = { ...world.deliveryDeps, store: world.store, workflow: world.workflow };
    const failed = await sweepDeliveries(sweeper);
    expect(failed.failures).toHaveLength(2);
    expect(failed.restarted).toEqual([]);
    world.workflow.failing = false;
    world.clock.advance(60_000);
    expect(await sweepDeliveries(sweeper)).toMatchObject({ restarted: [stalled, later], failures: [] });
    world.clock.advance(60_000);
    expect(await sweepDeliveries(sweeper)).toMatchObject({ restarted: [], read: 0 });
  });

  it('settles a delivery restarted late once its own deadline passes (kept in the cursor until then)', async () => {
    world.workflow.failing = true;
    const sentAt = world.clock.now().getTime();
    const sid = await sendOne();
    world.workflow.failing = false;
    world.clock.advance(31_000);
    const sweeper = { ...world.deliveryDeps, store: world.store, workflow: world.workflow };
    expect((await sweepDeliveries(sweeper)).restarted).toEqual([sid]);
    // The restarted execution claims the first channel 31 s after the send, then dies.
    expect(await deliverOverChannel(world.deliveryDeps, input(sid))).toMatchObject({ next: 'wait' });
    // At the send's 6 minutes its deadline (claim + 6 minutes) is 31 s away: not settled, looked at again then.
    world.clock.advance(330_000);
    expect(await sweepDeliveries(sweeper)).toMatchObject({ settled: [], read: 1 });
    expect((await world.store.getSweepCursor())?.deferred).toEqual({
      [sid]: new Date(sentAt + 31_000 + 360_000).toISOString(),
    });
    world.clock.advance(29_000);
    expect((await sweepDeliveries(sweeper)).settled).toEqual([]);
    world.clock.advance(1000);
    const settled = await sweepDeliveries(sweeper);
    expect(settled.settled).toEqual([{ ...input(sid), next: 'end', deliveryStatus: 'SENT' }]);
    expect((await world.store.getSweepCursor())?.deferred).toEqual({});
  });

  it('reads at most 20,000 sends a half in a run, cut between two acceptance times', async () => {
    const start = world.clock.now().getTime();
    const at = (i: number) => new Date(start + Math.min(i, MAX_SENDS_PER_HALF - 2) * 5).toISOString();
    // 20,010 sends, the 20,000th cut landing in a millisecond that six of them share.
    const ledger = Array.from({ length: MAX_SENDS_PER_HALF + 10 }, (_, i) => ({
      sid: `VE${String(i).padStart(32, '0')}`,
      at: i > MAX_SENDS_PER_HALF + 3 ? new Date(start + 100_000 + i).toISOString() : at(i),
    }));
    const read: string[] = [];
    const store = Object.create(world.store) as typeof world.store;
    store.listAcceptedSends = async (spans) =>
      spans.map(({ from, to }) =>
        ledger.filter((send) => new Date(send.at) >= from && new Date(send.at) <= to),
      );
    store.readVerifications = async (sids) => {
      read.push(...sids);
      return [];
    };
    world.clock.advance(240_000);
    await store.saveSweepCursor(
      {
        restartedThrough: new Date(start - 1).toISOString(),
        settledThrough: new Date(start - 1).toISOString(),
        deferred: {},
        version: 1,
      },
      undefined,
    );
    const sweeper = { ...world.deliveryDeps, store, workflow: world.workflow };
    await restartStalledDeliveries(sweeper);
    expect(read).toHaveLength(MAX_SENDS_PER_HALF - 2);
    expect((await store.getSweepCursor())?.restartedThrough).toBe(at(MAX_SENDS_PER_HALF - 3));
    read.length = 0;
    await restartStalledDeliveries(sweeper);
    expect(read).toEqual(ledger.slice(MAX_SENDS_PER_HALF - 2).map((send) => send.sid));
  });

  it('after a long outage looks back an hour for settlements, and no further than the code for restarts', async () => {
    world.workflow.failing = true;
    const old = await sendOne();
    world.workflow.failing = false;
    const claimed = await sendOne();
    await deliverOverChannel(world.deliveryDeps, input(claimed));
    // The sweeper's first run comes 20 minutes later: the never-claimed send is past its code's life (not
    // restarted); the claimed one, past its deadline, is settled.
    world.clock.advance(20 * 60_000);
    world.workflow.started.length = 0;
    const result = await sweepDeliveries({
      ...world.deliveryDeps,
      store: world.store,
      workflow: world.workflow,
    });
    expect(result.restarted).toEqual([]);
    expect(result.settled).toEqual([{ ...input(claimed), next: 'end', deliveryStatus: 'SENT' }]);
    expect((await stored(old)).deliveryStatus).toBe('PENDING');
  });
});

describe('a cold deliver task, whose key secrets are still being read', () => {
  const deferredVault = (read: Promise<KeyRing>) => new CryptoCodeVault(deferredKeyRing(() => read));

  it('reads the verification beside the key read and claims the channel only once the keys are in', async () => {
    const sid = await sendOne();
    let keysIn!: () => void;
    const read = new Promise<KeyRing>((resolve) => (keysIn = () => resolve(masterKeyRing(CORE_MASTER_KEY))));
    const claim = jest.spyOn(world.store, 'claimChannel');
    const getVerification = jest.spyOn(world.store, 'getVerification');

    const task = deliverOverChannel({ ...world.deliveryDeps, vault: deferredVault(read) }, input(sid));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(getVerification).toHaveBeenCalledTimes(1);
    expect(claim).not.toHaveBeenCalled();
    keysIn();
    expect((await task).next).toBe('wait');
    expect(world.provider.sent.map((message) => message.body)).toEqual([expect.stringContaining(CODE)]);
  });

  it('fails before its claim when the keys cannot be read, so its retry still sends', async () => {
    const sid = await sendOne();
    const unreadable = Promise.reject(new Error('Secrets Manager unreachable'));
    unreadable.catch(() => undefined);
    await expect(
      deliverOverChannel({ ...world.deliveryDeps, vault: deferredVault(unreadable) }, input(sid)),
    ).rejects.toThrow('Secrets Manager unreachable');
    expect((await stored(sid)).deliveries).toEqual({});
    expect(world.provider.sent).toEqual([]);

    expect((await deliverOverChannel(world.deliveryDeps, input(sid))).next).toBe('wait');
    expect(world.provider.sent).toHaveLength(1);
  });
});
