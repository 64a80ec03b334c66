/**
 * The guard's consumer folds each stream record once: a batch delivered again (a retry, bisected halves) leaves
 * the aggregates as they were, a later batch still counts, and another shard's records are judged on their own
 * shard's mark (memory guard store; the DynamoDB store's twin is test/integration/guard-consumer.test.ts).
 */
import {
  DEFERRED_AGGREGATES,
  FOLDED_KEEP_MS,
  GUARD_BATCH_WINDOW_SECONDS,
  GUARD_TUMBLING_WINDOW_SECONDS,
  compareSequence,
  consumeGuardEvents,
  consumeGuardWindowBatch,
  type PositionedGuardEvent,
} from '../../functions/core/guard/consumer';
import { MemoryGuardStore } from '../../functions/adapters/memory/guard';
import { emptyCountryState, emptyScopeState } from '../../functions/core/guard/aggregates';
import { FakeClock } from '../support/fake-clock';

const serviceSid = `VA${'1'.repeat(32)}`;
let clock: FakeClock;
let store: MemoryGuardStore;

beforeEach(() => {
  clock = new FakeClock(new Date('2026-11-23T12:00:00Z'));
  store = new MemoryGuardStore();
});

/** Sends to `+4474000000nn` (GB), at sequence numbers of `shard` from `first` up (DynamoDB's 21 digits). */
const sends = (count: number, first: number, shard = 'shardId-A', from = 0): PositionedGuardEvent[] =>
  Array.from({ length: count }, (_, i) => ({
    kind: 'send' as const,
    serviceSid,
    e164: `+447400${String(100_000 + (from + i) * 37).padStart(6, '0')}`,
    country: 'GB',
    at: clock.now().getTime() - 60_000 + i * 1000,
    accepted: true,
    position: { shard, sequence: `1${String(first + i).padStart(20, '0')}` },
  }));

/** The prompt receipt of a send, at its stream position. */
const receiptOf = (send: PositionedGuardEvent): PositionedGuardEvent => ({
  kind: 'delivered',
  serviceSid,
  e164: send.e164,
  country: send.country,
  at: send.at + 2000,
  sentAt: send.at,
  ...(send.position && { position: send.position }),
});

const consume = (events: PositionedGuardEvent[]) => consumeGuardEvents({ store, clock }, events);
/** What the consumer stored: the aggregates, state, report and marks of the service and GLOBAL. */
const stored = () => ({
  own: store.country(serviceSid, 'GB'),
  global: store.country('GLOBAL', 'GB'),
  scope: store.scope(serviceSid),
});
const sendsCounted = () => {
  const { own, global } = stored();
  // Decayed totals (half-life 3 days): a minute's decay is far below one send.
  return [Math.round(own!.stats.base.s), Math.round(global!.stats.base.s)];
};

test('the same batch consumed twice leaves the aggregates as after once, and writes nothing', async () => {
  const batch = sends(6, 1);
  await consume(batch);
  const once = stored();
  expect(sendsCounted()).toEqual([6, 6]);
  clock.advance(5000);
  await consume(batch);
  expect(stored()).toEqual(once);
});

test('a retried batch bisected into halves counts once; a later batch still counts', async () => {
  const batch = sends(8, 100);
  await consume(batch);
  await consume(batch.slice(0, 4));
  await consume(batch.slice(4));
  expect(sendsCounted()).toEqual([8, 8]);
  // The next batch of the shard: after the mark, counted.
  await consume(sends(3, 108, 'shardId-A', 8));
  expect(sendsCounted()).toEqual([11, 11]);
  // A batch overlapping what was folded (109, 110) counts its new records only (111, 112).
  await consume(sends(4, 109, 'shardId-A', 9));
  expect(sendsCounted()).toEqual([13, 13]);
});

test("another shard's records count though their sequence numbers are below this shard's mark", async () => {
  await consume(sends(5, 1_000));
  // A shard read concurrently (or a child after a split) numbers its records on its own.
  await consume(sends(5, 10, 'shardId-B', 5));
  expect(sendsCounted()).toEqual([10, 10]);
  expect(Object.keys(stored().own!.folded!).sort()).toEqual(['shardId-A', 'shardId-B']);
  await consume(sends(5, 10, 'shardId-B', 5));
  expect(sendsCounted()).toEqual([10, 10]);
});

test('events without a stream position are always folded (as before: the bench, hand-fed tests)', async () => {
  const batch = sends(3, 1).map(({ position: _position, ...event }) => event);
  await consume(batch);
  await consume(batch);
  expect(sendsCounted()).toEqual([6, 6]);
  expect(stored().own!.folded).toBeUndefined();
});

test("a shard's mark is forgotten long after its last fold (shards roll over every few hours)", async () => {
  await consume(sends(2, 1, 'shardId-old'));
  clock.advance(FOLDED_KEEP_MS + 60_000);
  await consume(sends(2, 1, 'shardId-new', 2));
  expect(Object.keys(stored().own!.folded!)).toEqual(['shardId-new']);
});

test('sequence numbers compare as numbers, beyond a double', () => {
  expect(compareSequence('100000000000000000009', '99999999999999999999')).toBe(1);
  expect(compareSequence('4421584500000000017450439092', '4421584500000000017450439091')).toBe(1);
  expect(compareSequence('000000000000000000042', '000000000000000000042')).toBe(0);
  expect(compareSequence('41', '000000000000000000042')).toBe(-1);
  expect(compareSequence('b', 'ab')).toBeLessThan(0);
});

describe("a shard's tumbling window carries the events whose aggregates wait", () => {
  test('the blocks are the ones a consumer writing every batch makes, batch by batch: real users and a flood', async () => {
    // Two consumers over the same stream: one writes every batch, the other carries as in a window.
    const everyBatch = new MemoryGuardStore();
    const windowed = new MemoryGuardStore();
    const start = clock.now().getTime();
    let sequence = 0;
    const positioned = (event: PositionedGuardEvent): PositionedGuardEvent => ({
      ...event,
      position: { shard: 'shardId-A', sequence: `1${String(++sequence).padStart(20, '0')}` },
    });
    // 40 minutes: a GB user every 10 s, each code checked 20 s later; from minute 10 to 20, random ID numbers
    // every 2 s, never checked.
    const timeline: PositionedGuardEvent[] = [];
    let seed = 11;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let ms = 0; ms < 40 * 60_000; ms += 1000) {
      const at = start + ms;
      if (ms % 10_000 === 0) {
        const e164 = `+4474${String(Math.floor(random() * 1e8)).padStart(8, '0')}`;
        timeline.push({ kind: 'send', serviceSid, e164, country: 'GB', at, accepted: true });
        timeline.push({ kind: 'conversion', serviceSid, e164, country: 'GB', at: at + 20_000, sentAt: at });
      }
      if (ms >= 10 * 60_000 && ms < 20 * 60_000 && ms % 2000 === 0) {
        const e164 = `+628${String(Math.floor(random() * 1e9)).padStart(9, '0')}`;
        timeline.push({ kind: 'send', serviceSid, e164, country: 'ID', at, accepted: true });
      }
    }
    timeline.sort((a, b) => a.at - b.at);
    let carried: PositionedGuardEvent[] = [];
    // What the send path reads: the countries' and the service's states (none stored reads as empty).
    const states = (store: MemoryGuardStore) => ({
      GB: store.country(serviceSid, 'GB')?.state ?? emptyCountryState(),
      ID: store.country(serviceSid, 'ID')?.state ?? emptyCountryState(),
      scope: store.scope(serviceSid)?.state ?? emptyScopeState(),
    });
    const batchMs = GUARD_BATCH_WINDOW_SECONDS * 1000;
    let closed = 0;
    for (let end = start + batchMs; end <= start + 45 * 60_000; end += batchMs) {
      const events = timeline.filter((event) => event.at < end && event.at >= end - batchMs).map(positioned);
      clock.set(new Date(end));
      await consumeGuardEvents({ store: everyBatch, clock }, events);
      const final = (end - start) % (GUARD_TUMBLING_WINDOW_SECONDS * 1000) === 0;
      carried = (await consumeGuardWindowBatch({ store: windowed, clock }, carried, events, final)).carry;
      expect(states(windowed)).toEqual(states(everyBatch));
      if (states(everyBatch).ID?.closed) closed += 1;
    }
    // The flood was closed in some of the batches: the comparison saw a closure, not only its absence; the real
    // users' country never was.
    expect(closed).toBeGreaterThan(0);
    expect(states(everyBatch).GB).toMatchObject({ blocks: [] });
    expect(states(everyBatch).GB.closed).toBeUndefined();
  });

  const batch = (carried: PositionedGuardEvent[], input: PositionedGuardEvent[], final = false) =>
    consumeGuardWindowBatch({ store, clock }, carried, input, final);

  test('batches that change no state write nothing and carry their events; the last one writes them, once', async () => {
    let { carry } = await batch([], sends(3, 1));
    expect(carry).toHaveLength(3);
    expect(stored()).toEqual({ own: undefined, global: undefined, scope: undefined });
    clock.advance(30_000);
    ({ carry } = await batch(carry, sends(3, 4, 'shardId-A', 3)));
    expect(carry).toHaveLength(6);
    expect(stored().own).toBeUndefined();
    clock.advance(30_000);
    ({ carry } = await batch(carry, sends(2, 7, 'shardId-A', 6), true));
    expect(carry).toEqual([]);
    expect(sendsCounted()).toEqual([8, 8]);
    // A window after it starts from what is stored, and counts on.
    ({ carry } = await batch([], sends(2, 9, 'shardId-A', 8), true));
    expect(sendsCounted()).toEqual([10, 10]);
  });

  test('a batch that starts a block writes it at once, with every aggregate; the next carries afresh', async () => {
    store = new MemoryGuardStore(() => ({
      level: 'standard',
      safeList: [],
      caps: { GB: { hourlySends: 5 } },
    }));
    // Into the hour: the sends of a batch are of the minute before it.
    clock.advance(10 * 60_000);
    let { carry } = await batch([], sends(3, 1));
    expect(stored().own).toBeUndefined();
    clock.advance(30_000);
    const reached = await batch(carry, sends(3, 4, 'shardId-A', 3));
    expect(reached.started.map((block) => block.reason)).toEqual(['country_cap']);
    expect(reached.carry).toEqual([]);
    expect(sendsCounted()).toEqual([6, 6]);
    expect(stored().own!.state.blocks.map((block) => block.reason)).toEqual(['country_cap']);
    // A receipt of one of them changes no state: carried.
    clock.advance(30_000);
    ({ carry } = await batch(reached.carry, sends(1, 7, 'shardId-A', 6).map(receiptOf)));
    expect(carry).toHaveLength(1);
  });

  test('events carried this long, or this many, are written without waiting for the window to end', async () => {
    let { carry } = await batch([], sends(2, 1));
    clock.advance(DEFERRED_AGGREGATES.maxAgeMs - 60_000);
    ({ carry } = await batch(carry, []));
    expect(carry).toEqual([]);
    expect(sendsCounted()).toEqual([2, 2]);

    // Receipts: many events that start no block.
    const many = sends(DEFERRED_AGGREGATES.maxEvents, 100, 'shardId-A', 100).map(receiptOf);
    const marked = () => stored().own?.folded?.['shardId-A']?.seq;
    const before = marked();
    ({ carry } = await batch([], many.slice(0, -1)));
    expect(carry).toHaveLength(DEFERRED_AGGREGATES.maxEvents - 1);
    expect(marked()).toBe(before);
    ({ carry } = await batch(carry, many.slice(-1)));
    expect(carry).toEqual([]);
    expect(marked()).toBe(many.at(-1)!.position!.sequence);
  });
});
