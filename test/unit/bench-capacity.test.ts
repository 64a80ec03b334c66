/**
 * The capacity model's arithmetic (bench/capacity-model.ts) over a hand-made trace: per-second peaks on items,
 * partitions and a ledger's write tail, the rate at half the limit, and the conflicts of a transaction window.
 */
import {
  analyseCapacity,
  itemFamily,
  markAppends,
  partitionFamily,
  type ModelAccess,
  type TimedRequest,
} from '../../bench/capacity-model';

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
