/**
 * `npm run bench`'s count of the pumping guard's stream consumer (bench/guard-consumer.ts) on DynamoDB Local:
 * the real consumer over a service's traffic, a batch per batching window, one read a batch and a write per record
 * it touches, priced by DynamoDB's rules; and the bill's DynamoDB line includes it.
 */
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { costModel, PRICES } from '../../bench/cost';
import type { CountResults, OperationCount, PathCount } from '../../bench/counts';
import { countGuardConsumer, type GuardConsumerCount } from '../../bench/guard-consumer';
import {
  GUARD_BATCH_WINDOW_SECONDS,
  GUARD_TUMBLING_WINDOW_SECONDS,
} from '../../functions/core/guard/consumer';
import type { LatencyResults } from '../../bench/latency';
import type { RequestSummary } from '../../bench/meter';
import { evaluateTargets, guardConsumerLine } from '../../bench/report';
import { distribution } from '../../bench/stats';
import { freshTable, type TestTable } from '../support/table';

let table: TestTable;

beforeAll(async () => {
  table = await freshTable('bench-guard');
});
afterAll(() => table?.close());

/** The bench's database handle over this suite's table. */
const benchDb = () => ({
  endpoint: table.endpoint,
  tableName: table.name,
  documents: table.documents,
  masterKey: 'bench-guard-consumer-test',
  accounts: dynamoAccounts(table.documents, table.name, { apiKeyTag: 'bench-guard-consumer-test' }),
  stop: async () => undefined,
});

let counted: GuardConsumerCount;

test('the consumer over a service traffic: a read a batch and a write a record, priced per send', async () => {
  const db = benchDb();
  const window = GUARD_BATCH_WINDOW_SECONDS;
  counted = await countGuardConsumer(db, {
    sendsPerSecond: 5,
    warmupSeconds: 2 * window,
    measuredSeconds: 2 * window,
  });
  expect(counted).toMatchObject({ sends: 2 * window * 5, batches: 2, sendsPerSecond: 5, services: 1 });
  // Every stream record the real consumer receives for a send is in the bill: the send, most sends' receipts,
  // three quarters' checked codes (those of the window's sends and of the sends just before it).
  const { send, delivered = 0, conversion = 0 } = counted.records;
  expect(send).toBe(counted.sends);
  expect(delivered / counted.sends).toBeGreaterThan(0.85);
  expect(conversion / counted.sends).toBeGreaterThan(0.6);
  const perSend = (calls: number) => Math.round((calls / counted.sends) * 10_000) / 10_000;
  // One read a batch; a write per record it touches (the service's 5 countries and its scope; a deployment of one
  // service keeps no global scope): a conditional PutItem when no state changed, a transaction of two when one did.
  const { BatchGetItem, PutItem = 0, TransactWriteItems = 0 } = counted.perSend.byKind;
  expect(BatchGetItem).toBe(perSend(2));
  expect(PutItem + TransactWriteItems).toBeCloseTo(perSend(2 * 6), 3);
  expect(PutItem).toBeGreaterThan(0);
  expect(counted.perSend.conditionFailures).toBe(0);
  // Each record written is at least 1 unit (a packed item under 1 KB).
  expect(counted.perSend.wru).toBeGreaterThanOrEqual(perSend(2 * 6) - 0.001);
  expect(counted.perSend.rru).toBeGreaterThan(0);
  expect(counted.largestItemBytes).toBeGreaterThan(100);
  expect(counted.largestItemBytes).toBeLessThan(64 * 1024);
});

let slow: GuardConsumerCount;

test('a rate under one send a second: its sends evenly spaced, each counted once, on the same table again', async () => {
  const db = benchDb();
  const window = GUARD_BATCH_WINDOW_SECONDS;
  slow = await countGuardConsumer(db, {
    sendsPerSecond: 0.5,
    warmupSeconds: 2 * window,
    measuredSeconds: 2 * window,
  });
  expect(slow).toMatchObject({ sends: window, batches: 2, sendsPerSecond: 0.5 });
  expect(slow.records.send).toBe(slow.sends);
  // The consumer's units are per batch: per send they are higher where a batch holds fewer sends.
  expect(slow.perBatch!.wru).toBeCloseTo((slow.perSend.wru * slow.sends) / slow.batches, 1);
  expect(slow.perSend.wru).toBeGreaterThan(counted.perSend.wru);
});

test('a whole tumbling window metered: batches that change no state carry their events, written a few times', async () => {
  // Warmed two hours as `npm run bench` warms it (the state settled), then one 15-minute window.
  const windowed = await countGuardConsumer(benchDb(), {
    sendsPerSecond: 0.5,
    warmupSeconds: 7200,
    measuredSeconds: GUARD_TUMBLING_WINDOW_SECONDS,
  });
  const batches = GUARD_TUMBLING_WINDOW_SECONDS / GUARD_BATCH_WINDOW_SECONDS;
  expect(windowed.batches).toBe(batches);
  expect(windowed.perBatch!.byKind.BatchGetItem).toBe(1);
  // Every batch read; the records (5 countries and the scope) written every 5 minutes and at the window's end,
  // not at each of its 30 batches.
  const { PutItem = 0, TransactWriteItems = 0 } = windowed.perBatch!.byKind;
  expect((PutItem + TransactWriteItems) * batches).toBeGreaterThanOrEqual(6);
  expect((PutItem + TransactWriteItems) * batches).toBeLessThanOrEqual(6 * 4);
});

let withGlobal: GuardConsumerCount;

test('a deployment of four services: the consumer writes the global scope of each country too', async () => {
  const window = GUARD_BATCH_WINDOW_SECONDS;
  withGlobal = await countGuardConsumer(benchDb(), {
    sendsPerSecond: 0.5,
    warmupSeconds: 2 * window,
    measuredSeconds: 2 * window,
    services: 4,
  });
  expect(withGlobal).toMatchObject({ sends: slow.sends, services: 4 });
  const { PutItem = 0, TransactWriteItems = 0 } = withGlobal.perBatch!.byKind;
  const { PutItem: alone = 0, TransactWriteItems: aloneTransactions = 0 } = slow.perBatch!.byKind;
  // The same traffic: five records more a batch (one per country) where all five countries sent.
  expect(PutItem + TransactWriteItems).toBeGreaterThan(alone + aloneTransactions);
  expect(withGlobal.perSend.wru).toBeGreaterThan(slow.perSend.wru);
  expect(withGlobal.perSend.rru).toBeGreaterThan(slow.perSend.rru);
});

/** Just enough of a bench run's counts and timings for the cost model: one request of each kind per call. */
function benchFigures(): { counts: CountResults; latency: LatencyResults } {
  const summary = (rru: number, wru: number): RequestSummary => ({
    byKind: { UpdateItem: 1 },
    requests: 1,
    conditionFailures: 0,
    reportedCapacity: rru + wru,
    rru,
    wru,
  });
  const operation = (name: string): OperationCount => ({
    operation: name,
    outcome: '200',
    runs: 1,
    withAuth: summary(1, 1),
    withoutAuth: summary(1, 1),
    logBytes: 100,
  });
  const path: PathCount = {
    path: 'first channel delivers',
    runs: 1,
    deliveryStatus: 'DELIVERED',
    tasks: { DeliverOverChannel: 1 },
    stateTransitions: 6,
    waits: 1,
    waitSeconds: 8,
    statusReads: 1,
    receipts: 1,
    executionMs: 1000,
    taskRequests: summary(1, 1),
    receiptRequests: summary(1, 1),
    readRequests: summary(0.5, 0),
    total: summary(2.5, 2),
    logBytes: 100,
  };
  const d = distribution([5]);
  const timing = (operation: string) => ({
    operation,
    handler: d,
    dynamo: d,
    overhead: d,
    requestsPerCall: {},
    ratioP50: 1,
    ratioPerCallMedian: 1,
    rawDynamoP50: 1,
    ratioToRaw: 1,
  });
  return {
    counts: {
      operations: ['send accepted', 'check, right code', 'fetch'].map(operation),
      paths: [path],
    },
    latency: {
      iterations: 1,
      warmup: 0,
      operations: ['send', 'check, right code', 'fetch'].map(timing),
      raw: [],
      tasks: ['deliver', 'receipt', 'after-wait'].map((task) => ({ task, duration: d, dynamo: d })),
    },
  };
}

test("the bill's DynamoDB line includes the consumer's units, and the report says at which rate", () => {
  const { counts, latency } = benchFigures();
  const without = costModel(counts, latency);
  const withGuard = costModel({ ...counts, guardConsumer: counted }, latency);
  const dynamo = (cost: typeof without) => cost.lines.find((line) => line.service === 'DynamoDB on-demand')!;
  const guardUsd =
    PRICES.dynamoDbPerMillionWru * counted.perSend.wru + PRICES.dynamoDbPerMillionRru * counted.perSend.rru;
  expect(dynamo(withGuard).projected - dynamo(without).projected).toBeCloseTo(guardUsd, 1);
  expect(withGuard.perVerification.wru - without.perVerification.wru).toBeCloseTo(counted.perSend.wru, 2);
  expect(withGuard.perVerification.guardConsumer).toMatchObject({
    wru: counted.perSend.wru,
    rru: counted.perSend.rru,
  });
  expect(dynamo(withGuard).basis).toContain("the guard consumer's at 5 sends/s, 12,960,000 a month");

  const report = guardConsumerLine(counted);
  expect(report).toContain("The guard's stream consumer in the DynamoDB line");
  expect(report).toContain('per million sends');
});

test('the bill states its monthly volume, prices the consumer at its rate, and gives the others beside it', () => {
  const { counts, latency } = benchFigures();
  const cost = costModel(
    { ...counts, guardConsumer: slow, guardConsumerByRate: [slow, counted, withGlobal] },
    latency,
  );
  const fast = costModel({ ...counts, guardConsumer: counted }, latency);
  // 0.5 sends a second over a 30-day month.
  expect(cost.monthlyVerifications).toBe(1_296_000);
  const [low, high, global] = cost.guardByVolume!;
  expect(low).toMatchObject({
    monthlyVerifications: 1_296_000,
    totalFourServices: cost.totalFourServices.projected,
  });
  // At the other volume, the same bill with that volume's consumer.
  expect(high!.monthlyVerifications).toBe(12_960_000);
  expect(high!.totalFourServices).toBeCloseTo(fast.totalFourServices.projected, 1);
  expect(high!.totalFourServices).toBeLessThan(low!.totalFourServices);

  const bill = evaluateTargets(counts, { ...latency, operations: [] }, undefined, cost)[0]!;
  expect(bill.target).toContain('projected AWS bill per million verifications at 1,296,000 a month');
  expect(bill.note).toContain(
    `$${cost.perVerification.guardConsumer!.usd.toFixed(2)} of it is the guard's stream consumer`,
  );
  expect(bill.note).toContain(`$${high!.totalFourServices.toFixed(2)} at 12,960,000`);
  // The deployment of four services at the bill's volume: said apart, not as another volume.
  expect(global).toMatchObject({ monthlyVerifications: 1_296_000, services: 4 });
  expect(global!.totalFourServices).toBeGreaterThan(low!.totalFourServices);
  expect(bill.note).toContain(
    `$${global!.totalFourServices.toFixed(2)} in a deployment of 4 services or more, where the consumer keeps the global scope`,
  );
  expect(bill.note).not.toContain(`$${global!.totalFourServices.toFixed(2)} at 1,296,000`);
});
