/**
 * The pumping guard's items. Under `GUARD#<scope>` (a service SID, or `GLOBAL`):
 * - `COUNTRY#<cc>` and `SCOPE`: the state a send reads in its own BatchGetItem (blocks, established ranges and
 *   countries, lifted prefixes), a few hundred bytes to a few KB;
 * - `STATS#<cc>` and `STATS`: the aggregates only the stream consumer reads and writes, with a version for
 *   optimistic concurrency, the service's report of decisions, and per stream shard the highest sequence number
 *   folded (`folded`: a batch delivered twice counts once).
 * State is one JSON string attribute (`state`), read whole by sends. The aggregates and the report are JSON packed
 * with brotli (`stats_packed`, `report_packed`): the consumer rewrites them whole at every batch, and a write
 * costs units by size, so packing them is most of the consumer's bill saved (docs/guard.md). Items written before
 * packing (`stats`, `report` as strings) are still read.
 */
import type * as Zlib from 'node:zlib';
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GLOBAL_SCOPE,
  countryKey,
  emptyReport,
  type CountryKey,
  type FoldedMarks,
  type GuardBatch,
  type GuardReport,
  type GuardSignalStore,
  type SavedRecords,
} from '../../core/guard/consumer';
import type {
  CountryCaps,
  CountryGuardState,
  GuardLevel,
  GuardView,
  ScopeGuardState,
} from '../../core/guard/model';
import { capReachedBy, type CapReached } from '../../core/guard/caps';
import { dropRanges } from '../../core/guard/conversion-watch';
import { LIFT_MS, type GuardOverview } from '../../core/guard/status';
import { ROUTES } from '../../core/routing';
import { countryPrefixOf } from '../../core/guard/prefix';
import {
  currentCountryStats,
  currentScopeStats,
  emptyCountryState,
  emptyScopeState,
  type CountryStats,
  type ScopeStats,
} from '../../core/guard/aggregates';
import type { AuditRecord } from '../../core/accounts/ports';
import { OtpError } from '../../core/errors';
import { auditToItem } from './items';
import { PARTITION_FAMILY, keys, type ItemKey } from './keys';
import { batchGetAll, isConditionFailure, queryAll } from './requests';

type Item = Record<string, unknown>;

/**
 * zlib on first use: the send path imports this module for the state it reads and never packs, and loading zlib
 * would add milliseconds to its cold start.
 */
let zlibModule: typeof Zlib | undefined;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const zlib = (): typeof Zlib => (zlibModule ??= require('node:zlib') as typeof Zlib);

const parse = <T>(item: Item | undefined, attribute: string): T | undefined => {
  const packed = item?.[`${attribute}_packed`];
  if (packed instanceof Uint8Array)
    return JSON.parse(zlib().brotliDecompressSync(packed).toString('utf8')) as T;
  return typeof item?.[attribute] === 'string' ? (JSON.parse(item[attribute]) as T) : undefined;
};

/**
 * Brotli's best quality: a quarter smaller than its fast levels on these aggregates, for tens of ms of a batch
 * that runs once per batching window.
 */
const pack = (value: unknown): Uint8Array =>
  zlib().brotliCompressSync(JSON.stringify(value), {
    params: { [zlib().constants.BROTLI_PARAM_QUALITY]: 11 },
  });

/** The keys a send to `country` adds to its BatchGetItem: the service's country and scope state, the global one. */
export function guardViewKeys(serviceSid: string, country: string): ItemKey[] {
  return [
    keys.guardCountry(serviceSid, country),
    keys.guardScope(serviceSid),
    keys.guardCountry(GLOBAL_SCOPE, country),
  ];
}

/** The view of the items `guardViewKeys` named (absent items: no state). */
export function guardViewFromItems(
  serviceSid: string,
  country: string,
  find: (key: ItemKey) => Item | undefined,
): GuardView {
  const own = parse<CountryGuardState>(find(keys.guardCountry(serviceSid, country)), 'state');
  const all = parse<ScopeGuardState>(find(keys.guardScope(serviceSid)), 'state');
  const global = parse<CountryGuardState>(find(keys.guardCountry(GLOBAL_SCOPE, country)), 'state');
  return {
    service: { ...(own && { country: own }), ...(all && { all }) },
    global: { ...(global && { country: global }) },
  };
}

/**
 * Prefixes one guard state may hold lifted at once. A lift is a key of the state every send reads and the consumer
 * rewrites, and any member may lift: unbounded, distinct prefixes would grow the item towards DynamoDB's limit,
 * past which the consumer's write fails with every other service's signals in its batch.
 */
export const MAX_LIFTED_PREFIXES = 100;

/**
 * `lifted` with `key` lifted until `until`: lifts that ended by `now` go, and so do those under `key` that end no
 * later (the new lift passes all they pass). Refused (`too_many`) when `MAX_LIFTED_PREFIXES` would still be
 * exceeded: a shorter prefix covering them, or `*`, is always taken.
 */
function withLift(
  lifted: Record<string, number> | undefined,
  key: string,
  until: number,
  now: number,
  where: string,
): Record<string, number> {
  const kept = Object.entries(lifted ?? {}).filter(
    ([p, end]) => end > now && !(p.startsWith(key) && end <= until),
  );
  if (kept.length >= MAX_LIFTED_PREFIXES)
    throw new OtpError(
      'too_many',
      `${MAX_LIFTED_PREFIXES} prefixes are lifted ${where} already: lift a shorter prefix that covers them, or *.`,
    );
  return { ...Object.fromEntries(kept), [key]: until };
}

/** DynamoDB's bound on a transaction's items. */
const MAX_TRANSACTION_ITEMS = 100;

const isTransactionConflict = (error: unknown): boolean =>
  error instanceof TransactionCanceledException &&
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict');

/** A lift's transaction refused because a state's version moved since it was read. */
const isCancelledByVersion = (error: unknown): boolean =>
  error instanceof TransactionCanceledException &&
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed');

/** How often a lift reads and writes again when the states moved under it. */
const LIFT_TRIES = 8;

/** The aggregates item whose version guards a state item (`SCOPE` or `COUNTRY#<cc>`). */
const statsSkOf = (stateItem: Item): string => {
  const sk = String(stateItem.sk);
  return sk === 'SCOPE' ? 'STATS' : `STATS#${sk.slice('COUNTRY#'.length)}`;
};

const isCancelledByCondition = (error: unknown): boolean =>
  error instanceof TransactionCanceledException || isConditionFailure(error);

/**
 * What a guard item may weigh: every aggregate is bounded (`LIMITS` in core/guard/aggregates.ts) to stay under it, far
 * from DynamoDB's 400 KB item limit (past which every write of the batch fails) and cheap to rewrite (1 KB per
 * write unit). An item past it is reported, and still written.
 */
export const GUARD_ITEM_BUDGET_BYTES = 64 * 1024;
/** DynamoDB's item size limit. */
export const DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024;

/** A guard item the consumer was about to write past its budget (or past DynamoDB's limit). */
export interface OversizedGuardItem {
  pk: string;
  sk: string;
  /** `state` (what a send reads) or `stats` (the consumer's aggregates). */
  kind: 'state' | 'stats';
  bytes: number;
}

/** A batch whose aggregates would not fit in a DynamoDB item: written, it would fail on every retry. */
export class GuardItemTooLargeError extends Error {
  override readonly name = 'GuardItemTooLargeError';
  constructor(readonly item: OversizedGuardItem) {
    super(`guard item ${item.sk} of ${item.pk} is ${item.bytes} bytes, over DynamoDB's item limit`);
  }
}

/**
 * The size DynamoDB bills an item at: each attribute's name and value in UTF-8 (numbers about 1 byte per 2
 * digits, maps and lists 3 bytes plus one per element); close enough to compare with a budget.
 */
export function itemBytes(item: Record<string, unknown>): number {
  const value = (v: unknown): number => {
    if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
    if (typeof v === 'number') return Math.ceil(String(Math.abs(v)).replace(/[.-]/g, '').length / 2) + 1;
    if (typeof v === 'boolean' || v === null || v === undefined) return 1;
    if (v instanceof Uint8Array) return v.byteLength;
    if (Array.isArray(v)) return 3 + v.reduce<number>((sum, e) => sum + value(e) + 1, 0);
    if (typeof v === 'object')
      return (
        3 +
        Object.entries(v as Record<string, unknown>).reduce(
          (sum, [k, e]) => sum + Buffer.byteLength(k, 'utf8') + value(e) + 1,
          0,
        )
      );
    return 0;
  };
  return Object.entries(item).reduce((sum, [k, v]) => sum + Buffer.byteLength(k, 'utf8') + value(v), 0);
}

export interface DynamoGuardStoreOptions {
  /** Told of every item written past `GUARD_ITEM_BUDGET_BYTES`: a metric and a log line (functions/guard). */
  onOverBudget?: (item: OversizedGuardItem) => void;
  /** How long a count of services under its limit is trusted (default 5 minutes); one that reached it, always. */
  serviceCountTtlMs?: number;
}

const SERVICE_COUNT_TTL_MS = 5 * 60_000;

/** The consumer's side: aggregates and state, written together under a version check. */
export class DynamoGuardStore implements GuardSignalStore {
  /** The state items as the last `load` read them (JSON by key): `save` skips those it leaves unchanged. */
  private loadedStates = new Map<string, string>();
  /** The last count of services (`servicesUpTo`), its limit, and when it was read (Date.now). */
  private serviceCount?: { count: number; limit: number; at: number };

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly options: DynamoGuardStoreOptions = {},
  ) {}

  async load(countries: CountryKey[], scopes: string[]): Promise<GuardBatch> {
    const wanted: ItemKey[] = [
      ...countries.flatMap(({ scope, country }) => [
        keys.guardCountry(scope, country),
        keys.guardCountryStats(scope, country),
      ]),
      ...scopes.flatMap((scope) => [
        keys.guardScope(scope),
        keys.guardScopeStats(scope),
        keys.service(scope),
      ]),
    ];
    const items: Item[] = [];
    for (let i = 0; i < wanted.length; i += 100) {
      let pending = wanted.slice(i, i + 100);
      for (let round = 0; pending.length > 0; round++) {
        if (round > 8) throw new Error('DynamoDB left guard keys unprocessed after retries');
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** round));
        const result = await this.client.send(
          new BatchGetCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        items.push(...(result.Responses?.[this.tableName] ?? []));
        pending = (result.UnprocessedKeys?.[this.tableName]?.Keys as ItemKey[] | undefined) ?? [];
      }
    }
    const find = (key: ItemKey) => items.find((item) => item.pk === key.pk && item.sk === key.sk);
    this.loadedStates = new Map(
      items
        .filter((item) => item.type === 'guard_state' && typeof item.state === 'string')
        .map((item) => [`${String(item.pk)}/${String(item.sk)}`, item.state as string]),
    );
    const batch: GuardBatch = { countries: new Map(), scopes: new Map(), caps: new Map(), strict: new Set() };
    for (const scope of scopes) {
      const service = find(keys.service(scope));
      const caps = service?.guard_caps;
      if (caps && typeof caps === 'object') batch.caps!.set(scope, caps as Record<string, CountryCaps>);
      if (service?.guard_level === 'strict') batch.strict!.add(scope);
    }
    for (const { scope, country } of countries) {
      const stats = find(keys.guardCountryStats(scope, country));
      const state = parse<CountryGuardState>(find(keys.guardCountry(scope, country)), 'state');
      // A state with no aggregates yet (a lift by hand where the service never sent): kept, not started afresh.
      if (!stats && state)
        batch.countries.set(countryKey(scope, country), {
          stats: currentCountryStats(undefined),
          state,
          version: 0,
        });
      if (!stats) continue;
      // A bare version (a lift by hand made it, `putState`): aggregates from nothing.
      batch.countries.set(countryKey(scope, country), {
        stats: parse<CountryStats>(stats, 'stats') ?? currentCountryStats(undefined),
        state: state ?? emptyCountryState(),
        version: stats.version as number,
        ...folded(stats),
      });
    }
    for (const scope of scopes) {
      const stats = find(keys.guardScopeStats(scope));
      if (!stats) continue;
      batch.scopes.set(scope, {
        stats: parse<ScopeStats>(stats, 'stats') ?? currentScopeStats(undefined),
        state: parse<ScopeGuardState>(find(keys.guardScope(scope)), 'state') ?? emptyScopeState(),
        report: parse<GuardReport>(stats, 'report') ?? emptyReport(),
        version: stats.version as number,
        ...folded(stats),
      });
    }
    return batch;
  }

  /**
   * Counts the directory's entries up to `limit`: one Query of at most `limit` small items (0.5 RRU), once per
   * container and few minutes. Services are never removed, so a count that reached its limit stays true.
   */
  async servicesUpTo(limit: number): Promise<number> {
    const known = this.serviceCount;
    const ttl = this.options.serviceCountTtlMs ?? SERVICE_COUNT_TTL_MS;
    if (known && known.limit === limit && (known.count >= limit || Date.now() - known.at < ttl))
      return known.count;
    const { Count = 0 } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.serviceDirectory('').pk },
        Select: 'COUNT',
        Limit: limit,
      }),
    );
    this.serviceCount = { count: Math.min(Count, limit), limit, at: Date.now() };
    return this.serviceCount.count;
  }

  async save(batch: GuardBatch): Promise<SavedRecords> {
    // Per record: its aggregates under their version check, and its state when it changed. Most batches change
    // no state, and a record alone is one conditional PutItem: half the write units of a transaction.
    const records: { key: string; writes: TransactItem[] }[] = [];
    const pair = (
      key: string,
      stateKey: ItemKey,
      statsKey: ItemKey,
      state: unknown,
      stats: Item,
      version: number,
    ) => {
      const writes: TransactItem[] = [
        {
          Put: {
            TableName: this.tableName,
            Item: { ...statsKey, type: 'guard_stats', ...stats, version: version + 1 },
            ConditionExpression: version === 0 ? 'attribute_not_exists(pk)' : 'version = :seen',
            ...(version !== 0 && { ExpressionAttributeValues: { ':seen': version } }),
          },
        },
      ];
      const json = JSON.stringify(state);
      if (this.loadedStates.get(`${stateKey.pk}/${stateKey.sk}`) !== json)
        writes.push({
          Put: {
            TableName: this.tableName,
            Item: { ...stateKey, type: 'guard_state', state: json, ...alertAttributes(stateKey, state) },
          },
        });
      records.push({ key, writes });
    };
    for (const [key, record] of batch.countries) {
      const [scope, country] = splitCountryKey(key);
      pair(
        key,
        keys.guardCountry(scope, country),
        keys.guardCountryStats(scope, country),
        record.state,
        { stats_packed: pack(record.stats), ...foldedAttribute(record.folded) },
        record.version,
      );
    }
    for (const [scope, record] of batch.scopes) {
      pair(
        scope,
        keys.guardScope(scope),
        keys.guardScopeStats(scope),
        record.state,
        {
          stats_packed: pack(record.stats),
          report_packed: pack(record.report),
          ...foldedAttribute(record.folded),
        },
        record.version,
      );
    }
    this.checkSizes(records.flatMap((record) => record.writes));
    const outcomes = await Promise.allSettled(
      records.map(async ({ key, writes }) => {
        const [stats, state] = writes;
        if (state) await this.client.send(new TransactWriteCommand({ TransactItems: [stats!, state] }));
        else await this.client.send(new PutCommand(stats!.Put!));
        return key;
      }),
    );
    const written = new Set<string>();
    let complete = true;
    for (const outcome of outcomes) {
      if (outcome.status === 'fulfilled') written.add(outcome.value);
      else if (isCancelledByCondition(outcome.reason)) complete = false;
      // Anything else fails the batch, to be retried: what was written holds its shard marks.
      else throw outcome.reason;
    }
    return { complete, written };
  }

  /** Reports the items past their budget; refuses, before any write, a batch with one DynamoDB would refuse. */
  private checkSizes(writes: TransactItem[]): void {
    for (const write of writes) {
      const item = write.Put?.Item;
      if (!item) continue;
      const bytes = itemBytes(item);
      if (bytes <= GUARD_ITEM_BUDGET_BYTES) continue;
      const found: OversizedGuardItem = {
        pk: String(item.pk),
        sk: String(item.sk),
        kind: item.type === 'guard_state' ? 'state' : 'stats',
        bytes,
      };
      this.options.onOverBudget?.(found);
      if (bytes > DYNAMODB_ITEM_LIMIT_BYTES) throw new GuardItemTooLargeError(found);
    }
  }
}

/**
 * A service's country state carries its alerts as maps the webhook events function's filter can see: a cap
 * reached as `cap_reached`, a conversion drop told of as `conversion_drop` (read back in guard-alerts.ts). The
 * state's write is the event's record, and the alert's `since` tells a new one from the same one written again.
 */
function alertAttributes(key: ItemKey, state: unknown): Item {
  const { blocks, drop } = state as Partial<CountryGuardState>;
  if (!key.sk.startsWith('COUNTRY#') || key.pk.includes(`#${GLOBAL_SCOPE}`)) return {};
  const owner = {
    service_sid: key.pk.slice(PARTITION_FAMILY.guard.length),
    country: key.sk.slice('COUNTRY#'.length),
  };
  const attributes: Item = {};
  for (const block of blocks ?? []) {
    const reached = capReachedBy(block);
    if (!reached) continue;
    attributes.cap_reached = {
      ...owner,
      cap: reached.cap,
      limit: reached.limit,
      value: reached.value,
      since: block.since,
      until: block.until,
    };
    break;
  }
  if (drop)
    attributes.conversion_drop = {
      ...owner,
      sent: drop.figures.sends_60m,
      checked: drop.figures.checked_60m,
      usual_conversion: drop.figures.usual_conversion,
      ranges: dropRanges(drop.figures),
      since: drop.since,
    };
  return attributes;
}

const folded = (item: Item): { folded?: FoldedMarks } => {
  const marks = parse<FoldedMarks>(item, 'folded');
  return marks ? { folded: marks } : {};
};

const foldedAttribute = (marks: FoldedMarks | undefined): Item =>
  marks ? { folded: JSON.stringify(marks) } : {};

const splitCountryKey = (key: string): [string, string] => {
  const at = key.lastIndexOf('/');
  return [key.slice(0, at), key.slice(at + 1)];
};

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A cap reached: the country, which cap, and from when until when its sends are refused. */
export interface CapBlock extends CapReached {
  country: string;
  since: number;
  until: number;
}

/**
 * The owner's and operator's side (`npm run admin -- guard ...`, the console): reports, lifting blocks. The settings
 * on the service item are the accounts core's (audited).
 */
export class DynamoGuardAdmin {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private states(scope: string, consistent = false): Promise<Item[]> {
    return queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.guardScope(scope).pk },
      ...(consistent && { ConsistentRead: true }),
    });
  }

  /**
   * The caps of the service reached now: its `country_cap` blocks still in force (one query of its guard
   * partition; the consumer writes them, a few seconds after the sends that reached them).
   */
  async capsReached(serviceSid: string, now: Date): Promise<CapBlock[]> {
    const found: CapBlock[] = [];
    for (const item of await this.states(serviceSid)) {
      const sk = String(item.sk);
      if (!sk.startsWith('COUNTRY#')) continue;
      const state = parse<CountryGuardState>(item, 'state');
      for (const block of state?.blocks ?? []) {
        const reached = capReachedBy(block);
        if (reached && block.until > now.getTime())
          found.push({
            country: sk.slice('COUNTRY#'.length),
            since: block.since,
            until: block.until,
            ...reached,
          });
      }
    }
    return found.sort((a, b) => a.country.localeCompare(b.country));
  }

  async overview(serviceSid: string): Promise<GuardOverview | undefined> {
    const { Item: service } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.service(serviceSid) }),
    );
    if (!service) return undefined;
    const own = await this.states(serviceSid);
    // The global scope's state in every served country (a partition each), in one batch read of those items alone:
    // a global block refuses the service's first send to a country as much as its later ones.
    const global = await batchGetAll(
      this.client,
      this.tableName,
      Object.keys(ROUTES).map((country) => keys.guardCountry(GLOBAL_SCOPE, country)),
      false,
    );
    const countries = (items: Item[]) =>
      items
        .filter((item) => String(item.sk).startsWith('COUNTRY#'))
        .map((item) => ({
          country: String(item.sk).slice('COUNTRY#'.length),
          state: parse<CountryGuardState>(item, 'state')!,
        }));
    return {
      level: service.guard_level as GuardLevel | undefined,
      safeList: (service.guard_safe_list as string[] | undefined) ?? [],
      countries: countries(own),
      scope: parse<ScopeGuardState>(
        own.find((item) => item.sk === 'SCOPE'),
        'state',
      ),
      global: countries(global),
      report:
        parse<GuardReport>(
          own.find((item) => item.sk === 'STATS'),
          'report',
        ) ?? emptyReport(),
    };
  }

  /**
   * Lifts by hand every block of the service matching `prefix` (a number, a range, a country prefix, or `*` for
   * every block), and keeps the rules from making it again until `until`. Returns the blocks lifted. `audit`
   * makes the change's record from that count: it is written in the same transaction as the lift, so a lift is
   * never without its record, nor a record without its lift.
   */
  async unblock(
    serviceSid: string,
    prefix: string,
    until: Date,
    audit?: (lifted: number) => AuditRecord,
  ): Promise<number> {
    // Written under the versions read: a consumer's write or another lift landing between the read and the write
    // would otherwise be put back as read (a block the consumer just made gone, the other lift lost). Read again.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.unblockAsRead(serviceSid, prefix, until, audit);
      } catch (error) {
        if (attempt >= LIFT_TRIES || !(isCancelledByVersion(error) || isTransactionConflict(error)))
          throw error;
        // Jittered: lifts that met are not to meet again.
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt * (0.5 + Math.random())));
      }
    }
  }

  private async unblockAsRead(
    serviceSid: string,
    prefix: string,
    until: Date,
    audit?: (lifted: number) => AuditRecord,
  ): Promise<number> {
    let lifted = 0;
    const changed: { item: Item; state: unknown; version: number | undefined }[] = [];
    const items = await this.states(serviceSid, true);
    const versionOf = (stateItem: Item): number | undefined =>
      items.find((item) => item.sk === statsSkOf(stateItem))?.version as number | undefined;
    const countryOf = (sk: string) => /^(?:COUNTRY|STATS)#(.+)$/.exec(sk)?.[1];
    const stateItems = new Map(
      items
        .filter((item) => String(item.sk).startsWith('COUNTRY#'))
        .map((item) => [countryOf(String(item.sk))!, item]),
    );
    // A country with no state of the service's own yet (it never had a block there, or never sent there): the lift
    // needs one, to hold against the global blocks there. Those the service sends to, and for a prefix, the served
    // countries under it.
    const withoutState = [
      ...items.map((item) => countryOf(String(item.sk))),
      ...(prefix === '*' ? [] : Object.keys(ROUTES)),
    ];
    for (const country of withoutState)
      if (country && !stateItems.has(country))
        stateItems.set(country, {
          ...keys.guardCountry(serviceSid, country),
          state: JSON.stringify(emptyCountryState()),
        });
    // Every lift lasts LIFT_MS: one that ends before this one began has ended.
    const now = until.getTime() - LIFT_MS;
    const scopeItem = items.find((item) => item.sk === 'SCOPE');
    if (scopeItem && (prefix === '*' || prefix.length <= 4)) {
      const state = parse<ScopeGuardState>(scopeItem, 'state')!;
      lifted += Number(!!state.novelCountries) + Number(!!state.novelRanges);
      delete state.novelCountries;
      delete state.novelRanges;
      state.lifted = withLift(
        state.lifted,
        prefix === '*' ? '+' : prefix,
        until.getTime(),
        now,
        'across countries',
      );
      if (prefix === '*') state.lifted['*'] = until.getTime();
      changed.push({ item: scopeItem, state, version: versionOf(scopeItem) });
    }
    const matches = (p: string) => prefix === '*' || p.startsWith(prefix) || prefix.startsWith(p);
    for (const [country, item] of stateItems) {
      // Numbers of this country under the prefix: its own blocks there go, and the lift also holds against the
      // global blocks there (the verdict reads this state's `lifted` for them), which are not touched.
      if (!matches(countryPrefixOf(country) ?? '+')) continue;
      const state = parse<CountryGuardState>(item, 'state')!;
      const kept = state.blocks.filter((block) => !matches(block.prefix));
      lifted += state.blocks.length - kept.length;
      state.blocks = kept;
      if (prefix === '*' || prefix.length <= 4) {
        lifted += Number(!!state.novelty) + Number(!!state.closed);
        delete state.novelty;
        delete state.closed;
      }
      state.lifted = withLift(
        state.lifted,
        prefix === '*' ? '+' : prefix,
        until.getTime(),
        now,
        `in ${country}`,
      );
      changed.push({ item, state, version: versionOf(item) });
    }
    await this.putStates(changed, audit?.(lifted));
    return lifted;
  }

  /**
   * Each state with its aggregates' version, and the audit record, in one transaction: a consumer that read a
   * state before must not put it back, and its write is conditioned on that version. Written apart, a consumer's
   * write landing between the two put the old state back under the old version, and the lift was lost. Where the
   * consumer has no aggregates there yet, this makes a bare version for its first write to check (a fold from
   * nothing). Two items a state and one audit record: 40 served countries and the scope hold in one transaction
   * (100 items); past that, in several.
   */
  private async putStates(
    changed: { item: Item; state: unknown; version: number | undefined }[],
    audit?: AuditRecord,
  ): Promise<void> {
    const items: TransactItem[] = changed.flatMap(({ item, state, version }): TransactItem[] => {
      const statsSk = statsSkOf(item);
      return [
        {
          Update: {
            TableName: this.tableName,
            Key: { pk: item.pk, sk: item.sk },
            // The type too: a state this write makes (a country with no state of its own yet) is read as any
            // other.
            UpdateExpression: 'SET #state = :state, #type = :type',
            ExpressionAttributeNames: { '#state': 'state', '#type': 'type' },
            ExpressionAttributeValues: { ':state': JSON.stringify(state), ':type': 'guard_state' },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: { pk: item.pk, sk: statsSk },
            UpdateExpression: 'SET #type = if_not_exists(#type, :type) ADD version :one',
            ConditionExpression: version === undefined ? 'attribute_not_exists(version)' : 'version = :seen',
            ExpressionAttributeNames: { '#type': 'type' },
            ExpressionAttributeValues: {
              ':one': 1,
              ':type': 'guard_stats',
              ...(version !== undefined && { ':seen': version }),
            },
          },
        },
      ];
    });
    if (audit) items.push({ Put: { TableName: this.tableName, Item: auditToItem(audit) } });
    for (let i = 0; i < items.length; i += MAX_TRANSACTION_ITEMS) {
      // A consumer's transaction on the same items in flight: DynamoDB cancels this one; it is tried again.
      for (let attempt = 1; ; attempt++) {
        try {
          // The SDK's own resends after a lost answer carry the token it filled in, so count once: the versions the
          // first moved cannot cancel them.
          const transaction = { TransactItems: items.slice(i, i + MAX_TRANSACTION_ITEMS) };
          await this.client.send(new TransactWriteCommand(transaction));
          break;
        } catch (error) {
          if (attempt >= 3 || !isTransactionConflict(error)) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
        }
      }
    }
  }
}
