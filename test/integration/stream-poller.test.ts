/**
 * The local stand-in for Lambda's stream event source (local/stream-poller.ts) on DynamoDB Local's own stream.
 * Batching (the guard consumer's mode) gathers records for its interval after every read, as Lambda's batching
 * window does, yet reads a backlog on without waiting.
 */
import { randomBytes } from 'node:crypto';
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/client';
import type { Logger } from '../../functions/adapters/logger';
import { StreamPoller } from '../../local/stream-poller';
import { createTable } from '../../local/table';
import { dynamoEndpoint, eventually } from '../support/harness';

const raw = createDynamoClient({ endpoint: dynamoEndpoint() });
let documents: DynamoDBDocumentClient;
const pollers: StreamPoller[] = [];
const logger: Logger = { log: () => undefined };

beforeAll(() => {
  documents = createDocumentClient({ endpoint: dynamoEndpoint() });
});
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
});
afterAll(() => {
  documents.destroy();
  raw.destroy();
});

/** A fresh table with a poller on it; `batches`: the size of each batch handed over, in order. */
async function polled(options: { intervalMs: number; batching?: boolean }) {
  const tableName = `otp-poller-${randomBytes(6).toString('hex')}`;
  await createTable(raw, tableName);
  const batches: number[] = [];
  const poller = new StreamPoller({
    endpoint: dynamoEndpoint(),
    tableName,
    logger,
    ...options,
    handle: (event) => {
      batches.push(event.Records.length);
      return Promise.resolve();
    },
  });
  await poller.start();
  pollers.push(poller);
  const put = (i: number) =>
    documents.send(new PutCommand({ TableName: tableName, Item: { pk: `ITEM#${i}`, sk: 'A' } }));
  return { batches, put };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const total = (batches: number[]) => batches.reduce((sum, size) => sum + size, 0);

test('batching: a trickle of records is gathered for the interval, not handed over read by read', async () => {
  const intervalMs = 400;
  const { batches, put } = await polled({ intervalMs, batching: true });
  const started = Date.now();
  for (let i = 0; i < 20; i++) {
    await put(i);
    await sleep(40);
  }
  // About a second of writes, longer on a loaded machine: the bound follows what they took.
  const writing = Date.now() - started;
  await eventually(() => Promise.resolve(total(batches) === 20 ? true : undefined), 10_000);
  // Gathered for 400 ms at a time: one batch per interval the writes spanned, and the last one's. A poller that
  // never paused would hand over about one batch per write.
  expect(batches.length).toBeLessThanOrEqual(Math.ceil(writing / intervalMs) + 2);
});

test('batching: a backlog is read on at once, page after page, not one page per interval', async () => {
  const { batches, put } = await polled({ intervalMs: 5_000, batching: true });
  // Let the first (empty) read pass, so the backlog builds during one interval.
  await sleep(300);
  for (let i = 0; i < 250; i += 25) await Promise.all(Array.from({ length: 25 }, (_, k) => put(i + k)));
  const started = Date.now();
  await eventually(() => Promise.resolve(total(batches) === 250 ? true : undefined), 20_000);
  // Three pages of at most 100: read back to back after one interval at most, not three intervals.
  expect(Date.now() - started).toBeLessThan(2 * 5_000);
  expect(Math.max(...batches)).toBe(100);
});
