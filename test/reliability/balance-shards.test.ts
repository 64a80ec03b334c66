/**
 * A balance spread over shards (docs/adr/0014-sharded-balance.md) keeps every money guarantee: exactly the sends
 * the whole balance pays are accepted, whichever shard each draws on, with `TransactionConflict` and throttling
 * injected on the shard items, which DynamoDB Local never produces on its own.
 */
import { OtpError } from '../../functions/core/errors';
import { booksUnderFaults, ledgerOf, type Books } from '../support/books';
import { DynamoFaults, type DynamoCall } from '../support/faults';
import { BY_TEST, type Account, type ApiResponse, type Harness } from '../support/harness';

const PRICE_US = 500;
const faults = new DynamoFaults();
// Whatever happens below, every service's shards and ledgers add up, in the scan and in the core's proof.
const setting = booksUnderFaults(faults);
let harness: Harness;
let books: Books;
beforeAll(() => ({ harness, books } = setting));

let counter = 0;
const freshUsNumber = () => `+1415555${String(6000 + ++counter).padStart(4, '0')}`;
const times = <T>(n: number, make: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => make(i)));

const spread = (account: Account, shards: number) =>
  harness.accounts.spreadBalance(BY_TEST, account.serviceSid, String(shards));

/** Each shard's balance, in shard order, from a scan (shard 0 is the service item). */
async function shardBalances(account: Account): Promise<number[]> {
  const items = await harness.scanTable();
  const service = items.find((item) => item.pk === `SERVICE#${account.serviceSid}` && item.sk === 'SERVICE')!;
  const shards = items
    .filter((item) => item.type === 'balance_shard' && item.service_sid === account.serviceSid)
    .sort((a, b) => (a.shard as number) - (b.shard as number));
  return [service, ...shards].map((item) => item.balance as number);
}

/** A balance item: the service item (shard 0) or a shard's own. */
const isBalanceItem = (_pk: string, sk: string) => sk === 'SERVICE' || sk === 'BALANCE';
const onSendPath = (call: DynamoCall) => !call.pks.every((pk) => pk.startsWith('VERIFICATION#'));

describe('spreading a balance', () => {
  it('moves the whole balance evenly in one audited write, grows but never shrinks, at most 64', async () => {
    const account = await books.open(10.0003);
    const service = await spread(account, 4);
    expect(service).toMatchObject({ balance: 100_003, balanceShards: 4 });
    expect(await shardBalances(account)).toEqual([25_001, 25_001, 25_001, 25_000]);
    const [latest] = await harness.accounts.auditTrail(account.serviceSid, 1);
    expect(latest).toMatchObject({ action: 'balance.shards', before: { shards: 1 }, after: { shards: 4 } });

    await expect(spread(account, 2)).rejects.toThrow(OtpError);
    await expect(spread(account, 65)).rejects.toThrow(/1 to 64/);
    expect((await spread(account, 6)).balance).toBe(100_003);
    expect(await shardBalances(account)).toEqual([16_668, 16_667, 16_667, 16_667, 16_667, 16_667]);
  });

  it('a top-up is spread over the four poorest shards, with one credit line', async () => {
    const account = await books.open(0);
    await spread(account, 4);
    expect(await books.topUp(account, 1_003)).toBe(1_003);
    expect(await shardBalances(account)).toEqual([251, 251, 251, 250]);
    // Over 8 shards, the next goes to the four that hold least (the new, empty ones), not to all eight.
    await spread(account, 8);
    expect(await shardBalances(account)).toEqual([126, 126, 126, 125, 125, 125, 125, 125]);
    expect(await books.topUp(account, 400)).toBe(1_403);
    expect(await shardBalances(account)).toEqual([126, 126, 126, 225, 225, 225, 225, 125]);
    expect(await harness.accounts.balanceAudit(account.serviceSid)).toMatchObject({
      difference: 0,
      creditLines: 2,
    });
  });
});

describe('sends on a spread balance', () => {
  it("draws on one shard: three calls when nothing conflicts; the charge line in that shard's ledger", async () => {
    const account = await books.open(100);
    await spread(account, 8);
    const api = harness.client(account);
    faults.reset();
    const response = await api.send({ To: freshUsNumber() });
    expect(response.status).toBe(201);
    const path = faults.calls.filter(onSendPath);
    expect(path.map((call) => call.operation)).toEqual(['UpdateItem', 'BatchGetItem', 'TransactWriteItems']);
    // The transaction's balance item, and the charge line in the same partition.
    const transaction = path[2]!;
    const drawn = transaction.pks.filter((_, i) => isBalanceItem('', transaction.sks[i]!));
    expect(drawn).toHaveLength(1);
    const { charges } = ledgerOf(await harness.scanTable(), account.serviceSid);
    expect(charges.map((line) => line.pk)).toEqual(drawn);
    expect((await harness.accounts.getService(account.serviceSid))!.balance).toBe(1_000_000 - PRICE_US);

    // Sends spread over the shards: 40 more land in several ledgers.
    await times(40, () => api.send({ To: freshUsNumber() }));
    const ledgers = new Set(ledgerOf(await harness.scanTable(), account.serviceSid).charges.map((l) => l.pk));
    expect(ledgers.size).toBeGreaterThanOrEqual(4);
  });

  it('a send no one shard can pay is paid from several; refused only when the whole cannot pay', async () => {
    const account = await books.open(PRICE_US / 10_000);
    await spread(account, 4);
    expect(await shardBalances(account)).toEqual([125, 125, 125, 125]);
    const api = harness.client(account);

    const paid = await api.send({ To: freshUsNumber() });
    expect(paid.status).toBe(201);
    const [line] = ledgerOf(await harness.scanTable(), account.serviceSid).charges;
    expect(line).toMatchObject({ amount: PRICE_US, draws: { 0: 125, 1: 125, 2: 125, 3: 125 } });
    expect(await shardBalances(account)).toEqual([0, 0, 0, 0]);

    const refused = await api.send({ To: freshUsNumber() });
    expect(refused.status).toBe(402);
    expect(refused.body.code).toBe('insufficient_funds');
    expect(ledgerOf(await harness.scanTable(), account.serviceSid).charges).toHaveLength(1);
  });

  it('a TransactionConflict on the shard alone: decided again at once, one more transaction, no read', async () => {
    const account = await books.open(100);
    await spread(account, 8);
    const api = harness.client(account);
    faults.reset();
    const conflict = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'conflict',
      conflictOn: isBalanceItem,
    });
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);
    expect(conflict.fired).toBe(1);
    expect(faults.calls.filter(onSendPath).map((call) => call.operation)).toEqual([
      'UpdateItem',
      'BatchGetItem',
      'TransactWriteItems',
      'TransactWriteItems',
    ]);
    expect(ledgerOf(await harness.scanTable(), account.serviceSid).charges).toHaveLength(1);
  });
});

describe('money stays exact with conflicts and throttling on the shard items', () => {
  /** Conflicts on a share of the accepting transactions, and lost answers of applied ones (the SDK resends). */
  function injectContention() {
    let draw = 0;
    // A fixed pattern rather than Math.random: the same calls fail on every run.
    const every = (n: number, offset: number) => () => ++draw % n === offset;
    const conflicts = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'conflict',
      conflictOn: isBalanceItem,
      where: every(3, 0),
      times: 1_000,
    });
    const throttled = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'throttling',
      layer: 'attempt',
      timing: 'after',
      where: every(5, 1),
      times: 1_000,
    });
    return { conflicts, throttled };
  }

  it('a balance for exactly N sends over 4 shards, 3N simultaneous sends: exactly N accepted, balance 0', async () => {
    const N = 12;
    const account = await books.open((N * PRICE_US) / 10_000);
    await spread(account, 4);
    const api = harness.client(account);
    const { conflicts, throttled } = injectContention();
    const responses = await times(3 * N, () => api.send({ To: freshUsNumber() }));

    expect(conflicts.fired).toBeGreaterThan(0);
    expect(throttled.fired).toBeGreaterThan(0);
    await books.expectSpentExactly(account, responses, N, PRICE_US);
  });

  it('top-ups in the middle: 3K sends racing T top-ups on a balance for K, over 4 shards', async () => {
    const K = 8;
    const T = 4;
    const account = await books.open((K * PRICE_US) / 10_000);
    await spread(account, 4);
    const api = harness.client(account);
    const { conflicts } = injectContention();
    const work = Array.from({ length: 3 * K + T }, (_, i) =>
      i % 7 === 6 ? books.topUp(account, PRICE_US).then(() => undefined) : api.send({ To: freshUsNumber() }),
    );
    const responses = (await Promise.all(work)).filter((r): r is ApiResponse => r !== undefined);

    expect(conflicts.fired).toBeGreaterThan(0);
    await books.expectTopUpsKept(account, responses, { worth: K, topUps: T, price: PRICE_US });
  });
});
