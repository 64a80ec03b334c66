/**
 * The pumping guard's stream consumer in the bill: its DynamoDB requests per send, counted on DynamoDB Local by
 * running the real consumer (`consumeGuardEvents` over `DynamoGuardStore`, as the GuardSignals Lambda runs it)
 * over a service's traffic, one batch per batching window (`GUARD_BATCH_WINDOW_SECONDS`), as the event source
 * makes them.
 *
 * The consumer's cost is per batch, not per send: each batch reads the aggregates and the state of every
 * (scope, country) record its stream records touch; it rewrites each of those records' aggregates whole (with its
 * state, in a transaction, when that changed) when a state changed, when the events it carries since its last
 * write are 5 minutes old or a thousand, and at the end of the event source's 15-minute tumbling window
 * (`consumeGuardWindowBatch`). So the figure per send depends on the traffic's rate (sends a batch: any rate, whole
 * or not) and on the items' sizes, which grow with the ranges seen until their bounds. The aggregates are first
 * warmed (unmetered) for `warmupSeconds` of the same traffic, then `measuredSeconds` of batches (whole tumbling
 * windows) are metered and priced by DynamoDB's rules from item sizes (bench/meter.ts). The warm-up runs the same
 * consumer on a store in memory, whose records are then stored as they are. A send here is a verification: its
 * send, its delivery receipt and, for the checked share, its checked code (each a stream record the consumer
 * folds).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { DynamoGuardStore } from '../functions/adapters/dynamodb/guard';
import { keys } from '../functions/adapters/dynamodb/keys';
import {
  GLOBAL_SCOPE,
  GUARD_BATCH_WINDOW_SECONDS,
  GUARD_TUMBLING_WINDOW_SECONDS,
  consumeGuardEvents,
  consumeGuardWindowBatch,
  countryKey,
  type CountryKey,
  type CountryRecord,
  type GuardBatch,
  type GuardSignalStore,
  type PositionedGuardEvent,
  type SavedRecords,
  type ScopeRecord,
} from '../functions/core/guard/consumer';
import { DynamoMeter, itemSize, summarize, type RequestSummary } from './meter';
import { addTable, createAccount, type BenchDb } from './setup';
import { round } from './stats';

export interface GuardConsumerPlan {
  /** Sends a second of the one service (spread over `COUNTRIES`), evenly spaced; need not be whole. */
  sendsPerSecond: number;
  /** Traffic folded before the metered window, in memory: the aggregates grow toward their working size. */
  warmupSeconds: number;
  measuredSeconds: number;
  /**
   * The services of the deployment (its own table), the first of them sending: below 4 the consumer keeps no
   * global scope (consumeGuardEvents), so 1 and 4 price a deployment without and with it. Default 1.
   */
  services?: number;
}

export interface GuardConsumerCount {
  sendsPerSecond: number;
  /** The deployment's services (one of them sending); absent in results of before it was kept (global kept). */
  services?: number;
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
  /** The same per batch (absent from results of before it was kept). */
  perBatch?: RequestSummary;
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

/**
 * A service's stream records, one batching window at a time: the sends of the window (evenly spaced at any rate:
 * send k at k / rate seconds), then, as they come, their receipts (2 to 10 s later) and checked codes (10 to 40 s),
 * each in the batch of the second it comes in. The same traffic every run (a fixed seed).
 */
function guardTraffic(
  serviceSid: string,
  sendsPerSecond: number,
  start: number,
): (t: number) => { events: PositionedGuardEvent[]; sends: number } {
  const random = generator(7);
  const pending = new Map<number, PositionedGuardEvent[]>();
  let sequence = 0;
  /** The next send's index from the start. */
  let next = 0;
  return (t) => {
    const events: PositionedGuardEvent[] = [];
    let sends = 0;
    for (let s = t; s < t + GUARD_BATCH_WINDOW_SECONDS; s++) {
      events.push(...(pending.get(s) ?? []));
      pending.delete(s);
      for (; Math.floor((next * 1000) / sendsPerSecond) < (s + 1) * 1000; next++) {
        const { country, e164 } = mobile(random);
        const sentAt = start + Math.floor((next * 1000) / sendsPerSecond);
        sends += 1;
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
    return { events, sends };
  };
}

/**
 * The warm-up's store: the records kept as the consumer left them. The memory adapter copies every record on each
 * load and save (its callers must not share them), which took most of an hour's warm-up at 10 sends/s; here
 * nothing else holds them, and nothing writes between two batches.
 */
class WarmupStore implements GuardSignalStore {
  readonly countries = new Map<string, CountryRecord>();
  readonly scopes = new Map<string, ScopeRecord>();

  async load(countries: CountryKey[], scopes: string[]): Promise<GuardBatch> {
    const batch: GuardBatch = { countries: new Map(), scopes: new Map() };
    for (const { scope, country } of countries) {
      const record = this.countries.get(countryKey(scope, country));
      if (record) batch.countries.set(countryKey(scope, country), record);
    }
    for (const scope of scopes) {
      const record = this.scopes.get(scope);
      if (record) batch.scopes.set(scope, record);
    }
    return batch;
  }

  /** The deployment's, as the stored run will count it. */
  constructor(readonly servicesUpTo: (limit: number) => Promise<number>) {}

  async save(batch: GuardBatch): Promise<SavedRecords> {
    for (const [key, record] of batch.countries) this.countries.set(key, { ...record, version: 1 });
    for (const [key, record] of batch.scopes) this.scopes.set(key, { ...record, version: 1 });
    return { complete: true, written: new Set([...batch.countries.keys(), ...batch.scopes.keys()]) };
  }
}

export async function countGuardConsumer(db: BenchDb, plan: GuardConsumerPlan): Promise<GuardConsumerCount> {
  // A table of its own: its directory holds the deployment's services alone.
  const table = await addTable(db);
  const services = plan.services ?? 1;
  const { serviceSid } = await createAccount(table, 0);
  for (let i = 1; i < services; i++) await createAccount(table, 0);
  const meter = new DynamoMeter('guardConsumer');
  const client = meter.attach(createDocumentClient({ endpoint: db.endpoint }));
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = start;
  const clock = { now: () => new Date(now) };
  // Warmed in memory (the same fold, no DynamoDB round trips: hours of traffic in seconds), then stored.
  const dynamo = new DynamoGuardStore(client, table.tableName);
  const memory = new WarmupStore((limit) => dynamo.servicesUpTo(limit));
  let deps: { store: GuardSignalStore; clock: typeof clock } = { store: memory, clock };
  const traffic = guardTraffic(serviceSid, plan.sendsPerSecond, start);
  let sends = 0;
  let batches = 0;
  const records: Record<string, number> = {};
  // The metered batches as the event source makes them: within tumbling windows (from the metered span's start),
  // the events whose aggregates wait carried from batch to batch (Lambda's window state), the window's last batch
  // writing everything; so is the span's last batch, which ends a window when the span is whole windows.
  let carried: PositionedGuardEvent[] = [];
  const meteredEnd = plan.warmupSeconds + plan.measuredSeconds;
  /** One batching window from second `t`: its records, then one batch. */
  const window = async (t: number, metered = false) => {
    const { events, sends: sent } = traffic(t);
    now = start + (t + GUARD_BATCH_WINDOW_SECONDS) * 1000;
    if (!metered) {
      await consumeGuardEvents(deps, events);
      return;
    }
    sends += sent;
    for (const { kind } of events) records[kind] = (records[kind] ?? 0) + 1;
    const next = t + GUARD_BATCH_WINDOW_SECONDS;
    const final = (next - plan.warmupSeconds) % GUARD_TUMBLING_WINDOW_SECONDS === 0 || next >= meteredEnd;
    carried = (await consumeGuardWindowBatch(deps, carried, events, final)).carry;
  };

  try {
    for (let t = 0; t < plan.warmupSeconds; t += GUARD_BATCH_WINDOW_SECONDS) await window(t);
    // Stored as the warm-up left them, in this count's own table (nothing there yet).
    const warmed: GuardBatch = { countries: new Map(), scopes: new Map() };
    for (const [key, record] of memory.countries) warmed.countries.set(key, { ...record, version: 0 });
    for (const [key, record] of memory.scopes) warmed.scopes.set(key, { ...record, version: 0 });
    if (!(await dynamo.save(warmed)).complete)
      throw new Error('guard consumer bench: the warmed aggregates were not stored');
    deps = { store: dynamo, clock };
    // Priced from here: every write is bracketed by reads of the items it touches (slower, unmetered).
    meter.probe = db.documents;
    meter.reset();
    for (let t = plan.warmupSeconds; t < meteredEnd; t += GUARD_BATCH_WINDOW_SECONDS) {
      await window(t, true);
      batches += 1;
    }
    const total = summarize(meter.snapshot());
    const divided = (by: number): RequestSummary => {
      const per = (value: number) => round(value / by, 4);
      return {
        byKind: Object.fromEntries(Object.entries(total.byKind).map(([kind, calls]) => [kind, per(calls)])),
        requests: per(total.requests),
        conditionFailures: per(total.conditionFailures),
        reportedCapacity: per(total.reportedCapacity),
        rru: per(total.rru),
        wru: per(total.wru),
      };
    };
    return {
      sendsPerSecond: plan.sendsPerSecond,
      services,
      countries: COUNTRIES.map((c) => c.country),
      checkedShare: CHECKED_SHARE,
      receiptShare: RECEIPT_SHARE,
      warmupSeconds: plan.warmupSeconds,
      measuredSeconds: plan.measuredSeconds,
      sends,
      records,
      batches,
      perSend: divided(sends),
      perBatch: divided(batches),
      largestItemBytes: await largestGuardItem(db.documents, table.tableName, serviceSid),
    };
  } finally {
    client.destroy();
  }
}
