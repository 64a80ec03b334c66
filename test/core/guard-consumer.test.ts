/**
 * The guard's consumer folds each stream record once: a batch delivered again (a retry, bisected halves) leaves
 * the aggregates as they were, a later batch still counts, and another shard's records are judged on their own
 * shard's mark (memory guard store; the DynamoDB store's twin is test/integration/guard-consumer.test.ts).
 */
import {
  FOLDED_KEEP_MS,
  compareSequence,
  consumeGuardEvents,
  type PositionedGuardEvent,
} from '../../functions/core/guard/consumer';
import { MemoryGuardStore } from '../../functions/adapters/memory/guard';
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
