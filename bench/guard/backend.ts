/**
 * The bench's one coupling to the service and its pumping guard. A run sees only `GuardBench`: send a
 * verification at a time, check a code, run the guard's consumer at a time, fold a history. Underneath, every
 * send is the core's `sendVerification` (functions/core/send.ts) and every check the core's `checkVerification`
 * (functions/core/check.ts); the consumer is `consumeGuardEvents` (functions/core/guard/consumer.ts) on the
 * events the sends and checks made:
 * - memory (default): a `MemoryStore`, whose accepted sends, right checks and guard refusals are turned into
 *   `GuardEvent`s as the stream mapping would (functions/adapters/guard/stream.ts); the guard's aggregates live in
 *   `BenchGuardStore` (below), which skips the memory adapter's deep copies (half the run time) and can be
 *   copied after a warm-up, so one warm-up serves every scenario of a seed;
 * - DynamoDB Local (`--dynamodb`): `DynamoStore` and `DynamoGuardStore`, events from the table's own stream.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type GetRecordsCommandOutput,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { createDynamoClient } from '../../functions/adapters/dynamodb/client';
import { DynamoGuardStore } from '../../functions/adapters/dynamodb/guard';
import { DynamoStore } from '../../functions/adapters/dynamodb/store';
import { guardEventsFromStream } from '../../functions/adapters/guard/stream';
import { masterKeyRing } from '../../functions/adapters/keyring';
import { MemoryStore } from '../../functions/adapters/memory/store';
import { guardViewOf } from '../../functions/adapters/memory/guard';
import { checkVerification } from '../../functions/core/check';
import { OtpError } from '../../functions/core/errors';
import {
  GUARD_BATCH_WINDOW_SECONDS,
  GUARD_TUMBLING_WINDOW_SECONDS,
  consumeGuardEvents,
  consumeGuardWindowBatch,
  countryKey,
  type CountryKey,
  type CountryRecord,
  type GuardBatch,
  type SavedRecords,
  type GuardSignalStore,
  type ScopeRecord,
} from '../../functions/core/guard/consumer';
import type { GuardLevel, GuardView } from '../../functions/core/guard/model';
import { acceptedSendEvent, outcomeWeighed } from '../../functions/core/guard/events';
import type { GuardEvent } from '../../functions/core/guard/aggregates';
import type { Service } from '../../functions/core/model';
import { UNITS_PER_USD } from '../../functions/core/money';
import type { DeliveryStore, VerificationStore } from '../../functions/core/ports';
import { CHANNELS } from '../../functions/core/routing';
import { sendVerification, type SendDeps } from '../../functions/core/send';
import { DEFAULT_SETTINGS } from '../../functions/core/settings';
import { RecordingWorkflow, RememberingRandom, addTable, createAccount, type BenchDb } from '../setup';

/** The measured day's midnight; the run's times are ms from it. */
const DAY = new Date('2026-11-22T00:00:00.000Z').getTime();

export type SendOutcome = { ok: true; sid: string } | { ok: false; code: string };

/** A guard decision seen on the stream (a refusal, or at shadow a send it would have refused). */
interface SeenDecision {
  e164: string;
  reason: string;
  mode: string;
}

/** What a run of the consumer saw: its decisions, and the countries whose conversion drop it told of. */
interface Consumed {
  decisions: SeenDecision[];
  drops: { country: string; at: number }[];
}

/** One sent or checked code of a service's history, folded into the guard before the run. */
export interface HistoryEvent {
  at: number;
  e164: string;
  country: string;
  /** The code was checked right at this time (ms from midnight). */
  checkedAt?: number;
}

export interface GuardBench {
  serviceSid: string;
  /** A send (`callerCode`: with the caller's own code, as a backend that makes and checks its codes sends). */
  send(at: number, to: string, callerCode?: boolean): Promise<SendOutcome>;
  /** Checks the code of an accepted send (`wrong`: another code). */
  check(at: number, sid: string, wrong: boolean): Promise<void>;
  /** A receipt: the code of an accepted send reached the phone (the store's `markDelivered`, as on a receipt). */
  deliver(at: number, sid: string): Promise<void>;
  /** The guard's consumer on everything since its last run, at `at` (the batching window's end). */
  consume(at: number): Promise<Consumed>;
  /** Folds a history (sends and their checks), in 10-minute batches, as the guard would have seen it. */
  foldHistory(history: HistoryEvent[], until: number): Promise<void>;
  /**
   * A send to `to` at `at` whose code was checked, stored as the service stores any (its verification, the
   * number's log) but kept from the guard's events: a returning user's earlier visit, already in the history.
   */
  seedVerified(at: number, to: string): Promise<void>;
  /** The guard's state, to start another bench from (memory only). */
  snapshot?(): GuardSnapshot;
  close(): Promise<void>;
  requests(): number;
}

export interface BenchOptions {
  level: GuardLevel;
  /** `rules.allowedCountries` of the service (absent: every served country). */
  allowedCountries?: string[];
  /** Start from this guard state (a warm-up's snapshot). */
  guardState?: GuardSnapshot;
}

const SERVICE_SID = 'VA' + '0'.repeat(31) + '1';
/** The code a caller that makes its own codes sends (`Code`); the service never checks it. */
const CALLER_CODE = '482913';
const MASTER_KEY = 'guard-bench-master-key-guard-bench-master-key';
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** The service's delivery rules; `allowedCountries` is the allow-list (a field another change adds). */
function rulesOf(allowedCountries: string[] | undefined): Service['rules'] {
  return {
    blockedCountries: [],
    blockedPrefixes: [],
    ...(allowedCountries && { allowedCountries: [...allowedCountries] }),
  } as Service['rules'];
}

function sendDeps(store: VerificationStore, random: RememberingRandom): SendDeps {
  return {
    store,
    workflow: new RecordingWorkflow(),
    vault: new CryptoCodeVault(masterKeyRing(MASTER_KEY)),
    random,
    clock: { now: () => new Date(DAY) },
    settings: { ...DEFAULT_SETTINGS },
    allowedChannels: [...CHANNELS],
  };
}

/** The store a run writes: sends and checks, and receipts. */
type BenchStore = VerificationStore & Pick<DeliveryStore, 'markDelivered'>;

/**
 * The send, check and consumer calls over a store, a guard store and a source of events. `seedStore`: where
 * `seedVerified` writes (a store whose writes make no guard event). `windowed`: the consumer carries its events
 * within tumbling windows as deployed (`consumeGuardWindowBatch`); it needs a guard store that hands out copies
 * (the DynamoDB one), as the carried events are folded again over what is stored.
 */
function benchOver(
  store: BenchStore,
  guard: GuardSignalStore,
  serviceSid: string,
  drain: () => Promise<GuardEvent[]>,
  seedStore: VerificationStore = store,
  windowed = false,
): Pick<GuardBench, 'send' | 'check' | 'deliver' | 'consume' | 'foldHistory' | 'seedVerified'> {
  const random = new RememberingRandom();
  let carried: GuardEvent[] = [];
  const deps = sendDeps(store, random);
  const at = (time: number) => ({ now: () => new Date(DAY + time) });
  return {
    seedVerified: async (time, to) => {
      const clock = at(time);
      const sent = await sendVerification({ ...deps, store: seedStore, clock }, { serviceSid, to });
      const sid = sent.verification.sid;
      await checkVerification(
        { store: seedStore, vault: deps.vault, clock: at(time + 30_000) },
        { serviceSid, verificationSid: sid, code: random.codeOf(sid) },
      );
    },
    send: async (time, to, callerCode) => {
      try {
        const sent = await sendVerification(
          { ...deps, clock: at(time) },
          { serviceSid, to, ...(callerCode && { code: CALLER_CODE }) },
        );
        return { ok: true, sid: sent.verification.sid };
      } catch (error) {
        if (error instanceof OtpError) return { ok: false, code: error.code };
        throw error;
      }
    },
    check: async (time, sid, wrong) => {
      const code = random.codeOf(sid);
      const guess = wrong ? code.replace(/.$/, (d) => String((Number(d) + 1) % 10)) : code;
      await checkVerification(
        { store, vault: deps.vault, clock: at(time) },
        { serviceSid, verificationSid: sid, code: guess },
      ).catch(() => undefined);
    },
    deliver: async (time, sid) => {
      await store.markDelivered(sid, 'sms', new Date(DAY + time));
    },
    consume: async (time) => {
      const events = await drain();
      const seen: SeenDecision[] = [];
      for (const event of events)
        if (event.kind === 'send' && event.decision)
          seen.push({ e164: event.e164, reason: event.decision.reason, mode: event.decision.mode });
      const drops: Consumed['drops'] = [];
      const consumer = {
        store: guard,
        clock: at(time),
        onConversionDrop: (_scope: string, country: string) => drops.push({ country, at: time }),
      };
      if (windowed) {
        // The batch ending at `time` is its window's last when the next one falls in another window.
        const windowMs = GUARD_TUMBLING_WINDOW_SECONDS * 1000;
        const final =
          Math.floor((time - 1) / windowMs) !==
          Math.floor((time - 1 + GUARD_BATCH_WINDOW_SECONDS * 1000) / windowMs);
        carried = (await consumeGuardWindowBatch(consumer, carried, events, final)).carry;
      } else if (events.length > 0) await consumeGuardEvents(consumer, events);
      return { decisions: seen, drops };
    },
    foldHistory: async (history, until) => {
      const events: GuardEvent[] = [];
      for (const h of history) {
        const common = { serviceSid, e164: h.e164, country: h.country };
        events.push({ kind: 'send', ...common, at: DAY + h.at, accepted: true });
        if (h.checkedAt !== undefined && h.checkedAt < until)
          events.push({
            kind: 'conversion',
            ...common,
            at: DAY + h.checkedAt,
            sentAt: DAY + h.at,
            flagged: false,
          });
      }
      events.sort((a, b) => a.at - b.at);
      // Hour-long batches up to the last hour before the run, then five-minute batches: the baseline is learnt
      // the same, at a fraction of the consumer's calls; the rolling windows see the last hour by 5 minutes.
      const end = DAY + until;
      let i = 0;
      for (let from = events[0]?.at ?? end; i < events.length;) {
        const size = end - from > HOUR_MS ? HOUR_MS : 5 * MINUTE_MS;
        const batchEnd = Math.min(end, from + size);
        const batch: GuardEvent[] = [];
        while (i < events.length && events[i]!.at < batchEnd) batch.push(events[i++]!);
        if (batch.length > 0)
          await consumeGuardEvents({ store: guard, clock: { now: () => new Date(batchEnd) } }, batch);
        from = batchEnd;
        if (batchEnd >= end) break;
      }
    },
  };
}

// --- In memory ---------------------------------------------------------------------------------------------

export interface GuardSnapshot {
  countries: Map<string, CountryRecord>;
  scopes: Map<string, ScopeRecord>;
}

/**
 * The guard's aggregates in memory without the deep copies of `MemoryGuardStore` (the bench runs one consumer at
 * a time, so a write never loses its version check): the consumer works on the stored records themselves. The
 * view a send reads is the memory adapter's (`guardViewOf`).
 */
class BenchGuardStore implements GuardSignalStore {
  private readonly countries: Map<string, CountryRecord>;
  private readonly scopes: Map<string, ScopeRecord>;

  /** `strict`: the services at `strict` (the service's level lives on its item, which this store does not hold). */
  constructor(
    from: GuardSnapshot | undefined,
    private readonly strict: ReadonlySet<string>,
  ) {
    this.countries = from ? structuredClone(from.countries) : new Map();
    this.scopes = from ? structuredClone(from.scopes) : new Map();
  }

  async load(countries: CountryKey[], scopes: string[]): Promise<GuardBatch> {
    const batch: GuardBatch = {
      countries: new Map(),
      scopes: new Map(),
      strict: new Set(scopes.filter((scope) => this.strict.has(scope))),
    };
    for (const { scope, country } of countries) {
      const key = countryKey(scope, country);
      const record = this.countries.get(key);
      if (record) batch.countries.set(key, record);
    }
    for (const scope of scopes) {
      const record = this.scopes.get(scope);
      if (record) batch.scopes.set(scope, record);
    }
    return batch;
  }

  /** The bench's deployment is its one service (SERVICE_SID): as deployed, no global scope is kept for it. */
  async servicesUpTo(limit: number): Promise<number> {
    return Math.min(1, limit);
  }

  async save(batch: GuardBatch): Promise<SavedRecords> {
    for (const [key, record] of batch.countries)
      this.countries.set(key, { ...record, version: record.version + 1 });
    for (const [key, record] of batch.scopes)
      this.scopes.set(key, { ...record, version: record.version + 1 });
    return { complete: true, written: new Set([...batch.countries.keys(), ...batch.scopes.keys()]) };
  }

  view(serviceSid: string, country: string): GuardView {
    return guardViewOf(this.countries, this.scopes, serviceSid, country);
  }

  snapshot(): GuardSnapshot {
    return { countries: structuredClone(this.countries), scopes: structuredClone(this.scopes) };
  }
}

export function memoryBench(options: BenchOptions): GuardBench {
  const store = new MemoryStore();
  const guard = new BenchGuardStore(
    options.guardState,
    new Set(options.level === 'strict' ? [SERVICE_SID] : []),
  );
  store.putService({
    sid: SERVICE_SID,
    name: 'Bench',
    balance: 1_000_000_000 * UNITS_PER_USD,
    enabledChannels: [...CHANNELS],
    rules: rulesOf(options.allowedCountries),
    prices: {},
    defaultTemplate: { sid: 'HX' + '0'.repeat(32), body: 'Code {code}', locale: 'en' },
    createdAt: new Date(DAY).toISOString(),
    webhookEndpoints: [],
    guard: { level: options.level, safeList: [] },
  });
  // What the table's stream would carry, taken from the store's writes (functions/adapters/guard/stream.ts):
  // an accepted send, a verification become VERIFIED or DELIVERED, a number log with a guard refusal.
  const pending: GuardEvent[] = [];
  // The accepted sends the guard judged, by SID, until their receipt: what its stream record would name.
  const judged = new Map<string, Omit<Extract<GuardEvent, { kind: 'delivered' }>, 'kind' | 'at'>>();
  let refusals = 0;
  const wrapped: BenchStore = Object.create(store) as BenchStore;
  wrapped.loadSendContext = async (query) => {
    const context = await store.loadSendContext({ ...query, country: undefined });
    return query.country ? { ...context, guard: guard.view(query.serviceSid, query.country) } : context;
  };
  wrapped.acceptSend = async (input) => {
    const result = await store.acceptSend(input);
    // The events the stream mapper makes of the same writes.
    const v = input.verification;
    const sent = result.ok ? acceptedSendEvent(v) : undefined;
    if (sent) pending.push(sent);
    if (sent && outcomeWeighed(v))
      judged.set(v.sid, { serviceSid: v.serviceSid, e164: v.to, country: v.country, sentAt: sent.at });
    return result;
  };
  wrapped.spendAttempt = async (sid, service, guess, now) => {
    const result = await store.spendAttempt(sid, service, guess, now);
    const v = result.ok ? result.verification : undefined;
    if (v && outcomeWeighed(v) && v.lastGuessHash === v.codeHash)
      pending.push({
        kind: 'conversion',
        serviceSid: v.serviceSid,
        e164: v.to,
        country: v.country,
        at: now.getTime(),
        sentAt: Date.parse(v.dateCreated),
        ...(v.guard?.mode === 'known' && { known: true as const }),
      });
    return result;
  };
  wrapped.markDelivered = async (sid, channel, now, answered) => {
    const delivered = await store.markDelivered(sid, channel, now, answered);
    const send = delivered ? judged.get(sid) : undefined;
    if (send) pending.push({ ...send, kind: 'delivered', at: now.getTime() });
    judged.delete(sid);
    return delivered;
  };
  const drain = async () => {
    for (const refusal of store.guardRefusals.slice(refusals)) {
      const { serviceSid, country, e164, callerCode, ...decision } = refusal;
      pending.push({
        kind: 'send',
        serviceSid,
        country,
        e164,
        at: decision.at,
        accepted: false,
        decision,
        ...(callerCode && { callerCode }),
      });
    }
    refusals = store.guardRefusals.length;
    return pending.splice(0);
  };
  return {
    serviceSid: SERVICE_SID,
    ...benchOver(wrapped, guard, SERVICE_SID, drain, store),
    snapshot: () => guard.snapshot(),
    close: async () => undefined,
    requests: () => 0,
  };
}

// --- DynamoDB Local ----------------------------------------------------------------------------------------

/** DynamoDB Local's stream of one table, read to its end on each `drain`. */
class StreamReader {
  private readonly streams: DynamoDBStreamsClient;
  private arn = '';
  private readonly iterators = new Map<string, string>();
  private readonly seen = new Set<string>();
  calls = 0;

  constructor(
    private readonly endpoint: string,
    private readonly tableName: string,
  ) {
    this.streams = new DynamoDBStreamsClient({
      endpoint,
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  }

  async start(): Promise<void> {
    const raw = createDynamoClient({ endpoint: this.endpoint });
    const { Table } = await raw.send(new DescribeTableCommand({ TableName: this.tableName }));
    raw.destroy();
    this.arn = Table!.LatestStreamArn!;
    await this.discover();
  }

  private async discover(): Promise<void> {
    const { StreamDescription } = await this.streams.send(new DescribeStreamCommand({ StreamArn: this.arn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      if (this.seen.has(shard.ShardId!)) continue;
      this.seen.add(shard.ShardId!);
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: this.arn,
          ShardId: shard.ShardId!,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      if (ShardIterator) this.iterators.set(shard.ShardId!, ShardIterator);
    }
  }

  async drain(): Promise<DynamoDBRecord[]> {
    const records: DynamoDBRecord[] = [];
    let closed = false;
    for (const [shard, start] of [...this.iterators]) {
      let iterator: string | undefined = start;
      while (iterator) {
        this.calls++;
        const page: GetRecordsCommandOutput = await this.streams.send(
          new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }),
        );
        const batch = page.Records ?? [];
        records.push(...batch.map(toLambdaRecord));
        if (!page.NextShardIterator) {
          this.iterators.delete(shard);
          closed = true;
          break;
        }
        iterator = page.NextShardIterator;
        this.iterators.set(shard, page.NextShardIterator);
        // A short page is the end of what is there now (DynamoDB Local answers up to the limit when it has it).
        if (batch.length < 1000) break;
      }
    }
    if (closed) {
      await this.discover();
      records.push(...(await this.drain()));
    }
    return records;
  }

  close(): void {
    this.streams.destroy();
  }
}

function toLambdaRecord(record: StreamRecord): DynamoDBRecord {
  const change = record.dynamodb;
  type Images = NonNullable<DynamoDBRecord['dynamodb']>;
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    dynamodb: {
      Keys: change?.Keys as Images['Keys'],
      ...(change?.NewImage && { NewImage: change.NewImage as Images['NewImage'] }),
      ...(change?.OldImage && { OldImage: change.OldImage as Images['OldImage'] }),
      SequenceNumber: change?.SequenceNumber,
    },
  };
}

function createDynamoDocument(endpoint: string, count: () => void): DynamoDBDocumentClient {
  // The document client over a raw client whose middleware counts every request.
  const raw = createDynamoClient({ endpoint });
  raw.middlewareStack.add(
    (next) => async (args) => {
      count();
      return next(args);
    },
    { step: 'initialize', name: 'guardBenchCount' },
  );
  return DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
}

/**
 * A bench on its own table of DynamoDB Local: the Lambda's store and guard store, events from the table's
 * stream. The service is created by the account store (all served countries: no allow-list is set).
 */
export async function dynamoBench(db: BenchDb, options: BenchOptions): Promise<GuardBench> {
  const table = await addTable(db);
  const account = await createAccount(table, 1_000_000_000);
  // The same service as in memory: the scenario's allow-list, or none (a service that keeps the countries it
  // already sends to), not a new service's default one (which leaves out the high-risk countries).
  await table.accounts.setRules({ actor: 'bench' }, account.serviceSid, {
    allowedCountries: options.allowedCountries ?? null,
  });
  await table.accounts.setGuardLevel({ actor: 'bench' }, account.serviceSid, options.level);
  let requests = 0;
  const client = createDynamoDocument(table.endpoint, () => requests++);
  const reader = new StreamReader(table.endpoint, table.tableName);
  await reader.start();
  const store = new DynamoStore(client, table.tableName);
  const guard = new DynamoGuardStore(client, table.tableName);
  // The table's stream carries the seeded sends too: their events (by number and send time) are left out.
  const seeded = new Set<string>();
  const sentKey = (e164: string, sentAt: number) => `${e164} ${sentAt}`;
  const drain = async () =>
    guardEventsFromStream(await reader.drain()).filter(
      (event) => !seeded.has(sentKey(event.e164, event.kind === 'send' ? event.at : event.sentAt)),
    );
  // As deployed: the consumer carries its events within tumbling windows.
  const bench = benchOver(store, guard, account.serviceSid, drain, store, true);
  return {
    serviceSid: account.serviceSid,
    ...bench,
    seedVerified: async (time, to) => {
      seeded.add(sentKey(to, DAY + time));
      await bench.seedVerified(time, to);
    },
    close: async () => {
      reader.close();
      client.destroy();
    },
    requests: () => requests + reader.calls,
  };
}
