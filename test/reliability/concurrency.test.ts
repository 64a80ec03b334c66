/**
 * Concurrency: real parallel HTTP requests against DynamoDB Local. Idempotency, the balance and
 * the per-number limits hold exactly under races; attempts are never overspent. (20 simultaneous checks of
 * the right code, and 20 wrong ones, are in test/integration/check.test.ts.) After each harness, every service
 * the tests opened passes `balance audit` (core and admin command): balance = credits − charges.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { verificationFromItem } from '../../functions/adapters/dynamodb/items';
import { UNITS_PER_USD } from '../../functions/core/money';
import { settledStatus } from '../../functions/core/verification';
import { adminJson } from '../support/admin-cli';
import { Books, ledgerOf } from '../support/books';
import { eventually, startHarness, type ApiClient, type ApiResponse, type Harness } from '../support/harness';

const PRICE_US = 500;
let harness: Harness;
let books: Books;

beforeAll(async () => {
  harness = await startHarness({ settings: { keyRequestsPerMinute: 100_000 } });
  books = new Books(harness);
});
afterAll(async () => {
  await harness.stack.workflow.idle();
  expect(await books.audit()).toEqual([]);
  await expectBalancesProven(harness, books);
  await harness.close();
});

/** Every service of the book passes the core's `balanceAudit` and `npm run admin -- balance audit VA…`. */
async function expectBalancesProven(on: Harness, book: Books): Promise<void> {
  expect(book.serviceSids.length).toBeGreaterThan(0);
  expect(await book.proveBalances()).toEqual([]);
  for (const sid of book.serviceSids) {
    const audit = await adminJson(['balance', 'audit', sid], on);
    expect({ sid, audit }).toMatchObject({ sid, audit: { proven: true, difference: '0.0000' } });
  }
}

let counter = 0;
const freshUsNumber = () => `+1415555${String(4000 + ++counter).padStart(4, '0')}`;
const statuses = (responses: ApiResponse[]) => responses.map((response) => response.status);
const count = <T>(values: T[], value: T) => values.filter((v) => v === value).length;
const times = <T>(n: number, make: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => make(i)));

async function waitForCode(api: ApiClient, to: string): Promise<string> {
  await eventually(async () => ((await api.messages(to)).length > 0 ? true : undefined), 10_000, 20);
  return api.latestCode(to);
}

it('50 simultaneous sends with one Idempotency-Key: all 201 with one sid, one verification, one charge', async () => {
  const account = await books.open();
  const api = harness.client(account);
  // Each to another number (the key replays even if To differs: docs/api.md), so that no per-number
  // write orders them: only the idempotency item can.
  const numbers = Array.from({ length: 50 }, () => freshUsNumber());
  const headers = { 'idempotency-key': `same-${Math.random()}` };
  const responses = await Promise.all(numbers.map((to) => api.send({ To: to }, { headers })));

  expect(statuses(responses)).toEqual(Array(50).fill(201));
  const sids = new Set(responses.map((response) => response.body.sid));
  expect(sids.size).toBe(1);
  const to = responses[0]!.body.to as string;
  expect(responses.every((response) => response.body.to === to)).toBe(true);
  // Exactly one of them was the accepted send; the rest replayed it.
  expect(responses.filter((response) => response.headers.get('idempotent-replayed') === 'true')).toHaveLength(
    49,
  );

  const { verifications, charges } = ledgerOf(await harness.scanTable(), account.serviceSid);
  expect(verifications.map((item) => item.sid)).toEqual([...sids]);
  expect(charges.map((line) => line.verification_sid)).toEqual([...sids]);
  expect((await harness.accounts.getService(account.serviceSid))!.balance).toBe(
    100 * UNITS_PER_USD - PRICE_US,
  );
  await waitForCode(api, to);
  await harness.stack.workflow.idle();
  // One message, to the accepted send's number; none to the 49 others.
  const carried = numbers.flatMap((number) => harness.stack.carrier.messagesTo(number));
  expect(carried.map((message) => message.to)).toEqual([to]);
});

it('a balance for exactly N sends, 3N simultaneous sends: exactly N accepted, balance exactly 0', async () => {
  const N = 10;
  const account = await books.open((N * PRICE_US) / UNITS_PER_USD);
  const api = harness.client(account);
  const responses = await times(3 * N, () => api.send({ To: freshUsNumber() }));

  await books.expectSpentExactly(account, responses, N, PRICE_US);
});

it('top-ups in the middle: 3K sends racing T top-ups on a balance for K: at most K+T accepted, none lost', async () => {
  const K = 6;
  const T = 4;
  const account = await books.open((K * PRICE_US) / UNITS_PER_USD);
  const api = harness.client(account);
  // Interleaved: a top-up after every few sends, all in flight together.
  const work = Array.from({ length: 3 * K + T }, (_, i) =>
    i % 5 === 4 ? books.topUp(account, PRICE_US).then(() => undefined) : api.send({ To: freshUsNumber() }),
  );
  const responses = (await Promise.all(work)).filter((r): r is ApiResponse => r !== undefined);

  await books.expectTopUpsKept(account, responses, { worth: K, topUps: T, price: PRICE_US });
});

it('simultaneous right and wrong checks: at most one 200, never more than 5 attempts, never negative', async () => {
  const api = harness.client(await books.open());
  const sent = await times(5, async () => {
    const to = freshUsNumber();
    const response = await api.send({ To: to });
    return { sid: response.body.sid as string, code: await waitForCode(api, to) };
  });
  const wrong = (code: string) => (code === '000000' ? '111111' : '000000');
  // 15 wrong and 5 right checks per verification, interleaved, all 100 at once.
  const plan = sent.flatMap(({ sid, code }) =>
    Array.from({ length: 20 }, (_, i) => ({ sid, code: i % 4 === 3 ? code : wrong(code) })),
  );
  const responses = await Promise.all(
    plan.map(({ sid, code }) => api.check({ VerificationSid: sid, Code: code })),
  );
  expect(responses.every((r) => [200, 409, 422].includes(r.status))).toBe(true);
  expect(responses.every((r) => (r.body.attempts_remaining as number) >= 0)).toBe(true);

  const items = await harness.scanTable();
  for (const { sid } of sent) {
    const mine = responses.filter((_, i) => plan[i]!.sid === sid);
    const ok = count(statuses(mine), 200);
    const wrongCodes = count(statuses(mine), 422);
    expect(ok).toBeLessThanOrEqual(1);
    expect(ok + wrongCodes).toBeLessThanOrEqual(5);
    const item = items.find((entry) => entry.sid === sid)!;
    expect(item.attempts_remaining).toBeGreaterThanOrEqual(0);
    // Every attempt spent was answered 200 or 422, except the one that locked (409 LOCKED).
    const status = settledStatus(verificationFromItem(item));
    const locked = status === 'LOCKED' ? 1 : 0;
    expect(item.attempts_remaining).toBe(5 - ok - wrongCodes - locked);
    expect(status).toBe(ok === 1 ? 'VERIFIED' : 'LOCKED');
  }
  // And nowhere in the table is an attempt count out of range.
  for (const item of items.filter((entry) => entry.type === 'verification')) {
    expect(item.attempts_remaining).toBeGreaterThanOrEqual(0);
    expect(item.attempts_remaining).toBeLessThanOrEqual(5);
  }
});

/**
 * Counts the guesses that were compared with the code, whatever the answers say. A guess reaches DynamoDB as a
 * hashed value in a request's expression values. It is compared when the request's condition holds it (DynamoDB
 * compares it whether or not the write then succeeds), or when a successful write stored it (whoever reads the
 * item compares it). A refused write whose condition does not hold it compares nothing.
 */
class GuessComparisons {
  private readonly guesses = new Map<string, string>();
  compared: string[] = [];

  watch(hash: string, label: string): void {
    this.guesses.set(hash, label);
  }

  readonly install = (client: DynamoDBDocumentClient): void => {
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as {
          ConditionExpression?: string;
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        const carried = Object.entries(input.ExpressionAttributeValues ?? {}).filter(
          ([, value]) => typeof value === 'string' && this.guesses.has(value),
        );
        const inCondition = carried.filter(([name]) =>
          new RegExp(`${name}(?![A-Za-z0-9_])`).test(input.ConditionExpression ?? ''),
        );
        const record = (entries: [string, unknown][]) =>
          entries.forEach(([, value]) => this.compared.push(this.guesses.get(value as string)!));
        record(inCondition);
        const result = await next(args);
        // Stored by a write that succeeded: compared by every later read of the item.
        record(carried.filter((entry) => !inCondition.includes(entry)));
        return result;
      },
      { step: 'initialize', priority: 'high', name: 'guessComparisons' },
    );
  };
}

describe('guesses compared per code (spend first, compare second)', () => {
  const comparisons = new GuessComparisons();
  let guarded: Harness;
  let guardedBooks: Books;
  let vault: CryptoCodeVault;

  beforeAll(async () => {
    guarded = await startHarness({
      settings: { keyRequestsPerMinute: 100_000 },
      decorateDynamoClient: comparisons.install,
    });
    guardedBooks = new Books(guarded);
    vault = new CryptoCodeVault(guarded.masterKey);
  });
  afterAll(async () => {
    await guarded.stack.workflow.idle();
    expect(await guardedBooks.audit()).toEqual([]);
    await expectBalancesProven(guarded, guardedBooks);
    await guarded.close();
  });

  async function sendOne(api: ApiClient) {
    const to = freshUsNumber();
    const response = await api.send({ To: to });
    expect(response.status).toBe(201);
    return { sid: response.body.sid as string, code: await waitForCode(api, to) };
  }

  /** Distinct wrong 6-digit codes, none equal to `code`. */
  const wrongCodes = (code: string, n: number) =>
    Array.from({ length: n + 1 }, (_, i) => String(100000 + i * 7919))
      .filter((c) => c !== code)
      .slice(0, n);

  it.each([1, 2, 3])(
    'trial %i: 40 wrong checks and then the right one, all in flight: at most 5 compared, the right one only if it got an attempt',
    async () => {
      const api = guarded.client(await guardedBooks.open());
      const { sid, code } = await sendOne(api);
      const guesses = [...wrongCodes(code, 40), code];
      guesses.forEach((guess) => comparisons.watch(vault.hash(sid, guess), guess));
      comparisons.compared = [];

      const responses = await Promise.all(
        guesses.map((guess) => api.check({ VerificationSid: sid, Code: guess })),
      );

      expect(comparisons.compared.length).toBeLessThanOrEqual(5);
      // Each compared guess holds one spent attempt, and was answered 200, 422 or the locking 409.
      const fetched = await api.fetch(sid);
      expect(comparisons.compared).toHaveLength(5 - (fetched.body.attempts_remaining as number));
      expect(responses.filter((r) => r.status === 200 || r.status === 422).length).toBeLessThanOrEqual(5);
      const right = responses[responses.length - 1]!;
      expect(right.status === 200).toBe(comparisons.compared.includes(code));
      expect(fetched.body.status).toBe(right.status === 200 ? 'VERIFIED' : 'LOCKED');
    },
  );

  it('60 wrong checks in flight: exactly 5 compared and spent, then LOCKED', async () => {
    const api = guarded.client(await guardedBooks.open());
    const { sid, code } = await sendOne(api);
    const guesses = wrongCodes(code, 60);
    guesses.forEach((guess) => comparisons.watch(vault.hash(sid, guess), guess));
    comparisons.compared = [];

    const responses = await Promise.all(
      guesses.map((guess) => api.check({ VerificationSid: sid, Code: guess })),
    );

    expect(comparisons.compared).toHaveLength(5);
    expect(responses.filter((r) => r.status === 422)).toHaveLength(4);
    expect(responses.filter((r) => r.status === 409).every((r) => r.body.status === 'LOCKED')).toBe(true);
    const fetched = await api.fetch(sid);
    expect(fetched.body).toMatchObject({ status: 'LOCKED', attempts_remaining: 0 });
    // The right code after the lock is not compared either.
    comparisons.watch(vault.hash(sid, code), code);
    expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(409);
    expect(comparisons.compared).not.toContain(code);
  });
});

describe('per-number limits across services', () => {
  it('burst: 12 simultaneous sends to one number from 3 services: exactly 3 accepted, all 12 counted', async () => {
    const to = freshUsNumber();
    const clients = await times(3, async () => harness.client(await books.open()));
    const responses = await times(12, (i) => clients[i % 3]!.send({ To: to }));
    const codes = statuses(responses);
    expect(count(codes, 201)).toBe(3);
    expect(responses.filter((r) => r.status !== 201).map((r) => [r.status, r.body.code])).toEqual(
      Array(9).fill([429, 'burst']),
    );
    const items = await harness.scanTable();
    const charged = items.filter((item) => item.type === 'charge' && item.to === undefined);
    const mine = charged.filter((line) =>
      responses.some((r) => r.status === 201 && r.body.sid === line.verification_sid),
    );
    expect(mine).toHaveLength(3);
    // Refused sends count too; the log keeps the last 10 (enough for both windows).
    const number = items.find((item) => item.pk === `NUMBER#${to}`)!;
    expect(number.sends).toHaveLength(10);
    expect(number.version).toBe(12);
  });

  it('hourly: 15 simultaneous sends to one number from 3 services, no burst limit: exactly 10 accepted', async () => {
    const hourly = await startHarness({
      settings: { keyRequestsPerMinute: 100_000, burstLimit: 100 },
    });
    try {
      const to = freshUsNumber();
      const hourlyBooks = new Books(hourly);
      const clients = await times(3, async () => hourly.client(await hourlyBooks.open()));
      const responses = await times(15, (i) => clients[i % 3]!.send({ To: to }));
      expect(count(statuses(responses), 201)).toBe(10);
      expect(responses.filter((r) => r.status !== 201).map((r) => [r.status, r.body.code])).toEqual(
        Array(5).fill([429, 'rate_limited']),
      );
      await hourly.stack.workflow.idle();
      expect(await hourlyBooks.audit()).toEqual([]);
      await expectBalancesProven(hourly, hourlyBooks);
      const charges = (await hourly.scanTable()).filter((item) => item.type === 'charge');
      expect(charges).toHaveLength(10);
    } finally {
      await hourly.close();
    }
  });
});
