/**
 * The local stand-in for Lambda's stream event source (local/stream-poller.ts) on DynamoDB Local's own stream.
 * Batching (the guard consumer's mode) gathers records for its interval after every read, as Lambda's batching
 * window does, yet reads a backlog on without waiting.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Logger } from '../../functions/adapters/logger';
import { StreamPoller } from '../../local/stream-poller';
import { eventually } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

const tables: TestTable[] = [];
const pollers: StreamPoller[] = [];
const logger: Logger = { log: () => undefined };

afterEach(async () => {
  await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
});
afterAll(() => {
  for (const table of tables) table.close();
});

/** A fresh table with a poller on it; `batches`: the size of each batch handed over, in order. */
async function polled(options: { intervalMs: number; batching?: boolean; handlerMs?: number }) {
  const { handlerMs = 0, ...pollerOptions } = options;
  const table = await freshTable('poller');
  tables.push(table);
  const batches: number[] = [];
  const poller = new StreamPoller({
    endpoint: table.endpoint,
    tableName: table.name,
    logger,
    ...pollerOptions,
    handle: async (event) => {
      batches.push(event.Records.length);
      await sleep(handlerMs);
    },
  });
  await poller.start();
  pollers.push(poller);
  const put = (i: number) =>
    table.documents.send(new PutCommand({ TableName: table.name, Item: { pk: `ITEM#${i}`, sk: 'A' } }));
  return { batches, put };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const total = (batches: number[]) => batches.reduce((sum, size) => sum + size, 0);

test('batching: a stream of records is gathered for the interval, not handed over read by read', async () => {
  const intervalMs = 400;
  // A handler that takes 30 ms (a function's work) while a write lands every 10 ms or so: a poller that read
  // again at once after records would find more each time and hand over a small batch per read (dozens); one that
  // gathers hands over one batch per interval (fewer than 100 records each, so no full page reads on).
  const { batches, put } = await polled({ intervalMs, batching: true, handlerMs: 30 });
  const started = Date.now();
  let written = 0;
  while (Date.now() - started < 1_500) {
    await put(written++);
    await sleep(8);
  }
  // The bound follows what the writes took, longer on a loaded machine.
  const writing = Date.now() - started;
  await eventually(() => Promise.resolve(total(batches) === written ? true : undefined), 10_000);
  expect(batches.length).toBeLessThanOrEqual(Math.ceil(writing / intervalMs) + 2);
  expect(Math.max(...batches)).toBeLessThan(100);
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
  // Full pages, give or take the reads that met the writes still coming: on a loaded machine the first reads may
  // catch the backlog's first records (runs read 99 then 100s; a CI run 5 batches), which the time bound above does
  // not mind. A poller handing over read by read would give dozens.
  expect(batches.length).toBeLessThanOrEqual(6);
  expect(Math.max(...batches)).toBeGreaterThanOrEqual(90);
});

test('filters: only the records a pattern matches are handed over; a read with none invokes nothing', async () => {
  const table = await freshTable('poller');
  tables.push(table);
  const handed: string[][] = [];
  const poller = new StreamPoller({
    endpoint: table.endpoint,
    tableName: table.name,
    logger,
    filters: [{ dynamodb: { NewImage: { kind: { S: ['wanted'] } } } }],
    handle: async (event) => {
      handed.push(event.Records.map((record) => record.dynamodb?.NewImage?.pk?.S ?? ''));
    },
  });
  await poller.start();
  pollers.push(poller);
  const put = (pk: string, kind: string) =>
    table.documents.send(new PutCommand({ TableName: table.name, Item: { pk, sk: 'A', kind } }));
  for (let i = 0; i < 5; i++) await put(`OTHER#${i}`, 'other');
  // Past the poller's reads of the other records before the wanted one comes.
  await sleep(500);
  await put('WANTED#1', 'wanted');
  await eventually(() => Promise.resolve(handed.flat().includes('WANTED#1') ? true : undefined), 10_000);
  await sleep(300);
  expect(handed).toEqual([['WANTED#1']]);
});
