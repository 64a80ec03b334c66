/**
 * The capacity model's arithmetic, over a trace of requests on a virtual clock (bench/capacity.ts records and
 * replays it): per second, the write and read units on each item, each partition key and each partition key's
 * write tail, against DynamoDB's per-partition limits; and the transaction conflicts a window of a transaction's
 * latency predicts, with the retries they cost the send. No DynamoDB here: a unit test drives it with a hand-made
 * trace.
 */
import type { ItemAccess } from './meter';

/** DynamoDB's throughput limit of one partition, per second (an item never spans partitions). */
export const PARTITION_LIMITS = { wcu: 1000, rcu: 3000 } as const;

/** The load at which a hot spot is counted as reached: half its limit, the headroom left for bursts. */
export const CEILING_SHARE = 0.5;

/** An item access as the model reads it; `appends` marks a write that creates the last sort key of its partition. */
export interface ModelAccess extends ItemAccess {
  appends?: boolean;
  /**
   * An item of one verification (its record, its number, its ledger line): its requests are steps of one flow,
   * seconds apart, so the model counts no conflict on it (repeated numbers are not modelled).
   */
  own?: boolean;
  /**
   * An API key's own item, spread over as many keys as the per-key limit requires (spreadApiKeys): more sends
   * bring more keys, so its load per key stays at the limit whatever the rate.
   */
  keySpread?: boolean;
}

export interface TimedRequest {
  /** Virtual time, ms. */
  at: number;
  transactional: boolean;
  items: ModelAccess[];
  /** The index of the verification the request belongs to (which of the service's API keys it uses). */
  verification?: number;
  /** The send's accepting transaction (balance, verification, charge line, number): retried on a conflict. */
  accepting?: boolean;
}

type Scope = 'item' | 'partition' | 'tail';

interface HotSpot {
  scope: Scope;
  /** The key's family, its identifiers replaced (`SERVICE#<VA>/SERVICE`, `SERVICE#<VA>/CHARGE#… tail`). */
  family: string;
  /** The hottest key of the family. */
  key: string;
  /** Peak units in one second of virtual time. */
  wcu: number;
  rcu: number;
  /** The larger of wcu / 1000 and rcu / 3000. */
  share: number;
  /** The rate at which it reaches CEILING_SHARE of its limit (loads grow with the rate; Infinity when not). */
  rateAtCeiling: number;
}

/** The hot spot with the highest share of its limit, as bench/results.json reports it. */
interface Hottest {
  /** Its key family and scope: `SERVICE#<VA>/SERVICE (item)`. */
  item: string;
  key: string;
  wcuPerSecond: number;
  rcuPerSecond: number;
  shareOfLimit: number;
}

/**
 * The send's accepting transaction under conflicts: cancelled by a TransactionConflict with probability p, it is
 * retried until applied, so a send takes 1 / (1 - p) transactions. A cancelled transaction is assumed to consume
 * the units of the applied one (AWS documents no lower figure).
 */
interface Retries {
  /** Accepting transactions that met another transaction's write on one of their items within the window, of all. */
  conflictProbability: number;
  transactionsPerSend: number;
  retriesPerSend: number;
  /** WCU of one accepting transaction (the mean over the trace). */
  wcuPerTransaction: number;
  extraWcuPerSend: number;
}

interface ConflictModel {
  windowMs: number;
  transactions: number;
  /** Writes that meet another write of the same item within the window, one of the two a transaction. */
  conflicting: number;
  /** Conflicting writes by the family of the item they met on. */
  byFamily: Record<string, number>;
  /**
   * The rate at which the busiest item a transaction writes gets two writes closer than the window on an even
   * arrival (Infinity without transactions).
   */
  conflictFreeRate: number;
  conflictFamily: string;
}

export interface CapacityModel {
  rate: number;
  /** The same rate, by the name the results' readers look for. */
  sendsPerSecond: number;
  seconds: number;
  hotSpots: HotSpot[];
  hottest: Hottest | undefined;
  /** The first hot spot to reach CEILING_SHARE of its limit as the rate grows. */
  ceiling: HotSpot | undefined;
  /** Its rate (Infinity without a load that grows with the rate). */
  ceilingSendsPerSecond: number;
  /** The send's accepting transaction's conflict probability (retries.conflictProbability). */
  conflictRate: number;
  retries: Retries;
  conflicts: ConflictModel;
}

/** API keys one service's sends come from: the fewest that keep each within the per-key limit. */
export function apiKeysFor(
  rate: number,
  keyRequestsPerVerification: number,
  keyRequestsPerMinute: number,
): number {
  return Math.max(1, Math.ceil((rate * keyRequestsPerVerification * 60) / keyRequestsPerMinute));
}

/**
 * The trace with each API key's own item renamed per verification (`<pk>~<verification mod keys>`), so that each
 * of `keys` keys takes an equal share of the verifications; requests of no verification keep their key.
 */
export function spreadApiKeys(
  trace: TimedRequest[],
  keys: number,
  isKeyItem: (access: ModelAccess) => boolean,
): TimedRequest[] {
  return trace.map((request) => {
    const verification = request.verification;
    if (verification === undefined || !request.items.some(isKeyItem)) return request;
    return {
      ...request,
      items: request.items.map((access) =>
        isKeyItem(access)
          ? { ...access, pk: `${access.pk}~${verification % keys}`, keySpread: true }
          : access,
      ),
    };
  });
}

const ID_SEGMENTS: [RegExp, string][] = [
  [/^(VA|VE|HX)[0-9a-f]{8,}(~\d+)?$/, '<$1>'],
  [/^[0-9a-f]{16,}(~\d+)?$/, '<hash>'],
  [/^\+\d+(~\d+)?$/, '<number>'],
  [/^[A-Z]{2}$/, '<country>'],
  // A balance shard's partition, `SERVICE#<VA>#<n>`.
  [/^\d{1,2}$/, '<shard>'],
];

const familySegment = (segment: string): string => {
  for (const [pattern, name] of ID_SEGMENTS) if (pattern.test(segment)) return segment.replace(pattern, name);
  return segment;
};

/** `SERVICE#VA12…` -> `SERVICE#<VA>`; `GUARD#GLOBAL#GB` -> `GUARD#GLOBAL#<country>`. */
export function partitionFamily(pk: string): string {
  const [prefix = '', ...rest] = pk.split('#');
  return [prefix, ...rest.map(familySegment)].join('#');
}

/** `SERVICE#VA12…/CHARGE#2026…#VE…` -> `SERVICE#<VA>/CHARGE#…`; `…/SERVICE` stays. */
export function itemFamily(pk: string, sk: string): string {
  const hash = sk.indexOf('#');
  return `${partitionFamily(pk)}/${hash < 0 ? sk : `${sk.slice(0, hash)}#…`}`;
}

interface Load {
  family: string;
  /** Its load does not grow with the rate (ModelAccess.keySpread). */
  constant: boolean;
  /** Units by virtual second. */
  wcu: Map<number, number>;
  rcu: Map<number, number>;
}

function add(loads: Map<string, Load>, key: string, family: string, second: number, access: ModelAccess) {
  let load = loads.get(key);
  if (!load) {
    load = { family, constant: access.keySpread === true, wcu: new Map(), rcu: new Map() };
    loads.set(key, load);
  }
  if (access.wcu > 0) load.wcu.set(second, (load.wcu.get(second) ?? 0) + access.wcu);
  if (access.rcu > 0) load.rcu.set(second, (load.rcu.get(second) ?? 0) + access.rcu);
}

const peak = (values: Map<number, number>) => Math.max(0, ...values.values());
const round3 = (value: number) => Math.round(value * 1000) / 1000;

/** The hottest key of each family in `loads`, at `rate`. */
function hotSpots(scope: Scope, loads: Map<string, Load>, rate: number): HotSpot[] {
  const byFamily = new Map<string, HotSpot>();
  for (const [key, load] of loads) {
    const wcu = peak(load.wcu);
    const rcu = peak(load.rcu);
    const share = Math.max(wcu / PARTITION_LIMITS.wcu, rcu / PARTITION_LIMITS.rcu);
    const known = byFamily.get(load.family);
    if (known && known.share >= share) continue;
    byFamily.set(load.family, {
      scope,
      family: load.family,
      key,
      wcu: round3(wcu),
      rcu: round3(rcu),
      share: round3(share),
      rateAtCeiling: share > 0 && !load.constant ? Math.round((rate * CEILING_SHARE) / share) : Infinity,
    });
  }
  return [...byFamily.values()];
}

/**
 * Marks the writes that append to their partition's item collection: each creates a sort key after every sort
 * key created before it in the same partition (a time-ordered ledger's lines). In trace order; only partitions
 * where that happens more than once keep the mark (a partition of one item has no tail of its own).
 */
export function markAppends<T extends { items: ModelAccess[] }>(trace: T[]): T[] {
  const last = new Map<string, string>();
  const appended = new Map<string, ModelAccess[]>();
  for (const request of trace) {
    for (const access of request.items) {
      if (!access.created) continue;
      const before = last.get(access.pk);
      if (before !== undefined && access.sk <= before) continue;
      last.set(access.pk, access.sk);
      const list = appended.get(access.pk) ?? [];
      list.push(access);
      appended.set(access.pk, list);
    }
  }
  for (const list of appended.values()) if (list.length > 1) for (const access of list) access.appends = true;
  return trace;
}

/**
 * Per virtual second: units on each item (ranges excluded: a Query reads many), each partition key, and each
 * partition's tail (appending writes, and range reads from a sort key an appending write created). Conflicts: a
 * write meeting an earlier write of the same item less than `windowMs` before it, one of the two a transaction
 * (DynamoDB cancels a transaction, or refuses a write, that meets a transaction in progress on its item).
 */
export function analyseCapacity(
  trace: TimedRequest[],
  options: { rate: number; seconds: number; windowMs: number },
): CapacityModel {
  const items = new Map<string, Load>();
  const partitions = new Map<string, Load>();
  const tails = new Map<string, Load>();
  const tailKeys = new Set<string>();
  for (const request of trace) {
    for (const access of request.items) if (access.appends) tailKeys.add(`${access.pk}\n${access.sk}`);
  }
  const sorted = [...trace].sort((a, b) => a.at - b.at);
  for (const request of sorted) {
    const second = Math.floor(request.at / 1000);
    for (const access of request.items) {
      add(partitions, access.pk, partitionFamily(access.pk), second, access);
      if (!access.range)
        add(items, `${access.pk}/${access.sk}`, itemFamily(access.pk, access.sk), second, access);
      const onTail = access.appends === true || (access.range && tailKeys.has(`${access.pk}\n${access.sk}`));
      if (onTail) add(tails, access.pk, `${itemFamily(access.pk, access.sk)} tail`, second, access);
    }
  }
  const spots = [
    ...hotSpots('item', items, options.rate),
    ...hotSpots('partition', partitions, options.rate),
    ...hotSpots('tail', tails, options.rate),
  ].sort((a, b) => b.share - a.share);
  const ceiling = spots.reduce<HotSpot | undefined>(
    (first, spot) =>
      Number.isFinite(spot.rateAtCeiling) && (!first || spot.rateAtCeiling < first.rateAtCeiling)
        ? spot
        : first,
    undefined,
  );
  const top = spots[0];
  const retries = acceptingRetries(sorted, options.windowMs);
  return {
    rate: options.rate,
    sendsPerSecond: options.rate,
    seconds: options.seconds,
    hotSpots: spots,
    hottest: top && {
      item: `${top.family} (${top.scope})`,
      key: top.key,
      wcuPerSecond: top.wcu,
      rcuPerSecond: top.rcu,
      shareOfLimit: top.share,
    },
    ceiling,
    ceilingSendsPerSecond: ceiling?.rateAtCeiling ?? Infinity,
    conflictRate: retries.conflictProbability,
    retries,
    conflicts: countConflicts(sorted, options.rate, options.windowMs),
  };
}

/**
 * The share of accepting transactions that meet another transaction's write on one of their items less than
 * `windowMs` earlier (the later of two overlapping transactions is the one cancelled), and what retrying them
 * costs. `sorted` in time order.
 */
function acceptingRetries(sorted: TimedRequest[], windowMs: number): Retries {
  const lastTransaction = new Map<string, number>();
  let accepting = 0;
  let conflicting = 0;
  let wcu = 0;
  for (const request of sorted) {
    const all = request.items.filter((access) => access.wcu > 0 && !access.range);
    const writes = all.filter((access) => !access.own);
    if (request.accepting) {
      accepting++;
      // A cancelled transaction is assumed to cost what the applied one does: every item's units.
      wcu += all.reduce((sum, access) => sum + access.wcu, 0);
      const met = writes.some((access) => {
        const before = lastTransaction.get(`${access.pk}/${access.sk}`);
        return before !== undefined && request.at - before < windowMs;
      });
      if (met) conflicting++;
    }
    if (request.transactional)
      for (const access of writes) lastTransaction.set(`${access.pk}/${access.sk}`, request.at);
  }
  const p = accepting > 0 ? conflicting / accepting : 0;
  const wcuPerTransaction = accepting > 0 ? wcu / accepting : 0;
  // At p = 1 every attempt meets another: no number of retries applies it.
  const retriesPerSend = p < 1 ? p / (1 - p) : Infinity;
  return {
    conflictProbability: p,
    transactionsPerSend: round3(1 + retriesPerSend),
    retriesPerSend: round3(retriesPerSend),
    wcuPerTransaction: round3(wcuPerTransaction),
    extraWcuPerSend: round3(retriesPerSend * wcuPerTransaction),
  };
}

function countConflicts(sorted: TimedRequest[], rate: number, windowMs: number): ConflictModel {
  const lastWrite = new Map<string, { at: number; transactional: boolean }>();
  const writesPerSecond = new Map<string, Map<number, number>>();
  const transactionalItems = new Set<string>();
  const byFamily: Record<string, number> = {};
  let transactions = 0;
  let conflicting = 0;
  for (const request of sorted) {
    if (request.transactional) transactions++;
    let met: string | undefined;
    for (const access of request.items) {
      if (access.wcu === 0 || access.range || access.own) continue;
      const key = `${access.pk}/${access.sk}`;
      const before = lastWrite.get(key);
      if (before && request.at - before.at < windowMs && (before.transactional || request.transactional))
        met ??= itemFamily(access.pk, access.sk);
      lastWrite.set(key, { at: request.at, transactional: request.transactional });
      if (request.transactional) transactionalItems.add(key);
      const second = Math.floor(request.at / 1000);
      const counts = writesPerSecond.get(key) ?? new Map<number, number>();
      counts.set(second, (counts.get(second) ?? 0) + 1);
      writesPerSecond.set(key, counts);
    }
    if (met) {
      conflicting++;
      byFamily[met] = (byFamily[met] ?? 0) + 1;
    }
  }
  // Writes closer than the window begin when an item takes more than 1000 / windowMs writes a second.
  let busiest = { writes: 0, family: '' };
  for (const key of transactionalItems) {
    const writes = peak(writesPerSecond.get(key)!);
    const [pk = '', sk = ''] = key.split('/');
    if (writes > busiest.writes) busiest = { writes, family: itemFamily(pk, sk) };
  }
  return {
    windowMs,
    transactions,
    conflicting,
    byFamily,
    conflictFreeRate: busiest.writes > 0 ? Math.round((rate * (1000 / windowMs)) / busiest.writes) : Infinity,
    conflictFamily: busiest.family,
  };
}
