/**
 * Faults: DynamoDB errors and throttling on every call of the send path, lost answers, stale
 * reads, Step Functions start failures and provider errors and time-outs. A send answers 5xx or succeeds,
 * never half done; an error is never charged; an accepted send is always delivered.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { hashApiKey } from '../../functions/adapters/crypto';
import { DynamoApiKeyStore } from '../../functions/adapters/dynamodb/api-key-requests';
import { DynamoDeliveryStore } from '../../functions/adapters/dynamodb/delivery';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { Books, ledgerOf } from '../support/books';
import {
  DynamoFaults,
  FlakyWorkflow,
  type DynamoCall,
  type FaultKind,
  type FaultRule,
  type FaultTiming,
} from '../support/faults';
import {
  BY_TEST,
  dynamoEndpoint,
  eventually,
  startHarness,
  type Account,
  type ApiClient,
  type Harness,
} from '../support/harness';

const PRICE_US = 500;
let harness: Harness;
let books: Books;
let flaky: FlakyWorkflow;
const faults = new DynamoFaults();

beforeAll(async () => {
  harness = await startHarness({
    settings: { keyRequestsPerMinute: 100_000 },
    decorateDynamoClient: faults.install,
    wrapWorkflow: (workflow) => (flaky = new FlakyWorkflow(workflow)),
  });
  books = new Books(harness);
});
afterEach(() => {
  faults.reset();
  flaky.reset();
  harness.stack.carrier.clearRules();
});
afterAll(async () => {
  // Whatever happened above, the money adds up across the whole table.
  await harness.stack.workflow.idle();
  expect(await books.audit()).toEqual([]);
  await harness.close();
});

let counter = 0;
const freshUsNumber = () => `+1415555${String(3000 + ++counter).padStart(4, '0')}`;
/** UK mobiles reach all five channels: sna, viber, whatsapp, rcs, sms (cheapest first). */
const freshUkMobile = () => `+447400${String(1_200_000 + ++counter).slice(1)}`;
const idempotencyKey = () => ({ 'idempotency-key': `key-${++counter}-${Math.random()}` });

/** The send path's own calls; delivery tasks running in the background touch only verification items. */
const onSendPath = (call: DynamoCall) => !call.pks.every((pk) => pk.startsWith('VERIFICATION#'));

async function ledger(account: Account) {
  return ledgerOf(await harness.scanTable(), account.serviceSid);
}

async function balance(account: Account): Promise<number> {
  return (await harness.accounts.getService(account.serviceSid))!.balance;
}

const isServerError = (status: number) => status >= 500 && status <= 599;

/** One UpdateItem applied and its answer lost: the SDK sends the same request again. */
const loseOneUpdateAnswer = (rule: Pick<FaultRule, 'pkPrefix' | 'where'>) =>
  faults.inject({ operation: 'UpdateItem', kind: 'internal', timing: 'after', layer: 'attempt', ...rule });

/** A client with the faults, beside the harness's own: for the adapters and cores a test calls itself. */
function faultedClient() {
  const client = createDocumentClient({ endpoint: dynamoEndpoint() });
  faults.install(client);
  return client;
}

describe('DynamoDB faults on the send path', () => {
  it('the send path is three calls: the key (auth and counter), one batch read, one transaction', async () => {
    const api = harness.client(await books.open());
    faults.reset();
    expect((await api.send({ To: freshUsNumber() }, { headers: idempotencyKey() })).status).toBe(201);
    expect(
      faults.calls.filter(onSendPath).map((call) => `${call.operation} ${call.pks[0]!.split('#')[0]}`),
    ).toEqual(['UpdateItem APIKEY', 'BatchGetItem SERVICE', 'TransactWriteItems SERVICE']);
  });

  const calls = ['UpdateItem', 'BatchGetItem', 'TransactWriteItems'];
  const kinds: FaultKind[] = ['throttling', 'provisioned', 'internal'];
  const timings: FaultTiming[] = ['before', 'after'];
  const cases = calls.flatMap((operation, index) =>
    timings.flatMap((timing) => kinds.map((kind) => [operation, timing, kind, index] as const)),
  );

  it.each(cases)(
    '%s fails %s it is applied (%s): 5xx and no charge, or 201; the retry with the key charges once',
    async (operation, timing, kind, index) => {
      const account = await books.open(1);
      const api = harness.client(account);
      const headers = idempotencyKey();
      const to = freshUsNumber();
      const injected = faults.inject({ where: onSendPath, skip: index, kind, timing });

      const first = await api.send({ To: to }, { headers });
      expect(injected.fired).toBe(1);
      expect(injected.calls[0]!.operation).toBe(operation);
      const afterFirst = await ledger(account);
      if (first.status === 201) {
        expect(afterFirst.charges).toHaveLength(1);
        expect(afterFirst.verifications.map((item) => item.sid)).toEqual([first.body.sid]);
      } else {
        // Billing rule 2: an error response is never charged, whatever DynamoDB did.
        expect(isServerError(first.status)).toBe(true);
        expect(first.body.code).toEqual(expect.any(String));
        expect(afterFirst).toEqual({ verifications: [], charges: [] });
      }

      const retry = await api.send({ To: to }, { headers });
      expect(retry.status).toBe(201);
      if (first.status === 201) expect(retry.body.sid).toBe(first.body.sid);
      const final = await ledger(account);
      expect(final.charges).toHaveLength(1);
      expect(final.verifications.map((item) => item.sid)).toEqual([retry.body.sid]);
      expect(await balance(account)).toBe(10_000 - PRICE_US);
    },
  );

  it.each(timings)(
    'a lost answer (%s) of the accepting transaction without an Idempotency-Key: 201, or 5xx and no charge',
    async (timing) => {
      const account = await books.open(1);
      const api = harness.client(account);
      faults.inject({ operation: 'TransactWriteItems', kind: 'internal', timing });
      const response = await api.send({ To: freshUsNumber() });
      const { charges } = await ledger(account);
      if (response.status === 201)
        expect(charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
      else {
        expect(isServerError(response.status)).toBe(true);
        expect(charges).toEqual([]);
      }
    },
  );

  it.each(timings)(
    'TransactionInProgressException (%s it is applied) on the accepting transaction: resent with its token, 201, one charge',
    async (timing) => {
      const account = await books.open(1);
      const api = harness.client(account);
      const injected = faults.inject({ operation: 'TransactWriteItems', kind: 'in-progress', timing });
      const response = await api.send({ To: freshUsNumber() });
      expect(injected.fired).toBe(1);
      expect(response.status).toBe(201);
      const { charges } = await ledger(account);
      expect(charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
      expect(await balance(account)).toBe(10_000 - PRICE_US);
    },
  );

  /** How long the key's write is held in the two tests below. */
  const HELD_MS = 1000;
  /**
   * Holds the next write of an API key item HELD_MS before it is sent. `madeBeforeItsEnd(at)`: a call made at `at`
   * went out while the write was held. Made one after the other, the call would come after the held write had
   * ended, HELD_MS after it was made or later; side by side, at about the same moment. Timed from the write itself,
   * not from the request: how long a loaded machine takes to reach the write does not count.
   */
  function holdKeyWrite() {
    let heldAt = Number.NaN;
    faults.inject({
      operation: 'UpdateItem',
      pkPrefix: 'APIKEY#',
      kind: 'slow',
      delayMs: HELD_MS,
      where: () => {
        heldAt = Date.now();
        return true;
      },
    });
    return {
      madeBeforeItsEnd(at: number) {
        expect(heldAt).not.toBeNaN();
        expect(at).not.toBeNaN();
        expect(at - heldAt).toBeLessThan(HELD_MS);
      },
    };
  }

  it("the key's write and the batch read run side by side: with the key's write held 1 s, the read starts at once", async () => {
    const api = harness.client(await books.open());
    const started = Date.now();
    const held = holdKeyWrite();
    let batchReadAt = Number.NaN;
    // Never fails a call: only notes when the batch read was made.
    faults.inject({
      where: (call) => {
        if (call.operation === 'BatchGetItem') batchReadAt = Date.now();
        return false;
      },
    });
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);
    held.madeBeforeItsEnd(batchReadAt);
    expect(Date.now() - started).toBeGreaterThanOrEqual(HELD_MS);
  });

  it("a fetch's read runs beside its key's write, and the key still decides the answer", async () => {
    const [mine, other] = [await books.open(), await books.open()];
    const api = harness.client(mine);
    const sent = await api.send({ To: freshUsNumber() });
    expect(sent.status).toBe(201);
    const sid = String(sent.body.sid);
    // The delivery's own reads of the verification are over before the fetch is timed.
    await harness.stack.workflow.idle();
    const started = Date.now();
    const held = holdKeyWrite();
    let readAt = Number.NaN;
    faults.inject({
      where: (call) => {
        if (call.operation === 'GetItem' && Number.isNaN(readAt)) readAt = Date.now();
        return false;
      },
    });
    const fetched = await api.fetch(sid);
    expect(fetched).toMatchObject({ status: 200, body: { sid } });
    held.madeBeforeItsEnd(readAt);
    expect(Date.now() - started).toBeGreaterThanOrEqual(HELD_MS);
    // Another service's key read the item beside its write, but is answered 403 with nothing of it.
    faults.reset();
    const forbidden = await api.fetch(sid, { apiKey: other.apiKey });
    expect(forbidden).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    expect(JSON.stringify(forbidden.body)).not.toContain(sid);
    // An unknown key for a SID that does not exist: the auth error wins over the 404.
    const unknownKey = `${other.apiKey.slice(0, -4)}${other.apiKey.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const unknown = await api.fetch(`VE${'0'.repeat(32)}`, { apiKey: unknownKey });
    expect(unknown).toMatchObject({ status: 401, body: { code: 'unauthorized' } });
  });

  it('a key that fails writes nothing, though its send read beside it: 403, 401 before a 400, no charge, no count', async () => {
    const [mine, other] = [await books.open(), await books.open()];
    const to = freshUsNumber();
    const balanceBefore = await balance(mine);
    // Another service's key: the read ran, the key's write refused it; nothing is charged or counted.
    faults.reset();
    const forbidden = await harness.client(mine).send({ To: to }, { apiKey: other.apiKey });
    expect(forbidden).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    expect(faults.calls.map((call) => call.operation).sort()).toEqual(['BatchGetItem', 'UpdateItem']);
    expect(await ledger(mine)).toEqual({ verifications: [], charges: [] });
    expect((await harness.scanTable()).some((item) => item.pk === `NUMBER#${to}`)).toBe(false);
    // An unknown key (well formed, so it is looked up) with a bad parameter: the auth error wins.
    const unknownKey = `${other.apiKey.slice(0, -4)}${other.apiKey.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const unknown = await harness.client(mine).send({ To: '' }, { apiKey: unknownKey });
    expect(unknown).toMatchObject({ status: 401, body: { code: 'unauthorized' } });
    expect(await balance(mine)).toBe(balanceBefore);
  });

  it('the accepting transaction applied, then every answer lost: the charge stands, so the send answers 201', async () => {
    const account = await books.open(1);
    const api = harness.client(account);
    // The first send applies and loses its answer; both re-sends (same token) lose theirs too.
    const injected = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'internal',
      timing: 'after',
      times: 3,
    });
    const response = await api.send({ To: freshUsNumber() });
    expect(injected.fired).toBe(3);
    expect(response.status).toBe(201);
    const { charges, verifications } = await ledger(account);
    expect(charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
    expect(verifications.map((item) => item.sid)).toEqual([response.body.sid]);
  });

  it.each([
    ['a conflict on the balance', (_pk: string, sk: string) => sk === 'SERVICE'],
    ["a conflict on the number's log", (pk: string) => pk.startsWith('NUMBER#')],
  ])(
    'the accepting transaction applied, its answer lost, its resend cancelled by %s: the charge stands, 201, charged once',
    async (_, conflictOn) => {
      const account = await books.open(1);
      const api = harness.client(account);
      // A cancelled resend says nothing of the first send, which was applied: deciding again with a new SID
      // would charge twice (or, the balance spent, answer 402 for a charged send).
      const lost = faults.inject({ operation: 'TransactWriteItems', kind: 'internal', timing: 'after' });
      const conflict = faults.inject({ operation: 'TransactWriteItems', kind: 'conflict', conflictOn });
      const response = await api.send({ To: freshUsNumber() });
      expect([lost.fired, conflict.fired]).toEqual([1, 1]);
      expect(response.status).toBe(201);
      const { charges, verifications } = await ledger(account);
      expect(charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
      expect(verifications.map((item) => item.sid)).toEqual([response.body.sid]);
      expect(await balance(account)).toBe(10_000 - PRICE_US);
    },
  );

  it('the accepting transaction never applied and every answer lost: 5xx and no charge', async () => {
    const account = await books.open(1);
    const api = harness.client(account);
    const injected = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'internal',
      timing: 'before',
      times: 3,
    });
    const response = await api.send({ To: freshUsNumber() });
    expect(injected.fired).toBe(3);
    expect(isServerError(response.status)).toBe(true);
    expect(await ledger(account)).toEqual({ verifications: [], charges: [] });
    expect(await balance(account)).toBe(10_000);
  });

  // A refused send's calls: the key's write, the first read, the up-to-date read before the refusal, the refusal
  // counted against the number.
  it.each([0, 1, 2, 3].flatMap((index) => timings.map((timing) => [index, timing] as const)))(
    'refused send (402): a fault on call %i (%s it is applied) answers 5xx or 402, and charges nothing',
    async (index, timing) => {
      const account = await books.open(0);
      const api = harness.client(account);
      const injected = faults.inject({ where: onSendPath, skip: index, kind: 'internal', timing });
      const response = await api.send({ To: freshUsNumber() });
      expect(injected.fired).toBe(1);
      // The fourth call is the refusal counted against the number.
      if (index === 3) expect(injected.calls[0]!.pks).toEqual([expect.stringMatching(/^NUMBER#/)]);
      expect([402, 500, 503]).toContain(response.status);
      expect(response.body.code).toEqual(expect.any(String));
      expect(await ledger(account)).toEqual({ verifications: [], charges: [] });
      expect(await balance(account)).toBe(0);
    },
  );

  it("a refused send's record applied and its answer lost, re-sent by the SDK: 402, the refusal counted once", async () => {
    const api = harness.client(await books.open(0));
    const to = freshUsNumber();
    // Refused the second time (the number's version moved), the record was read as another send's: the send was
    // decided again and its refusal counted twice toward the number's limits.
    const lost = loseOneUpdateAnswer({ pkPrefix: 'NUMBER#' });
    const response = await api.send({ To: to });
    expect(lost.fired).toBe(1);
    expect(response).toMatchObject({ status: 402, body: { code: 'insufficient_funds' } });
    const number = (await harness.scanTable()).find((item) => item.pk === `NUMBER#${to}`)!;
    expect(number.sends).toHaveLength(1);
  });

  it.each(cases.filter(([, , kind]) => kind !== 'provisioned'))(
    'one failed attempt of %s (%s it is applied, %s) is retried by the SDK: 201, one charge, one send counted',
    async (_, timing, kind, index) => {
      const account = await books.open(1);
      const api = harness.client(account);
      const to = freshUsNumber();
      const injected = faults.inject({ where: onSendPath, skip: index, kind, timing, layer: 'attempt' });
      const response = await api.send({ To: to });
      expect(injected.fired).toBe(1);
      expect(response.status).toBe(201);
      const { charges } = await ledger(account);
      expect(charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
      // A transaction re-sent by the SDK after a lost answer carries the same ClientRequestToken: applied once.
      const number = (await harness.scanTable()).find((item) => item.pk === `NUMBER#${to}`)!;
      expect(number.sends).toHaveLength(1);
    },
  );

  it("the send's context read lags (eventually consistent, it sees none of the account): read again up to date, 201, charged once", async () => {
    const account = await books.open(1);
    const api = harness.client(account);
    faults.reset();
    const stale = faults.inject({ operation: 'BatchGetItem', pkPrefix: 'SERVICE#', kind: 'stale' });
    const response = await api.send({ To: freshUsNumber() });
    expect(response.status).toBe(201);
    expect(stale.fired).toBe(1);
    // The first read asked for no consistency and missed the service; the refusal it suggested was read again
    // with a consistent read before it could stand, and the send went through on that read.
    const reads = faults.calls.filter((call) => call.operation === 'BatchGetItem');
    expect(reads.map((call) => call.consistent)).toEqual([false, true]);
    expect((await ledger(account)).charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
  });

  it('a replay and a fetch right after the send see the verification, even where reads lag', async () => {
    const account = await books.open();
    const api = harness.client(account);
    const headers = idempotencyKey();
    const sent = await api.send({ To: freshUsNumber() }, { headers });
    expect(sent.status).toBe(201);
    // An eventually consistent read may not see the verification yet; the service must not depend on one.
    const stale = faults.inject({
      operation: 'GetItem',
      pkPrefix: 'VERIFICATION#',
      kind: 'stale',
      times: 100,
    });
    const replay = await api.send({ To: freshUsNumber() }, { headers });
    expect(replay.status).toBe(201);
    expect(replay.body.sid).toBe(sent.body.sid);
    const fetched = await api.fetch(sent.body.sid as string);
    expect(fetched.status).toBe(200);
    expect(stale.fired).toBe(0);
  });
});

describe('DynamoDB faults on the check path', () => {
  /** A send whose code is known, and the check's one write (an UpdateItem on the verification) to fail. */
  async function sentCode() {
    const api = harness.client(await books.open(1));
    const to = freshUsNumber();
    const sid = (await api.send({ To: to })).body.sid as string;
    const code = await eventually(() => api.latestCode(to).catch(() => undefined));
    const checkWrite = (call: DynamoCall) =>
      call.operation === 'UpdateItem' && call.pks[0] === `VERIFICATION#${sid}`;
    return { api, sid, code, checkWrite };
  }
  const otherCode = (code: string) => code.replace(/^./, (digit) => String((Number(digit) + 1) % 10));

  // The SDK sends a request again when an attempt's answer is lost: the check's write, applied, must not be
  // applied again (an attempt spent twice) nor read as an earlier check's (409 for the right code).
  it.each(['internal', 'throttling'] as const)(
    'the right code, its write applied and the answer lost (%s), retried by the SDK: 200 VERIFIED, one attempt spent',
    async (kind) => {
      const { api, sid, code, checkWrite } = await sentCode();
      const lost = faults.inject({ where: checkWrite, kind, timing: 'after', layer: 'attempt' });
      const check = await api.check({ VerificationSid: sid, Code: code });
      expect(lost.fired).toBe(1);
      expect(check.status).toBe(200);
      expect(check.body).toMatchObject({ sid, status: 'VERIFIED', attempts_remaining: 4 });
      // A second check is an earlier check's double: 409, as the spec says.
      expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(409);
    },
  );

  it('a wrong code, its write applied and the answer lost, retried by the SDK: 422, one attempt spent', async () => {
    const { api, sid, code, checkWrite } = await sentCode();
    const lost = faults.inject({ where: checkWrite, kind: 'internal', timing: 'after', layer: 'attempt' });
    const check = await api.check({ VerificationSid: sid, Code: otherCode(code) });
    expect(lost.fired).toBe(1);
    expect(check.status).toBe(422);
    expect(check.body).toMatchObject({ status: 'PENDING', attempts_remaining: 4 });
    expect((await api.fetch(sid)).body.attempts_remaining).toBe(4);
  });
});

describe("DynamoDB faults on an API key's write", () => {
  it('the per-key count applied and its answer lost, re-sent by the SDK: counted once, the request allowed', async () => {
    const account = await books.open(1);
    const keys = new DynamoApiKeyStore(faultedClient(), harness.tableName);
    const keyHash = hashApiKey(account.apiKey);
    const windowStart = new Date(Math.floor(harness.clock.now().getTime() / 60_000) * 60_000 + 600_000);
    const request = { keyHash, serviceSid: account.serviceSid, windowStart, limit: 2 };
    const lost = loseOneUpdateAnswer({ where: (call) => call.update?.includes('rate_counts') ?? false });
    // Applied twice, it counted the request twice; at the limit, the re-send was refused and the request
    // answered 429 though it had been counted.
    expect(await keys.countKeyRequest({ ...request, limit: 1 })).toMatchObject({ outcome: 'allowed' });
    expect(lost.fired).toBe(1);
    expect(await keys.countKeyRequest(request)).toMatchObject({ outcome: 'allowed' });
    expect(await keys.countKeyRequest(request)).toMatchObject({ outcome: 'limited' });
  });
});

describe('DynamoDB faults on a delivery receipt', () => {
  it("a receipt's write applied and its answer lost, re-sent by the SDK: applied (its metrics count it), then a duplicate", async () => {
    const api = harness.client(await books.open());
    const to = freshUkMobile();
    // The first channel is sent and never reports: the verification waits for a receipt.
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent' } });
    const sid = (await api.send({ To: to })).body.sid as string;
    const deliveries = new DynamoDeliveryStore(faultedClient(), harness.tableName);
    // The receipt's write (it alone sets the channel with the status); refused the second time, it was read as
    // another receipt's, and the delivery went uncounted.
    const lost = loseOneUpdateAnswer({
      where: (call) =>
        call.pks[0] === `VERIFICATION#${sid}` && (call.update?.includes(':set_channel') ?? false),
    });
    expect(await deliveries.markDelivered(sid, 'sna', harness.clock.now())).toBe(true);
    expect(lost.fired).toBe(1);
    expect((await api.fetch(sid)).body).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sna' });
    // A receipt again (the provider's retry) is a duplicate.
    expect(await deliveries.markDelivered(sid, 'sna', harness.clock.now())).toBe(false);
    await harness.stack.workflow.idle();
  });
});

describe('DynamoDB faults on a top-up', () => {
  /** The accounts core (console, admin command) on a client with the faults, beside the harness's own. */
  const faultedAccounts = () =>
    dynamoAccounts(faultedClient(), harness.tableName, { apiKeyTag: harness.masterKey });
  /** The top-up's transaction and both its re-sends (same token) fail, `after` or `before` they are applied. */
  const loseEveryAnswer = (timing: FaultTiming) =>
    faults.inject({ operation: 'TransactWriteItems', kind: 'internal', timing, times: 3 });
  const creditLines = async (account: Account) =>
    (await harness.scanTable()).filter(
      (item) => item.type === 'credit' && item.pk === `SERVICE#${account.serviceSid}`,
    );

  it.each([1, 4])(
    'its transaction applied and every answer lost (%i shards): the top-up stands, the balance answered, one credit line',
    async (shards) => {
      const account = await books.open(1);
      if (shards > 1) await harness.accounts.spreadBalance(BY_TEST, account.serviceSid, String(shards));
      const accounts = faultedAccounts();
      // An error would have the operator top up again, and the money credited twice.
      const lost = loseEveryAnswer('after');
      const topUp = await accounts.topUp(BY_TEST, account.serviceSid, 5_000);
      expect(lost.fired).toBe(3);
      expect(topUp).toEqual({ balance: 15_000, alreadyCredited: false });
      expect(await creditLines(account)).toHaveLength(2);
      // For the afterAll audit: the money went in once.
      books.paid(account, 5_000);
    },
  );

  it("applied, then DynamoDB answers nothing (the settling read neither): an error; the operator's retry with its key credits nothing more", async () => {
    const account = await books.open(1);
    const accounts = faultedAccounts();
    const lost = loseEveryAnswer('after');
    // The read that would settle it (the credit line's) fails as well: nothing can tell the top-up stands.
    const unread = faults.inject({
      operation: 'GetItem',
      where: (call) => call.sks.some((sk) => sk.startsWith('CREDIT#')),
      kind: 'internal',
    });
    await expect(accounts.topUp(BY_TEST, account.serviceSid, 5_000, 'invoice-2041')).rejects.toThrow();
    expect([lost.fired, unread.fired]).toEqual([3, 1]);
    // It was credited: the retry (same key, same amount) answers the balance, credits nothing and says so.
    expect(await accounts.topUp(BY_TEST, account.serviceSid, 5_000, 'invoice-2041')).toEqual({
      balance: 15_000,
      alreadyCredited: true,
    });
    expect(await creditLines(account)).toHaveLength(2);
    expect(await balance(account)).toBe(15_000);
    books.paid(account, 5_000);
    // The key of another amount is refused, and credits nothing; a new key is a new top-up.
    await expect(accounts.topUp(BY_TEST, account.serviceSid, 7_000, 'invoice-2041')).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
    expect(await accounts.topUp(BY_TEST, account.serviceSid, 7_000, 'invoice-2042')).toEqual({
      balance: 22_000,
      alreadyCredited: false,
    });
    books.paid(account, 7_000);
    expect(await creditLines(account)).toHaveLength(3);
  });

  it('its transaction never applied and every answer lost: an error, no credit line, the balance as it was', async () => {
    const account = await books.open(1);
    const accounts = faultedAccounts();
    const lost = loseEveryAnswer('before');
    await expect(accounts.topUp(BY_TEST, account.serviceSid, 5_000)).rejects.toThrow();
    expect(lost.fired).toBe(3);
    expect(await creditLines(account)).toHaveLength(1);
    expect(await balance(account)).toBe(10_000);
  });
});

describe("Step Functions start failures (the ledger, the sweeper's outbox)", () => {
  /** Waits until the carrier carried a message to `to` (the delivery ran). */
  const delivered = (api: ApiClient, sid: string) =>
    eventually(
      async () => {
        const body = (await api.fetch(sid)).body;
        return body.delivery_status === 'DELIVERED' ? body : undefined;
      },
      10_000,
      50,
    );

  it('StartExecution fails: still 201 and charged; the sweeper delivers it once it is 30 s old', async () => {
    const account = await books.open();
    const api = harness.client(account);
    const to = freshUsNumber();
    flaky.failNext(1);
    const sent = await api.send({ To: to });
    expect(sent.status).toBe(201);
    const sid = sent.body.sid as string;
    expect(flaky.failed.map((input) => input.sid)).toEqual([sid]);
    expect(harness.logs.some((line) => line.includes('delivery.start_failed') && line.includes(sid))).toBe(
      true,
    );
    expect((await ledger(account)).charges).toHaveLength(1);

    // Nothing runs it until the sweeper does; a young send is not taken as stalled.
    await harness.stack.workflow.idle();
    expect(harness.stack.carrier.messagesTo(to)).toEqual([]);
    expect(await harness.stack.sweep()).toEqual([]);
    harness.clock.advance(29_000);
    expect(await harness.stack.sweep()).toEqual([]);

    harness.clock.advance(2_000);
    expect(await harness.stack.sweep()).toEqual([sid]);
    await delivered(api, sid);
    expect(harness.stack.carrier.messagesTo(to)).toHaveLength(1);
    // The sweeper's cursor moved past it: the next sweep restarts nothing.
    expect(await harness.stack.sweep()).toEqual([]);
    await harness.stack.workflow.idle();
    expect(harness.stack.carrier.messagesTo(to)).toHaveLength(1);
  });

  it("a spread balance: the sweeper finds stalled sends in every shard's ledger", async () => {
    const account = await books.open();
    await harness.accounts.spreadBalance(BY_TEST, account.serviceSid, '8');
    const api = harness.client(account);
    flaky.failNext(6);
    const sids: string[] = [];
    for (let i = 0; i < 6; i++) sids.push((await api.send({ To: freshUsNumber() })).body.sid as string);
    expect(flaky.failed.map((input) => input.sid)).toEqual(sids);
    const ledgers = new Set((await ledger(account)).charges.map((line) => line.pk));
    expect(ledgers.size).toBeGreaterThan(1);

    harness.clock.advance(31_000);
    expect([...(await harness.stack.sweep())].sort()).toEqual([...sids].sort());
    await Promise.all(sids.map((sid) => delivered(api, sid)));
  });

  it('a restart that fails too is retried by the next sweep, and does not hold up the others', async () => {
    const api = harness.client(await books.open());
    const [first, second] = [freshUsNumber(), freshUsNumber()];
    flaky.failNext(2);
    const sids: unknown[] = [(await api.send({ To: first })).body.sid];
    // The sweeper restarts in creation order: the older one, whose restart fails below, comes first.
    harness.clock.advance(1_000);
    sids.push((await api.send({ To: second })).body.sid);
    expect(flaky.failed.map((input) => input.sid)).toEqual(sids);
    harness.clock.advance(31_000);

    // The first restart fails; the second still goes.
    flaky.failNext(1, (input) => input.sid === sids[0]);
    await expect(harness.stack.sweep()).rejects.toThrow();
    await delivered(api, sids[1] as string);
    expect(harness.stack.carrier.messagesTo(first)).toEqual([]);

    expect(await harness.stack.sweep()).toEqual([sids[0]]);
    await delivered(api, sids[0] as string);
    await harness.stack.workflow.idle();
    expect(harness.stack.carrier.messagesTo(first)).toHaveLength(1);
    expect(harness.stack.carrier.messagesTo(second)).toHaveLength(1);
  });

  // A stack of its own to start and stop: on a loaded machine that alone took most of the default 30 s.
  it("on the stack as npm start runs it, the sweeper's own timer delivers a send whose workflow did not start", async () => {
    let timerFlaky!: FlakyWorkflow;
    const timed = await startHarness({
      sweepIntervalMs: 50,
      wrapWorkflow: (workflow) => (timerFlaky = new FlakyWorkflow(workflow)),
    });
    try {
      const api = timed.client(await timed.createAccount());
      timerFlaky.failNext(1);
      const to = freshUsNumber();
      const sent = await api.send({ To: to });
      expect(sent.status).toBe(201);
      const sid = sent.body.sid as string;
      // The timer's runs leave a send younger than 30 s alone (and move the cursor only up to 30 s ago).
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(timed.stack.carrier.messagesTo(to)).toEqual([]);
      timed.clock.advance(31_000);
      await eventually(
        async () => ((await api.fetch(sid)).body.delivery_status === 'DELIVERED' ? true : undefined),
        10_000,
        50,
      );
      await timed.stack.workflow.idle();
      expect(timed.stack.carrier.messagesTo(to)).toHaveLength(1);
      expect(timed.logs.some((line) => line.includes('sweeper.restarted'))).toBe(true);
      expect(timed.logs.some((line) => line.includes('sweeper.failed'))).toBe(false);
    } finally {
      await timed.close();
    }
  }, 60_000);

  it('a replayed send whose delivery has not started is still delivered by the sweeper', async () => {
    const api = harness.client(await books.open());
    const headers = idempotencyKey();
    flaky.failNext(1);
    const sent = await api.send({ To: freshUsNumber() }, { headers });
    const replay = await api.send({ To: freshUsNumber() }, { headers });
    expect(replay.body.sid).toBe(sent.body.sid);
    harness.clock.advance(31_000);
    expect(await harness.stack.sweep()).toEqual([sent.body.sid]);
    await delivered(api, sent.body.sid as string);
  });
});

describe('provider errors and time-outs move delivery to the next channel', () => {
  const pollEnded = (api: ApiClient, sid: string, timeoutMs = 15_000) =>
    eventually(
      async () => {
        const body = (await api.fetch(sid)).body;
        return ['DELIVERED', 'FAILED', 'SENT'].includes(body.delivery_status as string) ? body : undefined;
      },
      timeoutMs,
      100,
    );
  /** Sends a code to `to` and waits for its delivery to end: delivered on sna, the only channel carried. */
  async function deliveredOnSnaOnly(api: ApiClient, to: string): Promise<void> {
    const sent = await api.send({ To: to });
    const final = await pollEnded(api, sent.body.sid as string);
    await harness.stack.workflow.idle();
    expect(final).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sna' });
    expect(harness.stack.carrier.messagesTo(to).map((message) => message.channel)).toEqual(['sna']);
  }

  it('an HTTP 500 and a hang past the time-out each move on to the next channel', async () => {
    const api = harness.client(await books.open());
    const to = freshUkMobile();
    harness.stack.carrier.setRule({
      prefix: to,
      channels: { sna: 'error', viber: { hang: 4_000 }, whatsapp: { deliver: 50 } },
    });
    const sent = await api.send({ To: to });
    expect(sent.body.channel).toBe('sna');
    const final = await pollEnded(api, sent.body.sid as string);
    expect(final).toMatchObject({ delivery_status: 'DELIVERED', channel: 'whatsapp' });
    const item = (await harness.scanTable()).find((entry) => entry.sid === sent.body.sid)!;
    const deliveries = item.deliveries as Record<
      string,
      { channel: string; outcome: string; reason?: string }
    >;
    expect(deliveries['0']).toMatchObject({ channel: 'sna', outcome: 'failed' });
    expect(deliveries['1']).toMatchObject({ channel: 'viber', outcome: 'failed' });
    expect(deliveries['2']).toMatchObject({ channel: 'whatsapp', outcome: 'accepted' });
    expect(harness.stack.carrier.failures.filter((f) => f.to === to).map((f) => f.channel)).toEqual([
      'sna',
      'viber',
    ]);
    expect(harness.stack.carrier.messagesTo(to).map((message) => message.channel)).toEqual(['whatsapp']);
  }, 20_000);

  it('a receipt that beats the record of the provider answer still counts: no second channel', async () => {
    const api = harness.client(await books.open());
    const to = freshUkMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: { deliver: 0 }, viber: { deliver: 0 } } });
    // The deliver task's write of the carrier's answer is slow; the carrier's receipt comes first.
    const slow = faults.inject({
      operation: 'UpdateItem',
      pkPrefix: 'VERIFICATION#',
      kind: 'slow',
      delayMs: 600,
    });
    await deliveredOnSnaOnly(api, to);
    expect(slow.fired).toBe(1);
  });

  it("a channel's claim applied and its answer lost, re-sent by the SDK: the channel is still sent, once", async () => {
    const api = harness.client(await books.open());
    const to = freshUkMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: { deliver: 50 } } });
    // Refused the second time (the channel is claimed), the claim read as another task's: nothing was sent, and
    // the code went out on the next channel a wait later (or never, on a last channel).
    const lost = loseOneUpdateAnswer({ where: (call) => call.update?.includes('= :claim') ?? false });
    await deliveredOnSnaOnly(api, to);
    expect(lost.fired).toBe(1);
  });

  it('every channel erroring ends FAILED, but an error says nothing about the number: not unreachable', async () => {
    const api = harness.client(await books.open());
    const to = freshUsNumber();
    harness.stack.carrier.setRule({
      prefix: to,
      channels: { sna: 'error', whatsapp: 'error', rcs: 'error', sms: 'error' },
    });
    const sent = await api.send({ To: to });
    const final = await pollEnded(api, sent.body.sid as string);
    expect(final.delivery_status).toBe('FAILED');
    await harness.stack.workflow.idle();
    harness.stack.carrier.clearRules();
    expect((await api.send({ To: to })).status).toBe(201);
  });
});

describe("the console's guard changes under a DynamoDB failure", () => {
  /** An operator's console session on the local sign-in. */
  const operatorToken = () => harness.consoleToken('ops@example.com', true);

  it('a lift by hand: both the lift and its audit record, or neither', async () => {
    const account = await books.open(1);
    const documents = createDocumentClient({ endpoint: dynamoEndpoint() });
    const stateKey = keys.guardCountry(account.serviceSid, 'GB');
    const now = harness.clock.now().getTime();
    // A block as the guard's consumer writes one.
    const block = {
      prefix: '+447400',
      reason: 'prefix_surge',
      level: 'standard',
      since: now,
      until: now + 3_600_000,
      figures: {},
    };
    await documents.send(
      new PutCommand({
        TableName: harness.tableName,
        Item: {
          ...stateKey,
          type: 'guard_state',
          state: JSON.stringify({ blocks: [block], established: [], lifted: {} }),
        },
      }),
    );
    const state = async () => {
      const { Item } = await documents.send(new GetCommand({ TableName: harness.tableName, Key: stateKey }));
      return JSON.parse(Item!.state as string) as { blocks: unknown[]; lifted: Record<string, number> };
    };
    const audited = async () =>
      (await harness.accounts.auditTrail(account.serviceSid)).filter((r) => r.action === 'guard.unblock');
    const token = await operatorToken();
    const lift = () =>
      fetch(`${harness.stack.url}/console/api/services/${account.serviceSid}/guard/unblock`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prefix: '+447400' }),
      });

    // Every write of an audit record fails: written apart, the lift stood without its record.
    const failing = faults.inject({
      kind: 'internal',
      where: (call) => call.sks.some((sk) => sk.startsWith('AUDIT#')),
      times: 100,
    });
    expect(isServerError((await lift()).status)).toBe(true);
    expect(failing.fired).toBeGreaterThan(0);
    expect(await state()).toMatchObject({ blocks: [block], lifted: {} });
    expect(await audited()).toEqual([]);

    // A guard consumer's transaction on the same items in flight cancels the lift once: it is tried again.
    faults.reset();
    const conflict = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'conflict',
      where: (call) => call.sks.some((sk) => sk.startsWith('AUDIT#')),
    });
    expect((await lift()).status).toBe(200);
    expect(conflict.fired).toBe(1);
    expect(await state()).toMatchObject({ blocks: [], lifted: { '+447400': expect.any(Number) } });
    expect((await audited()).map((r) => r.after)).toEqual([
      expect.objectContaining({ prefix: '+447400', lifted: 1 }),
    ]);
    documents.destroy();
  });

  it('the guard settings saved together: level and safe list both changed with their records, or neither', async () => {
    const account = await books.open(1);
    const token = await operatorToken();
    const saved = async () => {
      const guard = (await harness.accounts.getService(account.serviceSid))!.guard;
      const actions = (await harness.accounts.auditTrail(account.serviceSid))
        .map((r) => r.action)
        .filter((action) => action.startsWith('guard.'))
        .sort();
      return { level: guard?.level, safeList: guard?.safeList, actions };
    };
    const before = await saved();
    const guardPath = `${harness.stack.url}/console/api/services/${account.serviceSid}/guard`;
    const { guardVersion } = (await (
      await fetch(guardPath, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { guardVersion: number };
    // The second write of an audit record fails: saved one setting at a time, the level stood and the list did not.
    faults.inject({
      kind: 'internal',
      where: (call) => call.sks.some((sk) => sk.startsWith('AUDIT#')),
      skip: 1,
      times: 100,
    });
    const response = await fetch(guardPath, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ level: 'strict', safeList: ['+447400'], guardVersion }),
    });
    // Not refused as made on an older copy: the write was tried.
    expect(response.status).not.toBe(409);
    if (response.status === 200)
      expect(await saved()).toEqual({
        level: 'strict',
        safeList: ['+447400'],
        actions: ['guard.level', 'guard.safelist'],
      });
    else expect(await saved()).toEqual(before);
  });
});
