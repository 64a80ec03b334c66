/**
 * The guard's stream consumer on DynamoDB Local, through its Lambda's handler (handleGuardStream) with
 * stream records as Lambda hands them: a batch delivered again counts once (the same batch twice, a retry after
 * the write went through but its answer was lost, a batch of which one record's write failed), and a later
 * batch still counts.
 */
import { brotliCompressSync, brotliDecompressSync } from 'node:zlib';
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { randomBytes } from 'node:crypto';
import {
  DYNAMODB_ITEM_LIMIT_BYTES,
  DynamoGuardAdmin,
  DynamoGuardStore,
  GUARD_ITEM_BUDGET_BYTES,
  GuardItemTooLargeError,
  MAX_LIFTED_PREFIXES,
  itemBytes,
} from '../../functions/adapters/dynamodb/guard';
import { verificationToItem } from '../../functions/adapters/dynamodb/items';
import {
  handleGuardStream,
  reportOverBudget,
  type GuardWindowState,
  type GuardStreamEvent,
} from '../../functions/adapters/guard/stream';
import type { Logger } from '../../functions/adapters/logger';
import { InMemoryMetrics, METRIC } from '../../functions/core/metrics';
import { currentCountryStats } from '../../functions/core/guard/aggregates';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { GLOBAL_SCOPE } from '../../functions/core/guard/consumer';
import { countryPrefixOf } from '../../functions/core/guard/prefix';
import { LIFT_MS } from '../../functions/core/guard/status';
import type { Verification } from '../../functions/core/model';
import { DynamoFaults } from '../support/faults';
import { FakeClock } from '../support/fake-clock';
import { freshTable, type TestTable } from '../support/table';

const serviceSid = `VA${'c'.repeat(32)}`;
const SHARD = 'shardId-00000001700000000000-0123abcd';
const opened: TestTable[] = [];

afterAll(() => {
  for (const table of opened) table.close();
});

interface Table {
  tableName: string;
  client: DynamoDBDocumentClient;
  /** Another client on the table, apart from the consumer's (and its faults). */
  newClient: () => DynamoDBDocumentClient;
  faults: DynamoFaults;
  handle: (event: GuardStreamEvent) => Promise<unknown>;
  /** What the consumer told of its own health: metrics and log lines. */
  metrics: InMemoryMetrics;
  logs: { level: string; event: string; fields: Record<string, unknown> }[];
}

const clock = new FakeClock(new Date('2026-11-23T12:00:00Z'));

/**
 * A fresh table (the GLOBAL aggregates are shared by every service of a table) and the handler on it. Its
 * directory lists `services` services (the consumer keeps the global scope from 4): `serviceSid` and others.
 */
async function table(services = 4, options: { serviceCountTtlMs?: number } = {}): Promise<Table> {
  const fresh = await freshTable('guard');
  opened.push(fresh);
  const { name: tableName, documents: client } = fresh;
  for (let i = 0; i < services; i++) await listService(client, tableName, i === 0 ? serviceSid : undefined);
  const faults = new DynamoFaults();
  faults.install(client);
  const metrics = new InMemoryMetrics();
  const logs: Table['logs'] = [];
  const logger: Logger = { log: (level, event, fields = {}) => logs.push({ level, event, fields }) };
  const deps = {
    store: new DynamoGuardStore(client, tableName, {
      onOverBudget: reportOverBudget(logger, metrics),
      ...options,
    }),
    clock,
  };
  const handle = (event: GuardStreamEvent) => handleGuardStream(deps, event, { metrics, logger });
  return { tableName, client, newClient: fresh.client, faults, handle, metrics, logs };
}

/** A service's entry in the directory of all services, as `createService` writes it. */
async function listService(client: DynamoDBDocumentClient, tableName: string, sid?: string): Promise<void> {
  const entry = sid ?? `VA${randomBytes(16).toString('hex')}`;
  await client.send(
    new PutCommand({
      TableName: tableName,
      Item: { ...keys.serviceDirectory(entry), service_sid: entry, name: 'Other', created_at: '2026-11-01' },
    }),
  );
}

/** The stream record of a new verification to `to`, at sequence number `sequence` (21 digits, as DynamoDB's). */
function sendRecord(to: string, country: string, sequence: number): DynamoDBRecord {
  const verification: Verification = {
    sid: `VE${randomBytes(16).toString('hex')}`,
    serviceSid,
    to,
    country,
    status: 'PENDING',
    deliveryStatus: 'PENDING',
    channel: 'sms',
    price: 600,
    attemptsRemaining: 5,
    expiresAt: new Date(clock.now().getTime() + 300_000).toISOString(),
    dateCreated: new Date(clock.now().getTime() - 30_000 + sequence).toISOString(),
    clientCode: false,
    codeHash: 'hash-of-code',
    message: 'Your code is {code}.',
    channels: ['sms'],
    deliveries: {},
  };
  return {
    eventName: 'INSERT',
    dynamodb: {
      NewImage: marshall(verificationToItem(verification), {
        removeUndefinedValues: true,
      }) as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'],
      SequenceNumber: `4${String(sequence).padStart(20, '0')}`,
    },
  };
}

/** `count` sends to GB mobiles `+447400…`, from sequence number `first` on. */
const gbBatch = (first: number, count: number): DynamoDBRecord[] =>
  Array.from({ length: count }, (_, i) =>
    sendRecord(`+447400${String(200_000 + (first + i) * 41).padStart(6, '0')}`, 'GB', first + i),
  );

/**
 * Every guard item of `scope`, keyed by sort key; for the global scope, those of `countries` (it has a
 * partition per country).
 */
async function guardItems(
  { client, tableName }: Table,
  scope: string,
  countries = ['GB'],
): Promise<Record<string, unknown>> {
  const partitions =
    scope === GLOBAL_SCOPE
      ? countries.map((country) => keys.guardCountry(scope, country).pk)
      : [keys.guardScope(scope).pk];
  const items = [];
  for (const pk of partitions) {
    const { Items = [] } = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    );
    items.push(...Items);
  }
  return Object.fromEntries(items.map((item) => [item.sk as string, item]));
}
const everything = async (t: Table) => ({
  own: await guardItems(t, serviceSid),
  global: await guardItems(t, GLOBAL_SCOPE),
});

/** Sends counted in `country`'s aggregates of the service and of GLOBAL (decayed totals, rounded). */
async function counted(t: Table, country = 'GB'): Promise<[number, number]> {
  const stats = async (scope: string) => {
    const item = (await guardItems(t, scope, [country]))[keys.guardCountryStats(scope, country).sk] as
      { stats_packed: Uint8Array } | undefined;
    // The aggregates are stored brotli-packed (functions/adapters/dynamodb/guard.ts).
    const stats =
      item && (JSON.parse(brotliDecompressSync(item.stats_packed).toString()) as { base: { s: number } });
    return stats ? Math.round(stats.base.s) : 0;
  };
  return [await stats(serviceSid), await stats(GLOBAL_SCOPE)];
}

test('the same batch consumed twice leaves the aggregates as after once; a later batch still counts', async () => {
  const t = await table();
  const batch = gbBatch(1, 6);
  // The tumbling window's state (unused), which Lambda wants back.
  expect(await t.handle({ Records: batch, shardId: SHARD })).toEqual({ state: {} });
  const once = await everything(t);
  expect(await counted(t)).toEqual([6, 6]);

  t.faults.reset();
  await t.handle({ Records: batch, shardId: SHARD });
  // Nothing new: one read, no write.
  expect(t.faults.calls.map((call) => call.operation)).toEqual(['BatchGetItem']);
  expect(await everything(t)).toEqual(once);

  // Bisected halves of it, as Lambda retries a failing batch: nothing new either.
  await t.handle({ Records: batch.slice(0, 3), shardId: SHARD });
  await t.handle({ Records: batch.slice(3), shardId: SHARD });
  expect(await everything(t)).toEqual(once);

  await t.handle({ Records: gbBatch(7, 4), shardId: SHARD });
  expect(await counted(t)).toEqual([10, 10]);
  // Another shard numbers its records on its own: lower sequence numbers, counted.
  await t.handle({
    Records: gbBatch(1, 2).map((r, i) => sendRecord(`+447401${100_000 + i}`, 'GB', 1 + i)),
    shardId: 'shardId-other',
  });
  expect(await counted(t)).toEqual([12, 12]);
});

test('below four services the global scope is neither read nor written; a fourth service brings it', async () => {
  const t = await table(3, { serviceCountTtlMs: 0 });
  await t.handle({ Records: gbBatch(1, 6), shardId: SHARD });
  expect(await counted(t)).toEqual([6, 0]);
  expect(await guardItems(t, GLOBAL_SCOPE)).toEqual({});
  const read = t.faults.calls.find((call) => call.operation === 'BatchGetItem')!;
  expect(read.pks.some((pk) => pk.includes(GLOBAL_SCOPE))).toBe(false);

  await listService(t.client, t.tableName);
  await t.handle({ Records: gbBatch(7, 4), shardId: SHARD });
  // The global scope starts from the batch after the fourth service: the earlier sends are not there.
  expect(await counted(t)).toEqual([10, 4]);
});

test('the count of services is read once in a few minutes below four, and never again once it reached four', async () => {
  const queries = (t: Table) => t.faults.calls.filter((call) => call.operation === 'Query').length;
  const few = await table(3);
  await few.handle({ Records: gbBatch(1, 2), shardId: SHARD });
  await listService(few.client, few.tableName);
  await few.handle({ Records: gbBatch(3, 2), shardId: SHARD });
  // The fourth service is seen when the count's few minutes are over, not at the next batch.
  expect(queries(few)).toBe(1);
  expect(await counted(few)).toEqual([4, 0]);

  const four = await table(4, { serviceCountTtlMs: 1 });
  await four.handle({ Records: gbBatch(1, 2), shardId: SHARD });
  await new Promise((resolve) => setTimeout(resolve, 5));
  await four.handle({ Records: gbBatch(3, 2), shardId: SHARD });
  // Services are never removed: four stay four, past the time a smaller count is trusted.
  expect(queries(four)).toBe(1);
  expect(await counted(four)).toEqual([4, 4]);
});

test("in a tumbling window the aggregates wait in Lambda's state, written at the window's last batch", async () => {
  const t = await table();
  const window = { start: '2026-11-23T11:45:00Z', end: '2026-11-23T12:00:00Z' };
  const first = (await t.handle({ Records: gbBatch(1, 4), shardId: SHARD, window, state: {} })) as {
    state: GuardWindowState;
  };
  expect(first.state.carried).toHaveLength(4);
  expect(t.faults.calls.map((call) => call.operation)).not.toContain('PutItem');
  expect(await counted(t)).toEqual([0, 0]);

  // Lambda passes the state back (as JSON) with the window's next batches; the last one writes them all, once.
  const state = JSON.parse(JSON.stringify(first.state)) as GuardWindowState;
  const second = (await t.handle({ Records: gbBatch(5, 2), shardId: SHARD, window, state })) as {
    state: GuardWindowState;
  };
  expect(second.state.carried).toHaveLength(6);
  expect(
    await t.handle({
      Records: [],
      shardId: SHARD,
      window,
      state: second.state,
      isFinalInvokeForWindow: true,
    }),
  ).toEqual({ state: {} });
  expect(await counted(t)).toEqual([6, 6]);
  // A batch delivered again after the window still counts once.
  await t.handle({ Records: gbBatch(1, 6), shardId: SHARD });
  expect(await counted(t)).toEqual([6, 6]);
});

test('a batch whose write went through but whose answer was lost, retried, counts once', async () => {
  const t = await table();
  t.faults.inject({ operation: 'TransactWriteItems', kind: 'internal', timing: 'after' });
  const batch = gbBatch(1, 5);
  await expect(t.handle({ Records: batch, shardId: SHARD })).rejects.toThrow();
  // Lambda retries the batch.
  await t.handle({ Records: batch, shardId: SHARD });
  expect(await counted(t)).toEqual([5, 5]);
});

test("a batch over 26 countries, one record's write failed, retried: as once", async () => {
  const countries = ['GB', 'FR', 'DE', 'ES', 'IT', 'NL', 'BE', 'PT', 'SE', 'NO', 'DK', 'FI', 'PL'].concat([
    'CZ',
    'AT',
    'CH',
    'IE',
    'GR',
    'HU',
    'RO',
    'BG',
    'HR',
    'SK',
    'SI',
    'LT',
    'LV',
  ]);
  const batch = countries.flatMap((country, c) =>
    [0, 1].map((i) => sendRecord(`${countryPrefixOf(country)}7001234${c}${i}`, country, c * 2 + i + 1)),
  );
  const reference = await table();
  await reference.handle({ Records: batch, shardId: SHARD });

  const t = await table();
  // 52 aggregates and the scope's, each record written on its own: the second write fails.
  const failed = t.faults.inject({ operation: ['PutItem', 'TransactWriteItems'], kind: 'internal', skip: 1 });
  await expect(t.handle({ Records: batch, shardId: SHARD })).rejects.toThrow();
  expect(failed.fired).toBe(1);
  expect(await everything(t)).not.toEqual(await everything(reference));
  await t.handle({ Records: batch, shardId: SHARD });
  expect(await everything(t)).toEqual(await everything(reference));
  for (const country of ['GB', 'LV']) expect(await counted(t, country)).toEqual([2, 2]);
});

describe("the consumer's health", () => {
  /**
   * The service's GB aggregates stored at about `bytes` (their per-shard marks padded out with shards folded a
   * minute ago, which the consumer keeps for hours): an item grown as an unbounded map would grow.
   */
  async function grownAggregates(t: Table, bytes: number): Promise<void> {
    const key = keys.guardCountryStats(serviceSid, 'GB');
    const item: Record<string, unknown> = {
      ...key,
      type: 'guard_stats',
      stats_packed: brotliCompressSync(JSON.stringify(currentCountryStats(undefined))),
      version: 1,
    };
    const marks: Record<string, { seq: string; at: number }> = {};
    const at = clock.now().getTime() - 60_000;
    const mark = (i: number) => `shardId-00000001700000000000-${String(i).padStart(8, '0')}`;
    let i = 0;
    // Every mark's text has the same length: add them by the hundred, then one by one to the size wanted.
    for (const step of [100, 1])
      for (;;) {
        const next = { ...marks };
        for (let j = 0; j < step; j++) next[mark(i + j)] = { seq: `4${'0'.repeat(20)}`, at };
        if (itemBytes({ ...item, folded: JSON.stringify(next) }) > bytes) break;
        Object.assign(marks, next);
        i += step;
      }
    item.folded = JSON.stringify(marks);
    await t.client.send(new PutCommand({ TableName: t.tableName, Item: item }));
  }

  test('a batch that fails is counted (GuardBatchFailures), logged with its cause and thrown, to be retried', async () => {
    const t = await table();
    t.faults.inject({ operation: 'TransactWriteItems', kind: 'internal', timing: 'before' });
    await expect(t.handle({ Records: gbBatch(1, 3), shardId: SHARD })).rejects.toThrow();
    expect(t.metrics.total(METRIC.guardBatchFailures)).toBe(1);
    expect(t.logs).toContainEqual(
      expect.objectContaining({
        level: 'error',
        event: 'guard.batch_failed',
        fields: expect.objectContaining({ cause: 'error', records: 3 }),
      }),
    );
    // Retried, it goes through: nothing more is counted.
    await t.handle({ Records: gbBatch(1, 3), shardId: SHARD });
    expect(t.metrics.total(METRIC.guardBatchFailures)).toBe(1);
    expect(await counted(t)).toEqual([3, 3]);
  });

  test('an aggregate past its 64 KB budget is reported (GuardItemsOverBudget) and still written', async () => {
    const t = await table();
    await t.handle({ Records: gbBatch(1, 2), shardId: SHARD });
    expect(t.metrics.total(METRIC.guardItemsOverBudget)).toBe(0);

    const other = await table();
    await grownAggregates(other, GUARD_ITEM_BUDGET_BYTES + 4096);
    await other.handle({ Records: gbBatch(1, 2), shardId: SHARD });
    expect(other.metrics.total(METRIC.guardItemsOverBudget)).toBe(1);
    expect(other.logs).toContainEqual(
      expect.objectContaining({
        event: 'guard.item_over_budget',
        fields: expect.objectContaining({ sk: 'STATS#GB', kind: 'stats', bytes: expect.any(Number) }),
      }),
    );
    expect(other.metrics.total(METRIC.guardBatchFailures)).toBe(0);
    expect((await counted(other))[0]).toBe(2);
  });

  test("an aggregate that would pass DynamoDB's 400 KB fails the batch before any write, as item_too_large", async () => {
    const t = await table();
    // Close enough that the mark of one more shard and three sends take it over (the aggregates are packed).
    await grownAggregates(t, DYNAMODB_ITEM_LIMIT_BYTES - 60);
    const before = await everything(t);
    const failed = t.handle({ Records: gbBatch(1, 3), shardId: SHARD });
    await expect(failed).rejects.toBeInstanceOf(GuardItemTooLargeError);
    expect(t.metrics.total(METRIC.guardBatchFailures)).toBe(1);
    expect(t.metrics.total(METRIC.guardItemsOverBudget)).toBeGreaterThanOrEqual(1);
    expect(t.logs).toContainEqual(
      expect.objectContaining({
        event: 'guard.batch_failed',
        fields: expect.objectContaining({ cause: 'item_too_large' }),
      }),
    );
    // Nothing of the batch was written: no aggregate holds it half.
    expect(await everything(t)).toEqual(before);
  });
});

test("the consumer reads each service's caps and level off its item: the strict rules run for strict services", async () => {
  const t = await table();
  const store = new DynamoGuardStore(t.client, t.tableName);
  const strictSid = `VA${'d'.repeat(32)}`;
  for (const [sid, level] of [
    [serviceSid, 'standard'],
    [strictSid, 'strict'],
  ])
    await t.client.send(
      new PutCommand({
        TableName: t.tableName,
        Item: {
          ...keys.service(sid!),
          guard_level: level,
          guard_safe_list: [],
          ...(level === 'strict' && { guard_caps: { GB: { hourlySends: 5 } } }),
        },
      }),
    );
  const batch = await store.load([], [serviceSid, strictSid]);
  expect([...batch.strict!]).toEqual([strictSid]);
  expect(Object.fromEntries(batch.caps!)).toEqual({ [strictSid]: { GB: { hourlySends: 5 } } });
});

test("a lift by hand while the consumer folds is kept: the consumer's state read before it is not written back", async () => {
  const t = await table();
  await t.handle({ Records: gbBatch(1, 6), shardId: SHARD });
  const stateKey = keys.guardCountry(serviceSid, 'GB');
  const lifts = async () => {
    const item = (await guardItems(t, serviceSid))[stateKey.sk] as { state: string };
    return (JSON.parse(item.state) as { lifted: Record<string, number> }).lifted;
  };
  // The consumer's side of a batch: it has read the state and its aggregates' version, and a rule changed the state.
  const consumer = new DynamoGuardStore(t.client, t.tableName);
  const batch = await consumer.load([{ scope: serviceSid, country: 'GB' }], []);
  const record = batch.countries.get(`${serviceSid}/GB`)!;
  record.state = { ...record.state, established: ['+447400'] };

  // The operator's lift, on a client that lets the consumer write right after the lift's first request: the lift's
  // state and its aggregates' version were two writes, and the consumer's landed between them.
  const adminClient = t.newClient();
  let consumerWrote: Awaited<ReturnType<DynamoGuardStore['save']>> | undefined;
  adminClient.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      if (!consumerWrote && JSON.stringify(args.input).includes(stateKey.sk))
        consumerWrote = await consumer.save(batch);
      return result;
    },
    { step: 'initialize', name: 'consumerWritesBetween' },
  );
  const until = new Date(clock.now().getTime() + 3_600_000);
  await new DynamoGuardAdmin(adminClient, t.tableName).unblock(serviceSid, '+447400', until);

  // The consumer's write was refused (its version was moved on with the lift); the lift holds.
  expect(consumerWrote).toMatchObject({ complete: false });
  expect(await lifts()).toEqual({ '+447400': until.getTime() });
  // Its batch again, as Lambda retries one: folded on the state with the lift.
  await t.handle({ Records: gbBatch(7, 2), shardId: SHARD });
  expect(await lifts()).toEqual({ '+447400': until.getTime() });
  expect(await counted(t)).toEqual([8, 8]);
});

test('a lift where the service has no aggregates yet makes a bare version; the first fold there keeps the lift', async () => {
  const t = await table();
  const until = new Date(clock.now().getTime() + 3_600_000);
  await new DynamoGuardAdmin(t.client, t.tableName).unblock(serviceSid, '+447400', until);
  const items = await guardItems(t, serviceSid);
  expect(items[keys.guardCountryStats(serviceSid, 'GB').sk]).toMatchObject({
    type: 'guard_stats',
    version: 1,
  });
  await t.handle({ Records: gbBatch(1, 3), shardId: SHARD });
  const state = (await guardItems(t, serviceSid))[keys.guardCountry(serviceSid, 'GB').sk] as {
    state: string;
  };
  expect((JSON.parse(state.state) as { lifted: object }).lifted).toEqual({ '+447400': until.getTime() });
  expect(await counted(t)).toEqual([3, 3]);
});

test('lifts by hand are bounded: ended ones go, so do those a new lift covers; past the bound a lift is refused', async () => {
  const t = await table();
  const admin = new DynamoGuardAdmin(t.client, t.tableName);
  const lifts = async () => {
    const item = (await guardItems(t, serviceSid))[keys.guardCountry(serviceSid, 'GB').sk] as {
      state: string;
    };
    return (JSON.parse(item.state) as { lifted: Record<string, number> }).lifted;
  };
  // A lift made `minutes` from now ends an hour after that.
  const until = (minutes: number) => new Date(clock.now().getTime() + minutes * 60_000 + LIFT_MS);
  await admin.unblock(serviceSid, '+447399', until(-61));
  for (let i = 0; i < MAX_LIFTED_PREFIXES; i++)
    await admin.unblock(serviceSid, `+447400${String(i).padStart(4, '0')}`, until(0));
  // The lift of an hour and a minute ago has ended: it took no room.
  const full = await lifts();
  expect(Object.keys(full)).toHaveLength(MAX_LIFTED_PREFIXES);
  expect(full['+447399']).toBeUndefined();

  // One more prefix would grow the state every send reads: refused, nothing changed.
  await expect(admin.unblock(serviceSid, '+447401', until(0))).rejects.toMatchObject({ code: 'too_many' });
  expect(await lifts()).toEqual(full);
  // A prefix lifted again takes no more room; a shorter one takes the place of those it covers.
  await admin.unblock(serviceSid, '+4474000000', until(1));
  expect(Object.keys(await lifts())).toHaveLength(MAX_LIFTED_PREFIXES);
  await admin.unblock(serviceSid, '+447400', until(2));
  expect(await lifts()).toEqual({ '+447400': until(2).getTime() });
});

test('lifts made at once all hold: each is written under the versions it read, read again when they moved', async () => {
  const t = await table();
  const admin = new DynamoGuardAdmin(t.client, t.tableName);
  const until = new Date(clock.now().getTime() + LIFT_MS);
  const prefixes = Array.from({ length: 6 }, (_, i) => `+44750000${i}`);
  await Promise.all(prefixes.map((prefix) => admin.unblock(serviceSid, prefix, until)));
  const item = (await guardItems(t, serviceSid))[keys.guardCountry(serviceSid, 'GB').sk] as { state: string };
  const lifted = (JSON.parse(item.state) as { lifted: Record<string, number> }).lifted;
  expect(Object.keys(lifted).sort()).toEqual(prefixes);
});
