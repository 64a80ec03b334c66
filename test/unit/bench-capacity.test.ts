/**
 * The capacity model's arithmetic (bench/capacity-model.ts) over hand-made traces: per-second peaks on items,
 * partitions and a ledger's write tail, the rate at half the limit, the conflicts of a transaction window, the API
 * keys the per-key limit requires and the send's retries under conflicts.
 */
import {
  analyseCapacity,
  apiKeysFor,
  itemFamily,
  markAppends,
  partitionFamily,
  spreadApiKeys,
  type ModelAccess,
  type TimedRequest,
} from '../../bench/capacity-model';
import { capacityTargets } from '../../bench/report';
import type { CapacityResults } from '../../bench/capacity';

const SERVICE = 'SERVICE#VA0123456789abcdef0123456789abcdef';
const KEY = 'APIKEY#' + 'ab'.repeat(32);

const write = (pk: string, sk: string, wcu: number, created = false): ModelAccess => ({
  pk,
  sk,
  wcu,
  rcu: 0,
  created,
  range: false,
});
const read = (pk: string, sk: string, rcu: number, range = false): ModelAccess => ({
  pk,
  sk,
  wcu: 0,
  rcu,
  created: false,
  range,
});

/**
 * Second 0: three sends, 10 ms apart (a transaction on the balance and a new ledger line, and the key's write);
 * second 1: one send, and a ledger query from the first line. Second 2: a read of the balance.
 */
function trace(): TimedRequest[] {
  const send = (at: number, n: number): TimedRequest[] => [
    {
      at,
      transactional: true,
      accepting: true,
      items: [
        write(SERVICE, 'SERVICE', 2),
        write(SERVICE, `CHARGE#2026-01-01T00:00:0${n}.000Z#VE${n}`, 2, true),
        write(`VERIFICATION#VE${n}`, 'VERIFICATION', 2, true),
      ],
    },
    { at: at + 1, transactional: false, items: [write(KEY, 'APIKEY', 1)] },
  ];
  return markAppends([
    ...send(0, 0),
    ...send(10, 1),
    ...send(40, 2),
    ...send(1500, 3),
    {
      at: 1600,
      transactional: false,
      items: [read(SERVICE, 'CHARGE#2026-01-01T00:00:00.000Z#VE0', 3, true)],
    },
    { at: 2000, transactional: false, items: [read(SERVICE, 'SERVICE', 0.5)] },
  ]);
}

const model = () => analyseCapacity(trace(), { rate: 3, seconds: 3, windowMs: 25 });
const spot = (scope: string, family: string) =>
  model().hotSpots.find((entry) => entry.scope === scope && entry.family === family);

describe('capacity model', () => {
  it('names key families without their identifiers', () => {
    expect(partitionFamily(SERVICE)).toBe('SERVICE#<VA>');
    expect(partitionFamily('GUARD#GLOBAL#GB')).toBe('GUARD#GLOBAL#<country>');
    expect(partitionFamily(`${KEY}`)).toBe('APIKEY#<hash>');
    expect(partitionFamily('NUMBER#+447400000001~3')).toBe('NUMBER#<number>');
    expect(itemFamily(SERVICE, 'CHARGE#2026-01-01T00:00:00.000Z#VE1')).toBe('SERVICE#<VA>/CHARGE#…');
    expect(itemFamily(SERVICE, 'SERVICE')).toBe('SERVICE#<VA>/SERVICE');
  });

  it('marks only the appends of a partition that grows', () => {
    const marked = trace();
    const ledger = marked.flatMap((request) => request.items).filter((item) => item.sk.startsWith('CHARGE#'));
    expect(ledger.filter((item) => item.appends)).toHaveLength(4);
    // A verification's item is the only one of its partition: no tail.
    const verification = marked
      .flatMap((request) => request.items)
      .find((item) => item.pk === 'VERIFICATION#VE0');
    expect(verification?.appends).toBeUndefined();
  });

  it('takes the peak second of each item, partition and tail', () => {
    // The balance: three transactions of 2 WCU in second 0; 0.5 RCU in second 2.
    expect(spot('item', 'SERVICE#<VA>/SERVICE')).toMatchObject({ wcu: 6, rcu: 0.5 });
    // The service partition: balance and ledger lines (12 WCU) in second 0; the ledger query (3 RCU) in second 1.
    expect(spot('partition', 'SERVICE#<VA>')).toMatchObject({ wcu: 12, rcu: 3 });
    // The tail: the three new lines of second 0, and the query that reads from a line on it.
    expect(spot('tail', 'SERVICE#<VA>/CHARGE#… tail')).toMatchObject({ wcu: 6, rcu: 3 });
    // The key's item: 3 writes of 1 WCU in second 0.
    expect(spot('item', 'APIKEY#<hash>/APIKEY')).toMatchObject({ wcu: 3, share: 0.003 });
    // A query reads many items: no item row of its own.
    expect(spot('item', 'SERVICE#<VA>/CHARGE#…')?.rcu).toBe(0);
  });

  it('scales the rate to half the limit of the first spot to reach it', () => {
    const { ceiling } = model();
    // The service partition at 12 WCU for 3 sends/s: 500 WCU at 125 sends/s.
    expect(ceiling).toMatchObject({ scope: 'partition', family: 'SERVICE#<VA>', rateAtCeiling: 125 });
  });

  it('counts writes that meet a transaction on their item within the window', () => {
    const { conflicts } = model();
    // The send at 10 ms meets the one at 0 ms on the balance (10 < 25); the one at 40 ms is 30 ms after it,
    // the one at 1500 ms far away; the key's writes meet no transaction.
    expect(conflicts).toMatchObject({
      transactions: 4,
      conflicting: 1,
      byFamily: { 'SERVICE#<VA>/SERVICE': 1 },
      conflictFamily: 'SERVICE#<VA>/SERVICE',
    });
    // 3 writes a second on the balance at 3 sends/s; 40 a second fit in 25 ms windows: 40 sends/s.
    expect(conflicts.conflictFreeRate).toBe(40);
  });
});

/** A key's own item is spread; the service's pointer to the key (in the service's partition) is not. */
const isKeyItem = (access: ModelAccess) => access.pk.startsWith('APIKEY#');

describe('API keys the per-key limit requires', () => {
  it('takes the fewest keys that keep each within its limit', () => {
    // 1,000 sends/s x 4 key requests x 60 s = 240,000 requests a minute; 120 a key: 2,000 keys.
    expect(apiKeysFor(1000, 4, 120)).toBe(2000);
    // 10 x 3 x 60 = 1,800 a minute over 120: 15 keys; 1,801 would need a 16th.
    expect(apiKeysFor(10, 3, 120)).toBe(15);
    expect(apiKeysFor(1801 / 180, 3, 120)).toBe(16);
    // 1 send/s is 240 a minute: 2 keys; at 0.5 sends/s one key takes exactly its limit.
    expect(apiKeysFor(1, 4, 120)).toBe(2);
    expect(apiKeysFor(0.5, 4, 120)).toBe(1);
  });

  it("renames the key's item per verification, mod the keys, and spreads its load", () => {
    // 6 verifications in one second, each a key write (1 WCU) and a read of the service's pointer to the key.
    const trace: TimedRequest[] = Array.from({ length: 6 }, (_, n) => ({
      at: n * 100,
      transactional: false,
      verification: n,
      items: [write(KEY, 'APIKEY', 1), read(SERVICE, KEY, 0.5)],
    }));
    const spread = spreadApiKeys(trace, 4, isKeyItem);
    expect(spread.map((request) => request.items[0]!.pk)).toEqual(
      [0, 1, 2, 3, 0, 1].map((key) => `${KEY}~${key}`),
    );
    // The pointer stays where it is.
    expect(spread.every((request) => request.items[1]!.pk === SERVICE)).toBe(true);
    const { hotSpots } = analyseCapacity(spread, { rate: 6, seconds: 1, windowMs: 25 });
    const keyItem = hotSpots.find((spot) => spot.scope === 'item' && spot.family === 'APIKEY#<hash>/APIKEY');
    // Keys 0 and 1 take two verifications each: 2 WCU in the second, the busiest key's. Its load stays at the
    // per-key limit whatever the rate (more sends, more keys): no rate at which it reaches half the limit.
    expect(keyItem).toMatchObject({ wcu: 2, rateAtCeiling: Infinity });
    // Unspread, the one key takes all 6.
    const one = analyseCapacity(trace, { rate: 6, seconds: 1, windowMs: 25 }).hotSpots.find(
      (spot) => spot.scope === 'item' && spot.family === 'APIKEY#<hash>/APIKEY',
    );
    expect(one).toMatchObject({ wcu: 6, rateAtCeiling: 500 });
  });
});

describe("the send's conflicts and retries", () => {
  /** An accepting transaction on the balance and the verification's own item, 3 + 3 WCU. */
  const accepting = (at: number, n: number): TimedRequest => ({
    at,
    transactional: true,
    accepting: true,
    items: [write(SERVICE, 'SERVICE', 3), write(`VERIFICATION#VE${n}`, 'VERIFICATION', 3, true)],
  });

  it('counts the sends whose transaction meets an earlier transaction on one of its items', () => {
    const trace: TimedRequest[] = [
      accepting(0, 0),
      // 10 ms after the first, on the balance: met.
      accepting(10, 1),
      // 30 ms after the one at 10 ms: free.
      accepting(40, 2),
      // A plain write of the balance 5 ms before: not a transaction, so not a conflict of this one.
      { at: 95, transactional: false, items: [write(SERVICE, 'SERVICE', 1)] },
      accepting(100, 3),
      // Another transaction (a delivery's) on this verification's item 20 ms before: met.
      { at: 180, transactional: true, items: [write('VERIFICATION#VE4', 'VERIFICATION', 2)] },
      accepting(200, 4),
    ];
    const model = analyseCapacity(trace, { rate: 5, seconds: 1, windowMs: 25 });
    // 2 of 5 sends met one: p = 0.4; 1 / (1 - 0.4) = 5/3 transactions a send, 2/3 of a retry, each 6 WCU:
    // 4 WCU more a send.
    expect(model.conflictRate).toBe(0.4);
    expect(model.retries).toEqual({
      conflictProbability: 0.4,
      transactionsPerSend: 1.667,
      retriesPerSend: 0.667,
      wcuPerTransaction: 6,
      extraWcuPerSend: 4,
    });
  });

  it('has no bound on retries when every send meets another', () => {
    const trace: TimedRequest[] = [
      // The first meets a transaction on the balance 1 ms before it, each next one the send before it.
      { at: -1, transactional: true, items: [write(SERVICE, 'SERVICE', 2)] },
      accepting(0, 0),
      accepting(1, 1),
      accepting(2, 2),
    ];
    const { retries } = analyseCapacity(trace, { rate: 3, seconds: 1, windowMs: 25 });
    expect(retries.conflictProbability).toBe(1);
    expect(retries.retriesPerSend).toBe(Infinity);
  });
});

describe('the results the issue asks for', () => {
  it('names the hottest spot, the ceiling and the conflict rate', () => {
    const result = model();
    expect(result.sendsPerSecond).toBe(3);
    // The service partition's 12 WCU in second 0 (1.2 % of 1,000) is above its balance item's 6 (0.6 %).
    expect(result.hottest).toEqual({
      item: 'SERVICE#<VA> (partition)',
      key: SERVICE,
      wcuPerSecond: 12,
      rcuPerSecond: 3,
      shareOfLimit: 0.012,
    });
    expect(result.ceilingSendsPerSecond).toBe(125);
    // Of the 4 sends only the one at 10 ms met the one at 0 ms.
    expect(result.conflictRate).toBe(0.25);
  });

  it('judges the capacity targets on the hottest share and the ceiling', () => {
    const at = (rate: number, share: number, ceiling: number) =>
      capacityTargets({
        rate,
        hottest: {
          item: 'SERVICE#<VA>/SERVICE (item)',
          key: '',
          wcuPerSecond: 0,
          rcuPerSecond: 0,
          shareOfLimit: share,
        },
        ceilingSendsPerSecond: ceiling,
        ceiling: undefined,
      } as unknown as CapacityResults).map((target) => target.met);
    expect(at(1000, 0.5, 1000)).toEqual([true, true]);
    expect(at(1000, 0.51, 980)).toEqual([false, false]);
    // Below the target rate the share says nothing of 1,000 sends/s.
    expect(at(500, 0.2, 1250)).toEqual([false, true]);
  });
});
