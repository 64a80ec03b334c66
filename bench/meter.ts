/**
 * Counts and times every DynamoDB request of a real client, from a middleware on its stack: the request
 * kind, how long it took as the caller saw it (marshalling, signing, HTTP, retries), whether a condition
 * failed, and the capacity DynamoDB reported (`ReturnConsumedCapacity` is set on every request).
 *
 * DynamoDB Local does not report capacity the way DynamoDB does (it reports 4 WCU for a one-item
 * transaction of a 100-byte item, 0 RCU for a BatchGetItem of missing keys, nothing for a failed
 * condition). So, when a probe client is given, the meter also prices each request by DynamoDB's
 * documented rules from the real item sizes, read before and after each write (and, for a projected Query,
 * the whole items it read) with an unmetered client: the "modelled" figures, which the cost model uses. The reported ones are kept beside them.
 */
import {
  GetCommand,
  QueryCommand,
  ScanCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type ScanCommandInput,
} from '@aws-sdk/lib-dynamodb';

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };

interface KindTotals {
  calls: number;
  /** Condition failures (ConditionalCheckFailed, a cancelled transaction). */
  conditionFailures: number;
  /** Other errors. */
  errors: number;
  ms: number;
  /** Capacity units DynamoDB Local reported, summed over the calls. */
  reportedCapacity: number;
  /** By DynamoDB's rules from item sizes (only with a probe client). */
  modelRru: number;
  modelWru: number;
}

export type Totals = Record<string, KindTotals>;

/** One item a request touched, priced by DynamoDB's rules (a Query's items as one access to its partition). */
export interface ItemAccess {
  pk: string;
  sk: string;
  rcu: number;
  wcu: number;
  /** A write that created the item (absent before, present after). */
  created: boolean;
  /** A Query or Scan: items from `sk` on, not one item. */
  range: boolean;
}

/** One request as the capacity model sees it (only with a probe client). */
export interface RequestTrace {
  meter: string;
  kind: string;
  /** A TransactWriteItems: its items can conflict with other writes (bench/capacity.ts). */
  transactional: boolean;
  items: ItemAccess[];
}

const READ_KINDS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);

const isReadKind = (kind: string): boolean => READ_KINDS.has(kind);

/**
 * Requests of the API-key middleware (the per-key limit's UpdateItem, the key lookup on a cache miss) are
 * counted under `auth:<kind>`, so every operation can be reported with and without them.
 */
export const AUTH = 'auth:';
const AUTH_KEY_PREFIXES = ['RATE#', 'APIKEY#'];

function isAuthRequest(input: Item): boolean {
  const pk = (input.Key as Item | undefined)?.pk;
  return typeof pk === 'string' && AUTH_KEY_PREFIXES.some((prefix) => pk.startsWith(prefix));
}

const emptyTotals = (): KindTotals => ({
  calls: 0,
  conditionFailures: 0,
  errors: 0,
  ms: 0,
  reportedCapacity: 0,
  modelRru: 0,
  modelWru: 0,
});

export class DynamoMeter {
  private totals: Totals = {};
  /**
   * Wall time with at least one DynamoDB call in flight, and the number of calls, over all kinds. Overlapping
   * calls (the send's key write and batch read) count once: this is the time a handler waited on DynamoDB.
   */
  busyMs = 0;
  calls = 0;
  private inFlight = 0;
  private busySince = 0;
  /**
   * Round trips: the times a request started with none of this meter's in flight, so requests sent together (a
   * send's key write and batch read) count once and requests one after another once each; `ownRoundTrips` the
   * same without the API-key middleware's requests. Counted from the middleware's entry to its exit, so a probe's
   * reads around a request (which delay its start) cannot split requests the handler sent together.
   */
  roundTrips = 0;
  ownRoundTrips = 0;
  private pending = 0;
  private ownPending = 0;
  /** Per-call durations by kind, kept only while `keepSamples` is on. */
  readonly samples = new Map<string, number[]>();
  keepSamples = false;
  /** Called with each request's items and units, when set (and a probe prices them). */
  onRequest?: (request: RequestTrace) => void;

  /**
   * @param probe an unmetered client: when set, every request is also priced by DynamoDB's rules (slower:
   * writes are bracketed by reads of the items they touch). Unset it for latency runs.
   */
  constructor(
    readonly name: string,
    public probe?: DynamoDBDocumentClient,
  ) {}

  /** Adds the middleware to a document client; outermost, so it sees document-level input and output. */
  attach(client: DynamoDBDocumentClient): DynamoDBDocumentClient {
    client.middlewareStack.add(
      (next, context) => {
        const measured = this.measuredRequest(next, context.commandName);
        return async (args) => {
          const input = args.input as Item;
          const own = !isAuthRequest(input);
          if (this.pending++ === 0) this.roundTrips++;
          if (own && this.ownPending++ === 0) this.ownRoundTrips++;
          try {
            return await measured(args);
          } finally {
            this.pending--;
            if (own) this.ownPending--;
          }
        };
      },
      { step: 'initialize', name: `benchMeter-${this.name}`, priority: 'high' },
    );
    return client;
  }

  /** The request counted, timed and (with a probe) priced, under its kind. */
  private measuredRequest<Args extends { input: unknown }, Output extends { output: unknown }>(
    next: (args: Args) => Promise<Output>,
    commandName: string | undefined,
  ): (args: Args) => Promise<Output> {
    return async (args) => {
      const kind = String(commandName ?? 'Unknown').replace(/Command$/, '');
      const input = args.input as Item;
      const label = isAuthRequest(input) ? `${AUTH}${kind}` : kind;
      input.ReturnConsumedCapacity = 'INDEXES';
      const before = this.probe && !isReadKind(kind) ? await this.readTouched(kind, input) : undefined;
      const started = performance.now();
      if (this.inFlight++ === 0) this.busySince = started;
      let output: Item | undefined;
      let failure: 'condition' | 'error' | undefined;
      try {
        const result = await next(args);
        output = result.output as Item;
        return result;
      } catch (error) {
        const name = (error as Error).name;
        failure =
          name === 'ConditionalCheckFailedException' || name === 'TransactionCanceledException'
            ? 'condition'
            : 'error';
        throw error;
      } finally {
        const ended = performance.now();
        const ms = ended - started;
        if (--this.inFlight === 0) this.busyMs += ended - this.busySince;
        const totals = (this.totals[label] ??= emptyTotals());
        totals.calls++;
        totals.ms += ms;
        this.calls++;
        if (failure === 'condition') totals.conditionFailures++;
        if (failure === 'error') totals.errors++;
        totals.reportedCapacity += reportedCapacity(output?.ConsumedCapacity);
        if (this.keepSamples) {
          const list = this.samples.get(label) ?? [];
          list.push(ms);
          this.samples.set(label, list);
        }
        if (this.probe) {
          const trace = (items: ItemAccess[]) =>
            this.onRequest?.({
              meter: this.name,
              kind,
              transactional: kind === 'TransactWriteItems',
              items,
            });
          if (isReadKind(kind)) {
            // Read first, then add: `+= await` would add to the figure as it was before the await, losing
            // what a concurrent request added meanwhile.
            const read = output && (await this.unprojected(kind, input, output));
            if (read) {
              const items = readAccesses(kind, input, read);
              totals.modelRru += items.reduce((sum, item) => sum + item.rcu, 0);
              trace(items);
            }
          } else if (before) {
            const after = failure ? undefined : await this.readTouched(kind, input);
            const items = writeAccesses(kind, input, before, after, failure !== undefined);
            totals.modelWru += items.reduce((sum, item) => sum + item.wcu, 0);
            trace(items);
          }
        }
      }
    };
  }

  snapshot(): Totals {
    return structuredClone(this.totals);
  }

  reset(): void {
    this.totals = {};
    this.busyMs = 0;
    this.calls = 0;
    this.roundTrips = 0;
    this.ownRoundTrips = 0;
    this.samples.clear();
  }

  /**
   * A Query or Scan is priced by the whole items it reads, not by the attributes its projection returns (the
   * sweeper's ledger queries project one attribute): read the same page again, whole, with the probe.
   */
  private async unprojected(kind: string, input: Item, output: Item): Promise<Item> {
    if ((kind !== 'Query' && kind !== 'Scan') || input.ProjectionExpression === undefined) return output;
    const { ProjectionExpression: _projection, ExpressionAttributeNames: names, ...rest } = input;
    // Names only the projection used must go with it (DynamoDB refuses an unused name).
    const used = [input.KeyConditionExpression, input.FilterExpression].filter(Boolean).join(' ');
    const kept = Object.entries((names ?? {}) as Record<string, string>).filter(([name]) =>
      used.includes(name),
    );
    const whole = {
      ...rest,
      ...(kept.length > 0 && { ExpressionAttributeNames: Object.fromEntries(kept) }),
      Select: 'ALL_ATTRIBUTES' as const,
    };
    const read =
      kind === 'Query'
        ? await this.probe!.send(new QueryCommand(whole as QueryCommandInput))
        : await this.probe!.send(new ScanCommand(whole as ScanCommandInput));
    return read as Item;
  }

  /** Items touched by a write, as they are now (undefined where absent). */
  private async readTouched(kind: string, input: Item): Promise<(Item | undefined)[]> {
    const targets = writeTargets(kind, input);
    return Promise.all(
      targets.map(async ({ table, key }) => {
        const { Item: found } = await this.probe!.send(
          new GetCommand({ TableName: table, Key: key, ConsistentRead: true }),
        );
        return found;
      }),
    );
  }
}

/** Per-kind difference of two snapshots (`after - before`). */
export function diffTotals(after: Totals, before: Totals): Totals {
  const result: Totals = {};
  for (const [kind, now] of Object.entries(after)) {
    const was = before[kind] ?? emptyTotals();
    const delta = emptyTotals();
    for (const field of Object.keys(delta) as (keyof KindTotals)[]) delta[field] = now[field] - was[field];
    if (delta.calls > 0) result[kind] = delta;
  }
  return result;
}

/** Adds several totals together. */
export function sumTotals(...all: Totals[]): Totals {
  const result: Totals = {};
  for (const totals of all) {
    for (const [kind, value] of Object.entries(totals)) {
      const into = (result[kind] ??= emptyTotals());
      for (const field of Object.keys(into) as (keyof KindTotals)[]) into[field] += value[field];
    }
  }
  return result;
}

export interface RequestSummary {
  /** Requests by kind, e.g. `{ UpdateItem: 1, GetItem: 1 }`. */
  byKind: Record<string, number>;
  requests: number;
  conditionFailures: number;
  reportedCapacity: number;
  rru: number;
  wru: number;
}

/** Sums the totals, optionally only the kinds `include` accepts. */
export function summarize(totals: Totals, include: (kind: string) => boolean = () => true): RequestSummary {
  const entries = Object.entries(totals).filter(([kind]) => include(kind));
  const values = entries.map(([, value]) => value);
  const sum = (field: keyof KindTotals) => values.reduce((total, value) => total + value[field], 0);
  return {
    byKind: Object.fromEntries(entries.map(([kind, value]) => [kind, value.calls])),
    requests: sum('calls'),
    conditionFailures: sum('conditionFailures'),
    reportedCapacity: round(sum('reportedCapacity')),
    rru: round(sum('modelRru')),
    wru: round(sum('modelWru')),
  };
}

const round = (value: number) => Math.round(value * 1000) / 1000;

function reportedCapacity(consumed: unknown): number {
  const list = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return list.reduce(
    (total: number, entry: { CapacityUnits?: number }) => total + (entry.CapacityUnits ?? 0),
    0,
  );
}

// ---------------------------------------------------------------------------------------------------------
// DynamoDB's documented capacity rules (on-demand request units are priced the same way as capacity units):
// - a read: 1 RRU per 4 KB (rounded up) strongly consistent, half that eventually consistent; an item that
//   does not exist still costs the minimum; BatchGetItem is priced as one GetItem per key;
// - a write: 1 WRU per 1 KB of the larger of the item's before and after images, at least 1; a write whose
//   condition fails still costs the existing item's size (at least 1);
// - a transaction: twice that for each item.
// The table has no secondary index (functions/adapters/dynamodb/keys.ts), so no write is priced for one.
// ---------------------------------------------------------------------------------------------------------

interface WriteTarget {
  table: string;
  key: Key;
}

function keyOf(item: Item): Key {
  return { pk: item.pk as string, sk: item.sk as string };
}

function writeTargets(kind: string, input: Item): WriteTarget[] {
  switch (kind) {
    case 'PutItem':
      return [{ table: input.TableName as string, key: keyOf(input.Item as Item) }];
    case 'UpdateItem':
    case 'DeleteItem':
      return [{ table: input.TableName as string, key: keyOf(input.Key as Item) }];
    case 'TransactWriteItems':
      return (input.TransactItems as Item[]).map((entry) => {
        const [operation, body] = Object.entries(entry)[0] as [string, Item];
        return {
          table: body.TableName as string,
          key: operation === 'Put' ? keyOf(body.Item as Item) : keyOf(body.Key as Item),
        };
      });
    case 'BatchWriteItem':
      return Object.entries(input.RequestItems as Record<string, Item[]>).flatMap(([table, requests]) =>
        requests.map((request) => ({
          table,
          key: request.PutRequest
            ? keyOf((request.PutRequest as Item).Item as Item)
            : keyOf((request.DeleteRequest as Item).Key as Item),
        })),
      );
    default:
      return [];
  }
}

function writeAccesses(
  kind: string,
  input: Item,
  before: (Item | undefined)[],
  after: (Item | undefined)[] | undefined,
  failed: boolean,
): ItemAccess[] {
  const factor = kind === 'TransactWriteItems' ? 2 : 1;
  const targets = writeTargets(kind, input);
  return before.map((old, i) => {
    const { pk, sk } = targets[i]!.key;
    const oldSize = old ? itemSize(old) : 0;
    // A cancelled transaction is priced as if every item's condition failed (an estimate).
    if (failed || !after) {
      const wcu = factor * Math.max(1, Math.ceil(oldSize / 1024));
      return { pk, sk, rcu: 0, wcu, created: false, range: false };
    }
    const now = after[i];
    const newSize = now ? itemSize(now) : 0;
    const wcu = factor * Math.max(1, Math.ceil(Math.max(oldSize, newSize) / 1024));
    return { pk, sk, rcu: 0, wcu, created: !old && now !== undefined, range: false };
  });
}

function readAccesses(kind: string, input: Item, output: Item): ItemAccess[] {
  const unit = (item: Item | undefined, consistent: boolean) =>
    Math.max(1, Math.ceil((item ? itemSize(item) : 0) / 4096)) * (consistent ? 1 : 0.5);
  const access = (key: Key, rcu: number, range = false): ItemAccess => ({
    pk: key.pk,
    sk: key.sk,
    rcu,
    wcu: 0,
    created: false,
    range,
  });
  if (kind === 'GetItem') {
    return [access(input.Key as Key, unit(output.Item as Item | undefined, input.ConsistentRead === true))];
  }
  if (kind === 'BatchGetItem') {
    const accesses: ItemAccess[] = [];
    const responses = (output.Responses ?? {}) as Record<string, Item[]>;
    for (const [table, request] of Object.entries(input.RequestItems as Record<string, Item>)) {
      const found = responses[table] ?? [];
      for (const key of request.Keys as Key[]) {
        const item = found.find((candidate) => candidate.pk === key.pk && candidate.sk === key.sk);
        accesses.push(access(key, unit(item, request.ConsistentRead === true)));
      }
    }
    return accesses;
  }
  // Query (the sweeper's ledger listing) and Scan: the whole items read (see `unprojected`), their sizes summed
  // and rounded up to 4 KB, as one access to the partition at its first item. (A filter's dropped items are not
  // priced: none on the measured paths. Nor is TransactGetItems.)
  const items = (output.Items ?? []) as Item[];
  const bytes = items.reduce((total, item) => total + itemSize(item), 0);
  const rcu = Math.max(1, Math.ceil(bytes / 4096)) * (input.ConsistentRead === true ? 1 : 0.5);
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const first = items[0];
  const pk = typeof first?.pk === 'string' ? first.pk : String(values[':pk'] ?? '(scan)');
  const sk = typeof first?.sk === 'string' ? first.sk : '';
  return [access({ pk, sk }, rcu, true)];
}

/** DynamoDB's item size: attribute names plus values, as its documentation counts them. */
export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    size += Buffer.byteLength(name) + valueSize(value);
  }
  return size;
}

function valueSize(value: unknown): number {
  if (value === null || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(String(value));
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set)
    return [...value].reduce((total: number, element) => total + valueSize(element), 0);
  if (Array.isArray(value))
    return 3 + value.reduce((total: number, element) => total + 1 + valueSize(element), 0);
  if (typeof value === 'object') {
    return (
      3 +
      Object.entries(value as Item).reduce(
        (total, [name, element]) =>
          element === undefined ? total : total + Buffer.byteLength(name) + 1 + valueSize(element),
        0,
      )
    );
  }
  return 0;
}

/** Numbers take about one byte per two significant digits, plus one. */
function numberSize(text: string): number {
  const mantissa = text.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '');
  const digits = Math.max(1, mantissa.replace(/0+$/, '').length);
  return Math.ceil(digits / 2) + 1;
}
