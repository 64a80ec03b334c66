/**
 * The pumping guard's stream consumer in the bill: its DynamoDB requests per send, counted on DynamoDB Local by
 * running the real consumer (`consumeGuardEvents` over `DynamoGuardStore`, as the GuardSignals Lambda runs it)
 * over a service's traffic, one batch per batching window (`GUARD_BATCH_WINDOW_SECONDS`), as the event source
 * makes them.
 *
 * The consumer's cost is per batch, not per send: each batch reads and rewrites, in one transaction, the
 * aggregates and the state of every (scope, country) it touches, whole. So the figure depends on the traffic's
 * rate (sends a batch) and on the items' sizes, which grow with the ranges seen until their bounds. The
 * aggregates are first warmed (unmetered) for `warmupSeconds` of the same traffic, then a window is metered
 * and priced by DynamoDB's rules from item sizes (bench/meter.ts). The warm-up runs the same consumer on the
 * in-memory store, whose records are then stored as they are. A send here is a verification: its send, its
 * delivery receipt and, for the checked share, its checked code (each a stream record the consumer folds).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { DynamoGuardStore } from '../functions/adapters/dynamodb/guard';
import { keys } from '../functions/adapters/dynamodb/keys';
import { MemoryGuardStore } from '../functions/adapters/memory/guard';
import {
  GLOBAL_SCOPE,
  GUARD_BATCH_WINDOW_SECONDS,
  consumeGuardEvents,
  countryKey,
  type GuardBatch,
  type GuardSignalStore,
  type PositionedGuardEvent,
} from '../functions/core/guard/consumer';
import { DynamoMeter, itemSize, summarize, type RequestSummary } from './meter';
import { createAccount, type BenchDb } from './setup';
import { round } from './stats';

export interface GuardConsumerPlan {
  /** Sends a second of the one service (spread over `COUNTRIES`). */
  sendsPerSecond: number;
  /** Traffic folded before the metered window, in memory: the aggregates grow toward their working size. */
  warmupSeconds: number;
  measuredSeconds: number;
}

export interface GuardConsumerCount {
  sendsPerSecond: number;
  countries: string[];
  /** Of the sends, the share whose code is checked (one more stream record each). */
  checkedShare: number;
  /** Of the sends, the share with a delivery receipt (one more stream record each). */
  receiptShare: number;
  warmupSeconds: number;
  measuredSeconds: number;
  /** In the metered window. */
  sends: number;
  /** The stream records the metered batches folded, by kind (`send`, `delivered`, `conversion`). */
  records: Record<string, number>;
  batches: number;
  /** Per send (and its checked code): requests, RRU and WRU by DynamoDB's rules from item sizes. */
  perSend: RequestSummary;
  /** The largest guard item at the end (bytes): what each rewrite of it costs grows with it. */
  largestItemBytes: number;
}

/** A service's traffic over mobile numbers of whole countries, spread as real users are. */
const COUNTRIES: { country: string; prefix: string; digits: number; share: number }[] = [
  { country: 'US', prefix: '+1', digits: 10, share: 0.35 },
  { country: 'IN', prefix: '+919', digits: 9, share: 0.25 },
  { country: 'GB', prefix: '+447', digits: 9, share: 0.15 },
  { country: 'DE', prefix: '+4915', digits: 9, share: 0.15 },
  { country: 'BR', prefix: '+55119', digits: 8, share: 0.1 },
];
const CHECKED_SHARE = 0.75;
/** Most sends get a receipt seconds later (the guard counts a prompt one, guard.md); the rest none. */
const RECEIPT_SHARE = 0.95;
const SHARD = 'shardId-00000001700000000000-bench';

/** A fixed-seed generator: the same traffic every run. */
function generator(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

function mobile(random: () => number): { country: string; e164: string } {
  let pick = random();
  const entry = COUNTRIES.find((c) => (pick -= c.share) < 0) ?? COUNTRIES[0]!;
  let national = '';
  // US: area codes and exchanges never start with 0 or 1.
  for (let i = 0; i < entry.digits; i++)
    national += String(
      entry.country === 'US' && (i === 0 || i === 3)
        ? 2 + Math.floor(random() * 8)
        : Math.floor(random() * 10),
    );
  return { country: entry.country, e164: `${entry.prefix}${national}` };
}

/** The largest guard item of the service and of the countries' global partitions. */
async function largestGuardItem(client: DynamoDBDocumentClient, tableName: string, serviceSid: string) {
  const partitions = [
    keys.guardScope(serviceSid).pk,
    ...COUNTRIES.map(({ country }) => keys.guardCountry(GLOBAL_SCOPE, country).pk),
  ];
  let largest = 0;
  for (const pk of partitions) {
    const { Items = [] } = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
      }),
    );
    for (const item of Items) largest = Math.max(largest, itemSize(item));
  }
  return largest;
}

export async function countGuardConsumer(db: BenchDb, plan: GuardConsumerPlan): Promise<GuardConsumerCount> {
  const { serviceSid } = await createAccount(db, 0);
  const meter = new DynamoMeter('guardConsumer');
  const client = meter.attach(createDocumentClient({ endpoint: db.endpoint }));
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = start;
  const clock = { now: () => new Date(now) };
  // Warmed in memory (the same fold, no DynamoDB round trips: an hour of traffic in seconds), then stored.
  const memory = new MemoryGuardStore();
  const dynamo = new DynamoGuardStore(client, db.tableName);
  let deps = { store: memory as GuardSignalStore, clock };
  const random = generator(7);
  // Receipts come 2 to 10 s after their send, checked codes 10 to 40 s: each waits for its second's batch.
  const pending = new Map<number, PositionedGuardEvent[]>();
  let sequence = 0;
  let sends = 0;
  let batches = 0;
  const records: Record<string, number> = {};
  /** One batching window from second `t`: its sends, the checks that came in it, then one batch. */
  const window = async (t: number, metered = false) => {
    const events: PositionedGuardEvent[] = [];
    for (let s = t; s < t + GUARD_BATCH_WINDOW_SECONDS; s++) {
      const at = start + s * 1000;
      events.push(...(pending.get(s) ?? []));
      pending.delete(s);
      for (let i = 0; i < plan.sendsPerSecond; i++) {
        const { country, e164 } = mobile(random);
        const sentAt = at + Math.floor((i / plan.sendsPerSecond) * 1000);
        events.push({ kind: 'send', serviceSid, country, e164, at: sentAt, accepted: true, price: 600 });
        const later = (delay: number, event: PositionedGuardEvent) => {
          const list = pending.get(s + delay) ?? [];
          list.push(event);
          pending.set(s + delay, list);
        };
        if (random() < RECEIPT_SHARE) {
          const delay = 2 + Math.floor(random() * 9);
          later(delay, { kind: 'delivered', serviceSid, country, e164, at: sentAt + delay * 1000, sentAt });
        }
        if (random() < CHECKED_SHARE) {
          const delay = 10 + Math.floor(random() * 30);
          later(delay, { kind: 'conversion', serviceSid, country, e164, at: sentAt + delay * 1000, sentAt });
        }
      }
    }
    for (const event of events)
      event.position = { shard: SHARD, sequence: `4${String(++sequence).padStart(20, '0')}` };
    now = start + (t + GUARD_BATCH_WINDOW_SECONDS) * 1000;
    if (metered) for (const { kind } of events) records[kind] = (records[kind] ?? 0) + 1;
    await consumeGuardEvents(deps, events);
  };

  try {
    for (let t = 0; t < plan.warmupSeconds; t += GUARD_BATCH_WINDOW_SECONDS) await window(t);
    const warmed: GuardBatch = { countries: new Map(), scopes: new Map() };
    for (const scope of [serviceSid, GLOBAL_SCOPE])
      for (const { country } of COUNTRIES) {
        const record = memory.country(scope, country);
        if (record) warmed.countries.set(countryKey(scope, country), { ...record, version: 0 });
      }
    const scope = memory.scope(serviceSid);
    if (scope) warmed.scopes.set(serviceSid, { ...scope, version: 0 });
    if (!(await dynamo.save(warmed)).complete)
      throw new Error('guard consumer bench: the warmed aggregates were not stored');
    deps = { store: dynamo, clock };
    // Priced from here: every write is bracketed by reads of the items it touches (slower, unmetered).
    meter.probe = db.documents;
    meter.reset();
    const end = plan.warmupSeconds + plan.measuredSeconds;
    for (let t = plan.warmupSeconds; t < end; t += GUARD_BATCH_WINDOW_SECONDS) {
      await window(t, true);
      sends += plan.sendsPerSecond * GUARD_BATCH_WINDOW_SECONDS;
      batches += 1;
    }
    const total = summarize(meter.snapshot());
    const per = (value: number) => round(value / sends, 4);
    return {
      sendsPerSecond: plan.sendsPerSecond,
      countries: COUNTRIES.map((c) => c.country),
      checkedShare: CHECKED_SHARE,
      receiptShare: RECEIPT_SHARE,
      warmupSeconds: plan.warmupSeconds,
      measuredSeconds: plan.measuredSeconds,
      sends,
      records,
      batches,
      perSend: {
        byKind: Object.fromEntries(Object.entries(total.byKind).map(([kind, calls]) => [kind, per(calls)])),
        requests: per(total.requests),
        conditionFailures: per(total.conditionFailures),
        reportedCapacity: per(total.reportedCapacity),
        rru: per(total.rru),
        wru: per(total.wru),
      },
      largestItemBytes: await largestGuardItem(db.documents, db.tableName, serviceSid),
    };
  } finally {
    client.destroy();
  }
}
