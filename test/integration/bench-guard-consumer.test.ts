/**
 * `npm run bench`'s count of the pumping guard's stream consumer (bench/guard-consumer.ts) on DynamoDB Local:
 * the real consumer over a service's traffic, a batch a second, one read and one transaction a batch priced by
 * DynamoDB's rules; and the bill's DynamoDB line includes it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/client';
import { costModel, PRICES } from '../../bench/cost';
import type { CountResults, OperationCount, PathCount } from '../../bench/counts';
import { countGuardConsumer, type GuardConsumerCount } from '../../bench/guard-consumer';
import type { LatencyResults } from '../../bench/latency';
import type { RequestSummary } from '../../bench/meter';
import { guardConsumerLine } from '../../bench/report';
import { distribution } from '../../bench/stats';
import { createTable } from '../../local/table';
import { dynamoEndpoint } from '../support/harness';

let documents: DynamoDBDocumentClient;
let tableName: string;

beforeAll(async () => {
  tableName = `otp-bench-guard-${randomBytes(4).toString('hex')}`;
  const raw = createDynamoClient({ endpoint: dynamoEndpoint() });
  await createTable(raw, tableName);
  raw.destroy();
  documents = createDocumentClient({ endpoint: dynamoEndpoint() });
});
afterAll(() => documents.destroy());

let counted: GuardConsumerCount;

test('the consumer over a service traffic: a read and a transaction a batch, priced per send', async () => {
  const db = {
    endpoint: dynamoEndpoint(),
    tableName,
    documents,
    masterKey: 'bench-guard-consumer-test',
    accounts: dynamoAccounts(documents, tableName, { apiKeyTag: 'bench-guard-consumer-test' }),
    stop: async () => undefined,
  };
  counted = await countGuardConsumer(db, { sendsPerSecond: 5, warmupSeconds: 5, measuredSeconds: 4 });
  expect(counted).toMatchObject({ sends: 20, batches: 4, sendsPerSecond: 5 });
  // One BatchGetItem and one TransactWriteItems a batch, none refused: a batch of 5 sends is 0.2 of each a send.
  expect(counted.perSend.byKind).toEqual({ BatchGetItem: 0.2, TransactWriteItems: 0.2 });
  expect(counted.perSend.conditionFailures).toBe(0);
  // Each batch rewrites at least its own and the global country items, twice the units in a transaction.
  expect(counted.perSend.wru).toBeGreaterThanOrEqual((2 * 2 * 2) / 5);
  expect(counted.perSend.rru).toBeGreaterThan(0);
  expect(counted.largestItemBytes).toBeGreaterThan(1024);
  expect(counted.largestItemBytes).toBeLessThan(64 * 1024);
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
  expect(dynamo(withGuard).basis).toContain("the guard consumer's at 5 sends/s");

  const report = guardConsumerLine(counted);
  expect(report).toContain("The guard's stream consumer in the DynamoDB line");
  expect(report).toContain('per million sends');
});
