/**
 * The per-key limit as several function instances see it: one write per request whatever
 * the window's state, exact counts across instances, stale windows removed by the next write, old key items
 * migrated. Each instance is its own DynamoStore, API-key guard and fetch handler over DynamoDB Local, with a
 * call log on its own client (the reliability suite's fault middleware, no fault set).
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import type { Accounts } from '../../functions/core/accounts/accounts';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { DynamoStore } from '../../functions/adapters/dynamodb/store';
import { HmacApiKeyTagger, hashApiKey } from '../../functions/adapters/crypto';
import { silentLogger } from '../../functions/adapters/logger';
import { buildFetchHandler } from '../../functions/http/api';
import { ApiKeyGuard } from '../../functions/http/middleware';
import { fetchEvent, lambdaContext, type Caller } from '../../bench/events';
import { DynamoFaults } from '../support/faults';
import { FakeClock } from '../support/fake-clock';
import { BY_TEST } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

const MINUTE = 60_000;
/** A verification that does not exist: a request that passed auth and the limit answers 404. */
const SID = 'VE0123456789abcdef0123456789abcdef';

let table: TestTable;
let accounts: Accounts;
const MASTER_KEY = randomBytes(32).toString('base64url');

beforeAll(async () => {
  table = await freshTable('perkey');
  accounts = dynamoAccounts(table.documents, table.name, { apiKeyTag: MASTER_KEY });
});
afterAll(() => table?.close());

/** A function instance: its own store (and its memory of the key's windows), guard and DynamoDB client. */
function instance(clock: FakeClock, requestsPerMinute: number) {
  const client = table.client();
  const calls = new DynamoFaults();
  calls.install(client);
  const store = new DynamoStore(client, table.name);
  const handler = buildFetchHandler(
    {
      store,
      clock,
      settings: { keyRequestsPerMinute: requestsPerMinute },
      apiKeyTagger: new HmacApiKeyTagger(MASTER_KEY),
      logger: silentLogger,
    },
    new ApiKeyGuard(),
  );
  return {
    fetch: async (caller: Caller, serviceSid = caller.serviceSid) =>
      (await handler(fetchEvent({ ...caller, serviceSid }, SID), lambdaContext('fetch'))).statusCode,
    /** Requests this instance made on API key items. */
    keyCalls: () => calls.calls.filter((call) => call.pks.some((pk) => pk.startsWith('APIKEY#'))),
    resetCalls: () => calls.reset(),
  };
}

async function newCaller(): Promise<Caller> {
  const service = await accounts.createService(BY_TEST, { name: 'Per-key', balance: 0, channels: ['sms'] });
  const { apiKey } = await accounts.issueApiKey(BY_TEST, service.sid);
  return { serviceSid: service.sid, apiKey };
}

const keyItem = async (caller: Caller) =>
  (
    await table.documents.send(
      new GetCommand({
        TableName: table.name,
        Key: keys.apiKey(hashApiKey(caller.apiKey)),
        ConsistentRead: true,
      }),
    )
  ).Item;

/** The `rate_counts` map's entry name of a window: its start in epoch minutes. */
const entry = (window: number) => String(window / MINUTE);

/** A clock 5 s into a fresh minute window; `window(n)` is the start of the n-th window from it. */
function minuteClock() {
  const start = Math.ceil(Date.now() / MINUTE) * MINUTE + 10 * MINUTE;
  const clock = new FakeClock(new Date(start + 5_000));
  return {
    clock,
    window: (n: number) => start + n * MINUTE,
    at: (n: number) => clock.set(new Date(start + n * MINUTE + 5_000)),
  };
}

describe('one write per request, whatever the window', () => {
  it("a cold instance's first request of a key whose window another instance opened is one write", async () => {
    const caller = await newCaller();
    const { clock, window } = minuteClock();
    const warm = instance(clock, 100);
    expect(await warm.fetch(caller)).toBe(404);
    for (let i = 0; i < 3; i++) {
      const cold = instance(clock, 100);
      expect(await cold.fetch(caller)).toBe(404);
      expect(cold.keyCalls().map((call) => call.operation)).toEqual(['UpdateItem']);
    }
    expect((await keyItem(caller))!.rate_counts).toEqual({ [entry(window(0))]: 4 });
  });

  it("a warm instance's first request in a new minute is one write, whoever opened that minute", async () => {
    const caller = await newCaller();
    const { clock, at } = minuteClock();
    const a = instance(clock, 100);
    const b = instance(clock, 100);
    expect(await a.fetch(caller)).toBe(404);
    expect(await b.fetch(caller)).toBe(404);
    at(1);
    a.resetCalls();
    b.resetCalls();
    // a opens minute 1 and b, which last saw minute 0, counts in it; then the other way round in minute 2.
    expect(await a.fetch(caller)).toBe(404);
    expect(await b.fetch(caller)).toBe(404);
    at(2);
    expect(await b.fetch(caller)).toBe(404);
    expect(await a.fetch(caller)).toBe(404);
    expect(a.keyCalls()).toHaveLength(2);
    expect(b.keyCalls()).toHaveLength(2);
  });
});

describe('exactness across instances', () => {
  it('60 simultaneous requests from 4 instances new to the key, limit 20: exactly 20 served, one write each', async () => {
    const caller = await newCaller();
    const { clock, window } = minuteClock();
    const instances = Array.from({ length: 4 }, () => instance(clock, 20));
    const statuses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => instances[i % instances.length]!.fetch(caller)),
    );
    expect(statuses.filter((status) => status === 404)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(40);
    expect((await keyItem(caller))!.rate_counts).toEqual({ [entry(window(0))]: 20 });
    // Refused ones too: every request made exactly one request on the key's item.
    for (const each of instances) expect(each.keyCalls()).toHaveLength(15);
  });

  it('a limited key is served again in the next window, on every instance', async () => {
    const caller = await newCaller();
    const { clock, at } = minuteClock();
    const [a, b] = [instance(clock, 2), instance(clock, 2)];
    expect([
      await a.fetch(caller),
      await b.fetch(caller),
      await a.fetch(caller),
      await b.fetch(caller),
    ]).toEqual([404, 404, 429, 429]);
    at(1);
    expect([await b.fetch(caller), await a.fetch(caller), await b.fetch(caller)]).toEqual([404, 404, 429]);
  });
});

describe('stale windows', () => {
  it("disappear at the key's next write, in that same write", async () => {
    const caller = await newCaller();
    const { clock, window, at } = minuteClock();
    const a = instance(clock, 100);
    const counts = async () => (await keyItem(caller))!.rate_counts as Record<string, number>;
    expect(await a.fetch(caller)).toBe(404);
    at(1);
    expect(await a.fetch(caller)).toBe(404);
    // The window before this one is kept (clocks slightly behind at the edge).
    expect(await counts()).toEqual({ [entry(window(0))]: 1, [entry(window(1))]: 1 });
    at(2);
    expect(await a.fetch(caller)).toBe(404);
    expect(await counts()).toEqual({ [entry(window(1))]: 1, [entry(window(2))]: 1 });
    // An instance new to the key learns the windows from its first write's image, and removes them at its next.
    at(5);
    const b = instance(clock, 100);
    expect(await b.fetch(caller)).toBe(404);
    expect(await counts()).toEqual({ [entry(window(1))]: 1, [entry(window(2))]: 1, [entry(window(5))]: 1 });
    expect(await b.fetch(caller)).toBe(404);
    expect(await counts()).toEqual({ [entry(window(5))]: 2 });
    expect(a.keyCalls()).toHaveLength(3);
    expect(b.keyCalls()).toHaveLength(2);
    expect((await keyItem(caller))!.rate_window).toBe(window(5));
  });

  it('many left by instances that never wrote again are removed at once, so the item stays small', async () => {
    const caller = await newCaller();
    const { clock, window } = minuteClock();
    const old = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [entry(window(-20 + i)), 3]));
    await table.documents.send(
      new PutCommand({ TableName: table.name, Item: { ...(await keyItem(caller))!, rate_counts: old } }),
    );
    const a = instance(clock, 100);
    expect(await a.fetch(caller)).toBe(404);
    expect((await keyItem(caller))!.rate_counts).toEqual({ [entry(window(0))]: 1 });
    expect(a.keyCalls()).toHaveLength(2);
  });
});

describe('key items written before the counts map', () => {
  /** A key item as the code before `rate_counts` wrote it, with its old single count. */
  async function legacyCaller(changes: Record<string, unknown> = {}): Promise<Caller> {
    const service = await accounts.createService(BY_TEST, { name: 'Legacy', balance: 0, channels: ['sms'] });
    const apiKey = `otpk_${randomBytes(32).toString('base64url')}`;
    const keyHash = hashApiKey(apiKey);
    await table.documents.send(
      new PutCommand({
        TableName: table.name,
        Item: {
          ...keys.apiKey(keyHash),
          type: 'api_key',
          key_hash: keyHash,
          service_sid: service.sid,
          created_at: new Date().toISOString(),
          rate_window: Date.now() - 5 * MINUTE,
          rate_count: 7,
          ...changes,
        },
      }),
    );
    return { serviceSid: service.sid, apiKey };
  }

  it('are counted and migrated at their first request; later requests are one write', async () => {
    const caller = await legacyCaller();
    const { clock, window } = minuteClock();
    const a = instance(clock, 100);
    expect(await a.fetch(caller)).toBe(404);
    const item = (await keyItem(caller))!;
    expect(item.rate_counts).toEqual({ [entry(window(0))]: 1 });
    expect(item.rate_count).toBeUndefined();
    expect(item.rate_window).toBe(window(0));
    // The write DynamoDB refused (no map), the migration, the write again.
    expect(a.keyCalls()).toHaveLength(3);
    a.resetCalls();
    expect(await a.fetch(caller)).toBe(404);
    expect(a.keyCalls()).toHaveLength(1);
  });

  it('keep the limit exact when many requests from several instances migrate them at once', async () => {
    const caller = await legacyCaller();
    const { clock, window } = minuteClock();
    const instances = Array.from({ length: 3 }, () => instance(clock, 5));
    const statuses = await Promise.all(Array.from({ length: 15 }, (_, i) => instances[i % 3]!.fetch(caller)));
    expect(statuses.filter((status) => status === 404)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(10);
    expect((await keyItem(caller))!.rate_counts).toEqual({ [entry(window(0))]: 5 });
  });

  it('a revoked one is refused and left as it was', async () => {
    const caller = await legacyCaller({ revoked_at: new Date().toISOString() });
    const before = await keyItem(caller);
    const { clock } = minuteClock();
    expect(await instance(clock, 100).fetch(caller)).toBe(401);
    expect(await keyItem(caller)).toEqual(before);
  });
});

describe('refused keys count nothing', () => {
  it('unknown and revoked keys get 401, a key on another service 403, and nothing is counted or created', async () => {
    const caller = await newCaller();
    const revoked = await newCaller();
    const other = await newCaller();
    const [key] = await accounts.listApiKeys(revoked.serviceSid);
    await accounts.revokeApiKey(BY_TEST, revoked.serviceSid, key!.keyId);
    const { clock } = minuteClock();
    const a = instance(clock, 100);
    const unknown = {
      serviceSid: caller.serviceSid,
      apiKey: `otpk_${randomBytes(32).toString('base64url')}`,
    };
    expect(await a.fetch(unknown)).toBe(401);
    expect(await keyItem(unknown)).toBeUndefined();
    expect(await a.fetch(revoked)).toBe(401);
    expect((await keyItem(revoked))!.rate_counts).toEqual({});
    expect(await a.fetch(caller, other.serviceSid)).toBe(403);
    expect(await instance(clock, 100).fetch(caller, other.serviceSid)).toBe(403);
    expect((await keyItem(caller))!.rate_counts).toEqual({});
  });
});
