/**
 * The guard's aggregates: a pure fold of send, receipt and conversion events (from the table's stream) into what
 * the rules (./signals.ts, ./rules/) read, bounded in size whatever the traffic (`LIMITS`). Per scope (a service,
 * or `GLOBAL` for all services) and country:
 * - decayed totals (half-life `BASELINE_HALF_LIFE_MS`) of sends and checked codes, for the country and per range
 *   (country prefix + first 4 national digits): the baseline, and which ranges are established;
 * - one-minute buckets of the last hour (sends, accepted, checked; the same for ranges not established);
 * - five-minute buckets per range over the last 35 minutes (a range's share of the country's recent traffic, and
 *   its codes a prompt receipt says were delivered);
 * - per run prefix (all but the last 3 digits) the last numbers sent to (near-sequential runs), and for runs
 *   long enough to be suspect, their sends and checked codes per minute;
 * - the hour's and the day's sends and spend (the owner's caps).
 */
import type { CountryGuardState, GuardDecision, ScopeGuardState } from './model';
import { placeOf } from './prefix';

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const BASELINE_HALF_LIFE_MS = 3 * DAY;
/** `lately`'s half-life: a paced attacker's few sends an hour add up, a range's checks of days ago are gone. */
const LATELY_HALF_LIFE_MS = 3 * HOUR;
/** A country has a baseline when this many codes were checked there, the first sends this long ago. */
export const BASELINE = { conversions: 30, ageMs: DAY } as const;
/** The same across countries, for the service-wide rules. */
const SCOPE_BASELINE = { conversions: 100, ageMs: DAY } as const;

/** A probe: about one send in 50 to a blocked destination goes through (`isProbe`). */
const PROBE_PER_MILLE = 20;
const PROBE_PERIOD_MS = 15 * MINUTE;

export const RECENT_MS = 60 * MINUTE;
export const RANGE_BUCKET_MS = 5 * MINUTE;
const RANGE_RECENT_MS = 35 * MINUTE;
export const RUN_WINDOW_MS = 10 * MINUTE;
/** A run prefix this long (near-sequential numbers, strict's run) is kept per minute as a suspect. */
export const SUSPECT_RUN = 4;
const SUSPECT_KEEP_MS = 40 * MINUTE;

/** Caps that keep every item far below DynamoDB's 400 KB whatever the traffic (docs/guard.md, "Limits"). */
export const LIMITS = {
  ranges: 300,
  lately: 200,
  recentRanges: 150,
  runPrefixes: 150,
  runEntries: 8,
  suspects: 30,
  established: 300,
  blocks: 40,
  tags: 8,
  open: 200,
} as const;

/**
 * A receipt this soon after the send says the code reached the phone while its user waited for it (the delivery
 * switches channel after 8 s unconfirmed, so a code the user waits for is confirmed well within this). Such codes
 * are judged at the country's own conversion: no outage or delay can keep them from their users.
 */
const PROMPT_RECEIPT_MS = 30_000;

/** One event from the stream. A send refused (`accepted: false`) can never be checked. */
export type GuardEvent =
  | {
      kind: 'send';
      serviceSid: string;
      e164: string;
      country: string;
      at: number;
      accepted: boolean;
      /** The send's price (units of 0.0001 USD), for the spend caps; refused sends cost nothing. */
      price?: number;
      decision?: GuardDecision;
      /**
       * The caller made the code and checks it itself (the send's `Code`): the guard never sees it typed, so the
       * send counts toward the owner's caps only, never as a code left unchecked.
       */
      callerCode?: true;
    }
  | {
      /** A receipt said the send's code reached the phone (`at`); only a prompt one is counted. */
      kind: 'delivered';
      serviceSid: string;
      e164: string;
      country: string;
      at: number;
      sentAt: number;
    }
  | {
      kind: 'conversion';
      serviceSid: string;
      e164: string;
      country: string;
      at: number;
      sentAt: number;
      /** Kept for stored events; no longer read (a send that was sent can convert, shadow or not). */
      flagged?: boolean;
      /** The send passed a block as a known number (its decision's mode `known`): not one of the block's probes. */
      known?: true;
    };

export interface Decayed {
  s: number;
  c: number;
  t: number;
}

/** One minute: sends (all), accepted sends `a`, their conversions `c`; the same for ranges not established. */
export interface MinuteBucket {
  s: number;
  a: number;
  c: number;
  n: number;
  na: number;
  nc: number;
  /** Accepted sends to ranges rare for the country (`RARE_RANGE_SHARE`); absent when none. */
  ra?: number;
  /** Of `na`, those a prompt receipt says were delivered; absent when none. */
  nd?: number;
}

/** A run prefix whose numbers ran near-sequential: its accepted sends and checked codes per minute. */
interface Suspect {
  since: number;
  /** Minute index → [accepted, checked]. */
  m: Record<string, [number, number]>;
  /** Global scope: tags of the services whose unchecked sends made the run. */
  tags?: string[];
}

type RangeBucket = [number, number, number, number?];
/** A range's last hours in `lately`: [sends, checked, delivered promptly?]. */
type LatelyRange = [number, number, number?];

/** One number of a run: [last 3 digits, when (epoch seconds), 0 accepted / 1 checked / 2 refused, service tag]. */
type RunEntry = [number, number, number, string?];

export interface CountryStats {
  v: 2;
  /** `since`: the first send folded; `n`: sends to ranges not established. */
  base: {
    s: number;
    c: number;
    n: number;
    t: number;
    since: number;
    /**
     * [accepted sends, those to a rare range], decayed as `s`: counted since the version that added it, so its
     * share stands on its own sends, not on `s`.
     */
    rare?: [number, number];
    /**
     * [accepted sends, checked codes] to ranges not established (as the minutes' `na`, `nc`), decayed as `s`:
     * counted since the version that added it.
     */
    novel?: [number, number];
  };
  /** Range → [sends, checked], decayed to `base.t`. */
  ranges: Record<string, [number, number]>;
  /**
   * Range → [sends, checked, delivered promptly] of the last hours (decayed with `LATELY_HALF_LIFE_MS`), the
   * busiest: for `unchecked_range`, which a check days ago must not hide and which the busiest of days (`ranges`)
   * would lose. The third is absent while none (and in items stored before receipts were counted there).
   */
  lately?: Record<string, LatelyRange>;
  minutes: Record<string, MinuteBucket>;
  /**
   * Range → five-minute index → [sends, accepted, checked, delivered promptly]; the fourth is absent in
   * buckets stored before receipts were counted.
   */
  recentRanges: Record<string, Record<string, RangeBucket>>;
  /** Global scope: range → tags of services that sent there lately. */
  rangeTags?: Record<string, string[]>;
  runs: Record<string, RunEntry[]>;
  suspects: Record<string, Suspect>;
  /** [hour or day index, sends, spend]: what the caps compare. */
  caps: { h?: [number, number, number]; d?: [number, number, number] };
}

/** Across countries: `n*` sends to countries not established, `r*` to ranges not established. */
export interface ScopeMinute {
  n: number;
  na: number;
  nc: number;
  nCountries: string[];
  r: number;
  ra: number;
  rc: number;
  rCountries: string[];
}

export interface ScopeStats {
  v: 2;
  base: { c: number; since: number };
  countries: Record<string, Decayed>;
  minutes: Record<string, ScopeMinute>;
}

const emptyCountryStats = (): CountryStats => ({
  v: 2,
  base: { s: 0, c: 0, n: 0, t: 0, since: 0 },
  ranges: {},
  minutes: {},
  recentRanges: {},
  runs: {},
  suspects: {},
  caps: {},
});
const emptyScopeStats = (): ScopeStats => ({
  v: 2,
  base: { c: 0, since: 0 },
  countries: {},
  minutes: {},
});
export const emptyCountryState = (): CountryGuardState => ({ blocks: [], established: [], lifted: {} });
export const emptyScopeState = (): ScopeGuardState => ({ establishedCountries: [], lifted: {} });

/** Stats stored by an earlier version of the guard start again empty (their shapes differ). */
export const currentCountryStats = (stats: CountryStats | undefined): CountryStats =>
  stats?.v === 2 ? stats : emptyCountryStats();
export const currentScopeStats = (stats: ScopeStats | undefined): ScopeStats =>
  stats?.v === 2 ? stats : emptyScopeStats();

/** A short tag for a service, kept in global aggregates instead of its SID. */
export function serviceTag(serviceSid: string): string {
  let h = 2166136261;
  for (let i = 0; i < serviceSid.length; i++) h = Math.imul(h ^ serviceSid.charCodeAt(i), 16777619);
  return (h >>> 0).toString(36);
}

/**
 * Whether this send to a blocked destination goes through as a probe: about `PROBE_PER_MILLE` in 1,000 numbers,
 * a different draw every 15 minutes. Deterministic, so a number's retry within the period gets the same answer.
 */
export function isProbe(e164: string, now: number): boolean {
  let h = 2166136261;
  const text = `${e164}:${Math.floor(now / PROBE_PERIOD_MS)}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  h = Math.imul(h ^ (h >>> 15), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return ((h ^ (h >>> 16)) >>> 0) % 1000 < PROBE_PER_MILLE;
}

const decayFactor = (from: number, to: number) =>
  from === 0 || to <= from ? 1 : Math.pow(0.5, (to - from) / BASELINE_HALF_LIFE_MS);

export const decay = (value: Decayed, now: number): Decayed => {
  const factor = decayFactor(value.t, now);
  return { s: value.s * factor, c: value.c * factor, t: Math.max(value.t, now) };
};

/** Brings the country's totals and every range's to `now` (ranges are kept decayed to `base.t`). */
function decayCountry(stats: CountryStats, now: number): void {
  const factor = decayFactor(stats.base.t, now);
  if (factor !== 1) {
    stats.base.s *= factor;
    stats.base.c *= factor;
    stats.base.n *= factor;
    if (stats.base.rare) {
      stats.base.rare[0] *= factor;
      stats.base.rare[1] *= factor;
    }
    if (stats.base.novel) {
      stats.base.novel[0] *= factor;
      stats.base.novel[1] *= factor;
    }
    for (const value of Object.values(stats.ranges)) {
      value[0] *= factor;
      value[1] *= factor;
    }
  }
  if (stats.lately && stats.base.t > 0 && now > stats.base.t) {
    const fast = Math.pow(2, -(now - stats.base.t) / LATELY_HALF_LIFE_MS);
    for (const value of Object.values(stats.lately)) {
      value[0] *= fast;
      value[1] *= fast;
      if (value[2] !== undefined) value[2] *= fast;
    }
  }
  stats.base.t = Math.max(stats.base.t, now);
}

/**
 * A range (or country) is established when codes sent there were checked: two lately (1.5 once decayed, so
 * within about a day), and a quarter of them.
 */
export const isEstablishedRange = (d: readonly [number, number] | undefined): boolean =>
  !!d && d[1] >= 1.5 && d[1] >= 0.25 * d[0];
export const isEstablishedCountry = (d: Decayed | undefined): boolean => !!d && d.c >= 3 && d.c >= 0.3 * d.s;

/**
 * A range is rare for the country when it holds less than this share of its checked codes (decayed; a range out of
 * the busiest kept, or never sent to, holds none). Real users' numbers fall mostly where the country's users check
 * their codes; numbers drawn over the whole numbering mostly elsewhere. Checked codes, not sends: a flood's own sends
 * must not make its ranges common.
 */
const RARE_RANGE_SHARE = 2e-3;
const isRareRange = (stats: CountryStats, range: string): boolean =>
  (stats.ranges[range]?.[1] ?? 0) < RARE_RANGE_SHARE * stats.base.c;

/** Whether the rules that compare with a baseline may act for this country. */
export const hasBaseline = (stats: CountryStats, now: number): boolean =>
  stats.base.c >= BASELINE.conversions && stats.base.since > 0 && now - stats.base.since >= BASELINE.ageMs;
export const scopeHasBaseline = (stats: ScopeStats, now: number): boolean =>
  stats.base.c >= SCOPE_BASELINE.conversions &&
  stats.base.since > 0 &&
  now - stats.base.since >= SCOPE_BASELINE.ageMs;

export const minuteIndex = (at: number) => Math.floor(at / MINUTE);
export const rangeBucketIndex = (at: number) => Math.floor(at / RANGE_BUCKET_MS);
const emptyMinute = (): MinuteBucket => ({ s: 0, a: 0, c: 0, n: 0, na: 0, nc: 0 });
const emptyScopeMinute = (): ScopeMinute => ({
  n: 0,
  na: 0,
  nc: 0,
  nCountries: [],
  r: 0,
  ra: 0,
  rc: 0,
  rCountries: [],
});

/** What applying one event to a country's stats found out, for the scope-wide fold. */
export interface EventFacts {
  novelRange: boolean;
}

const addTag = (tags: string[] | undefined, tag: string | undefined): string[] | undefined => {
  if (!tag) return tags;
  const list = tags ?? [];
  if (!list.includes(tag)) list.push(tag);
  if (list.length > LIMITS.tags) list.splice(0, list.length - LIMITS.tags);
  return list;
};

/**
 * Folds one event into a country's stats (in place); returns whether its range was novel. `tag`: the sending
 * service's tag, kept by the global scope only.
 */
export function applyCountryEvent(stats: CountryStats, event: GuardEvent, tag?: string): EventFacts {
  const place = placeOf(event.e164, event.country);
  // Totals are kept as of `base.t`: an event adds its weight at that time rather than decaying every range to
  // each event's time (a batch touches one item many times; `pruneCountryStats` brings them all to the batch's
  // time once). An event far ahead moves everything on first, so a weight stays near 1.
  if (stats.base.t === 0 || event.at > stats.base.t + HOUR) decayCountry(stats, event.at);
  const weight = Math.pow(2, (event.at - stats.base.t) / BASELINE_HALF_LIFE_MS);
  const latelyWeight = Math.pow(2, (event.at - stats.base.t) / LATELY_HALF_LIFE_MS);
  // `lately` is read by a rule of the service's own aggregates only: the global scope (its events tagged with their
  // service) keeps none.
  const lately = tag === undefined ? (stats.lately ??= {}) : undefined;
  const novelRange = !isEstablishedRange(stats.ranges[place.range]);
  if (event.kind === 'delivered') {
    // Counted in the send's bucket, when the receipt was prompt; a late one (an outage's) tells nothing.
    const bucket = stats.recentRanges[place.range]?.[String(rangeBucketIndex(event.sentAt))];
    if (bucket && event.at - event.sentAt <= PROMPT_RECEIPT_MS) {
      bucket[3] = (bucket[3] ?? 0) + 1;
      const minute = stats.minutes[String(minuteIndex(event.sentAt))];
      if (minute && novelRange) minute.nd = (minute.nd ?? 0) + 1;
      const range = lately?.[place.range];
      if (range)
        range[2] = (range[2] ?? 0) + Math.pow(2, (event.sentAt - stats.base.t) / LATELY_HALF_LIFE_MS);
    }
    return { novelRange };
  }
  const minuteKey = String(minuteIndex(event.kind === 'send' ? event.at : event.sentAt));
  const rangeKey = String(rangeBucketIndex(event.kind === 'send' ? event.at : event.sentAt));
  if (event.kind === 'send') {
    const run = stats.runs[place.runPrefix] ?? [];
    const accepted = event.accepted;
    const minute = (stats.minutes[minuteKey] ??= emptyMinute());
    minute.s += 1;
    if (accepted) minute.a += 1;
    if (novelRange) {
      minute.n += 1;
      if (accepted) minute.na += 1;
    }
    const rare = isRareRange(stats, place.range);
    if (rare && accepted) minute.ra = (minute.ra ?? 0) + 1;
    const bucket = ((stats.recentRanges[place.range] ??= {})[rangeKey] ??= [0, 0, 0]);
    bucket[0] += 1;
    if (accepted) bucket[1] += 1;
    if (tag) {
      stats.rangeTags ??= {};
      stats.rangeTags[place.range] = addTag(stats.rangeTags[place.range], tag)!;
    }
    // The run: most recent last; a run prefix used again moves to the end (the least recently used go first).
    delete stats.runs[place.runPrefix];
    run.push(
      tag
        ? [place.runSuffix, Math.floor(event.at / 1000), accepted ? 0 : 2, tag]
        : [place.runSuffix, Math.floor(event.at / 1000), accepted ? 0 : 2],
    );
    if (run.length > LIMITS.runEntries) run.splice(0, run.length - LIMITS.runEntries);
    stats.runs[place.runPrefix] = run;
    const suspect = stats.suspects[place.runPrefix] ?? newSuspect(stats, place.runPrefix, event.at);
    if (suspect && accepted) (suspect.m[minuteKey] ??= [0, 0])[0] += 1;
    if (suspect && tag && accepted) suspect.tags = addTag(suspect.tags, tag);
    if (accepted) {
      if (stats.base.since === 0) stats.base.since = event.at;
      stats.base.s += weight;
      if (novelRange) stats.base.n += weight;
      stats.base.rare ??= [0, 0];
      stats.base.rare[0] += weight;
      if (rare) stats.base.rare[1] += weight;
      if (novelRange) (stats.base.novel ??= [0, 0])[0] += weight;
      const range = (stats.ranges[place.range] ??= [0, 0]);
      range[0] += weight;
      if (lately) (lately[place.range] ??= [0, 0])[0] += latelyWeight;
      countTowardCaps(stats, event);
    }
  } else {
    const minute = stats.minutes[minuteKey];
    if (minute) {
      minute.c += 1;
      if (novelRange) minute.nc += 1;
    }
    const bucket = stats.recentRanges[place.range]?.[rangeKey];
    if (bucket) bucket[2] += 1;
    const entry = stats.runs[place.runPrefix]?.find(
      ([suffix, at]) => suffix === place.runSuffix && Math.abs(at * 1000 - event.sentAt) < 2000,
    );
    if (entry) entry[2] = 1;
    const suspect = stats.suspects[place.runPrefix];
    if (suspect) (suspect.m[minuteKey] ??= [0, 0])[1] += 1;
    stats.base.c += weight;
    if (novelRange) (stats.base.novel ??= [0, 0])[1] += weight;
    const range = (stats.ranges[place.range] ??= [weight, 0]);
    range[1] += weight;
    if (lately) (lately[place.range] ??= [0, 0])[1] += latelyWeight;
  }
  return { novelRange };
}

/** Counts an accepted send toward the hour's and the day's sends and spend, what the owner's caps compare. */
export function countTowardCaps(stats: CountryStats, send: { at: number; price?: number }): void {
  const caps = stats.caps;
  const hour = Math.floor(send.at / HOUR);
  const day = Math.floor(send.at / DAY);
  if (caps.h?.[0] !== hour) caps.h = [hour, 0, 0];
  if (caps.d?.[0] !== day) caps.d = [day, 0, 0];
  caps.h[1] += 1;
  caps.d[1] += 1;
  caps.h[2] += send.price ?? 0;
  caps.d[2] += send.price ?? 0;
}

/** A run prefix becomes suspect when its recent numbers run near-sequential (strict's length): kept per minute. */
function newSuspect(stats: CountryStats, runPrefix: string, at: number): Suspect | undefined {
  const entries = (stats.runs[runPrefix] ?? []).filter(([, sec]) => sec * 1000 > at - RUN_WINDOW_MS);
  if (longestRun(entries.map(([suffix]) => suffix)) < SUSPECT_RUN) return undefined;
  const suspect: Suspect = { since: at, m: {} };
  // The entries already folded (the newest, this send, is counted by the caller).
  for (const [, sec, state, tag] of entries.slice(0, -1)) {
    if (state === 2) continue;
    const cohort = (suspect.m[String(minuteIndex(sec * 1000))] ??= [0, 0]);
    cohort[0] += 1;
    if (state === 1) cohort[1] += 1;
    if (tag && state === 0) suspect.tags = addTag(suspect.tags, tag);
  }
  stats.suspects[runPrefix] = suspect;
  const names = Object.keys(stats.suspects);
  if (names.length > LIMITS.suspects) {
    const oldest = names.sort((a, b) => stats.suspects[a]!.since - stats.suspects[b]!.since)[0]!;
    delete stats.suspects[oldest];
  }
  return suspect;
}

/** Folds one event into the scope's cross-country stats (in place), given what the country fold found. */
export function applyScopeEvent(
  stats: ScopeStats,
  event: GuardEvent,
  facts: EventFacts,
): { novelCountry: boolean } {
  const known = stats.countries[event.country];
  const novelCountry = !isEstablishedCountry(known && decay(known, event.at));
  if (event.kind === 'send') {
    const minute = (stats.minutes[String(minuteIndex(event.at))] ??= emptyScopeMinute());
    if (novelCountry) {
      minute.n += 1;
      if (event.accepted) minute.na += 1;
      if (!minute.nCountries.includes(event.country)) minute.nCountries.push(event.country);
    }
    if (facts.novelRange) {
      minute.r += 1;
      if (event.accepted) minute.ra += 1;
      if (!minute.rCountries.includes(event.country)) minute.rCountries.push(event.country);
    }
    if (event.accepted) {
      if (stats.base.since === 0) stats.base.since = event.at;
      const d = decay(known ?? { s: 0, c: 0, t: event.at }, event.at);
      stats.countries[event.country] = { ...d, s: d.s + 1 };
    }
  } else if (event.kind === 'conversion') {
    const minute = stats.minutes[String(minuteIndex(event.sentAt))];
    if (minute && novelCountry) minute.nc += 1;
    if (minute && facts.novelRange) minute.rc += 1;
    const d = decay(known ?? { s: 1, c: 0, t: event.at }, event.at);
    stats.countries[event.country] = { ...d, c: d.c + 1 };
    stats.base.c += 1;
  }
  return { novelCountry };
}

export const round2 = (value: number) => Math.round(value * 100) / 100;

/** Drops what no window needs any more and caps every map (the item's size stays bounded). */
export function pruneCountryStats(stats: CountryStats, now: number): void {
  decayCountry(stats, now);
  const oldestMinute = minuteIndex(now - RECENT_MS);
  for (const key of Object.keys(stats.minutes)) if (Number(key) < oldestMinute) delete stats.minutes[key];
  const oldestBucket = rangeBucketIndex(now - RANGE_RECENT_MS);
  const recent: [string, number][] = [];
  for (const [range, buckets] of Object.entries(stats.recentRanges)) {
    let sends = 0;
    for (const [key, bucket] of Object.entries(buckets)) {
      if (Number(key) < oldestBucket) delete buckets[key];
      else sends += bucket[0];
    }
    if (Object.keys(buckets).length === 0) delete stats.recentRanges[range];
    else recent.push([range, sends]);
  }
  if (recent.length > LIMITS.recentRanges) {
    recent.sort((a, b) => b[1] - a[1]);
    for (const [range] of recent.slice(LIMITS.recentRanges)) delete stats.recentRanges[range];
  }
  if (stats.rangeTags)
    for (const range of Object.keys(stats.rangeTags))
      if (!stats.recentRanges[range]) delete stats.rangeTags[range];
  const oldestSecond = Math.floor((now - RUN_WINDOW_MS) / 1000);
  for (const [prefix, run] of Object.entries(stats.runs)) {
    const kept = run.filter(([, sec]) => sec > oldestSecond);
    if (kept.length === 0) delete stats.runs[prefix];
    else stats.runs[prefix] = kept;
  }
  const prefixes = Object.keys(stats.runs);
  // Insertion order is use order (a prefix used again moved to the end): drop the least recently used.
  for (const prefix of prefixes.slice(0, Math.max(0, prefixes.length - LIMITS.runPrefixes)))
    delete stats.runs[prefix];
  for (const [prefix, suspect] of Object.entries(stats.suspects)) {
    for (const key of Object.keys(suspect.m)) if (Number(key) < oldestMinute) delete suspect.m[key];
    const last = Math.max(suspect.since, ...Object.keys(suspect.m).map((key) => Number(key) * MINUTE));
    if (last < now - SUSPECT_KEEP_MS) delete stats.suspects[prefix];
  }
  for (const [range, value] of Object.entries(stats.ranges)) {
    if (value[0] < 0.05 && value[1] < 0.05) delete stats.ranges[range];
    else stats.ranges[range] = [round3(value[0]), round3(value[1])];
  }
  const ranges = Object.entries(stats.ranges);
  if (ranges.length > LIMITS.ranges)
    stats.ranges = Object.fromEntries(
      ranges.sort((a, b) => b[1][0] + b[1][1] - (a[1][0] + a[1][1])).slice(0, LIMITS.ranges),
    );
  if (stats.lately) {
    const kept = Object.entries(stats.lately)
      .filter(([, [sent, checked]]) => sent >= 0.05 || checked >= 0.05)
      .sort((a, b) => b[1][0] - a[1][0])
      .slice(0, LIMITS.lately)
      .map(([range, [sent, checked, delivered]]): [string, LatelyRange] => [
        range,
        delivered !== undefined && delivered >= 0.05
          ? [round3(sent), round3(checked), round3(delivered)]
          : [round3(sent), round3(checked)],
      ]);
    if (kept.length > 0) stats.lately = Object.fromEntries(kept);
    else delete stats.lately;
  }
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

export function pruneScopeStats(stats: ScopeStats, now: number): void {
  const oldestMinute = minuteIndex(now - 2 * RECENT_MS);
  for (const key of Object.keys(stats.minutes)) if (Number(key) < oldestMinute) delete stats.minutes[key];
  stats.countries = Object.fromEntries(
    Object.entries(stats.countries)
      .map(([country, d]) => [country, decay(d, now)] as const)
      .filter(([, d]) => d.s >= 0.05 || d.c >= 0.05),
  );
}

/** The longest run of distinct numbers, each within 3 of the previous one. */
export function longestRun(suffixes: number[]): number {
  const sorted = [...new Set(suffixes)].sort((a, b) => a - b);
  let best = sorted.length > 0 ? 1 : 0;
  let current = 1;
  for (let i = 1; i < sorted.length; i++) {
    current = sorted[i]! - sorted[i - 1]! <= 3 ? current + 1 : 1;
    best = Math.max(best, current);
  }
  return best;
}
