/**
 * The guard's signals, off the request path: a pure fold of send and conversion events (from the table's
 * stream) into stored aggregates, and the rules that turn the aggregates into the blocks the send path reads.
 *
 * Aggregates per scope (a service, or `GLOBAL` for all services) and country:
 * - decayed totals (half-life `BASELINE_HALF_LIFE_MS`) of sends and checked codes, for the country and per range
 *   (country prefix + first 4 national digits): the baseline, and which ranges are established (codes checked);
 * - one-minute buckets of the last hour (sends, checked, sends to ranges not established);
 * - five-minute buckets per range over the last 35 minutes (the range's share of the country's recent traffic);
 * - per run prefix (all but the last 3 digits), the numbers sent to in the last 10 minutes (near-sequential runs).
 * Per scope across countries: decayed totals per country (which countries are established) and one-minute
 * buckets of sends to countries and ranges not established.
 *
 * Conversion ratios count only sends that were accepted and not flagged by the guard: a blocked send can never be
 * checked, so counting it would keep a block up on its own.
 */
import type {
  BlockLevel,
  CountryGuardState,
  Figures,
  GuardBlock,
  GuardDecision,
  GuardReason,
  NoveltyBlock,
  ScopeGuardState,
} from './model';
import { countryPrefixOf, placeOf } from './prefix';

const MINUTE = 60_000;
export const BASELINE_HALF_LIFE_MS = 3 * 86_400_000;
/** A send not checked this long after it was made counts as not converted. */
export const MATURITY_MS = 3 * MINUTE;
const RECENT_MS = 60 * MINUTE;
const RANGE_BUCKET_MS = 5 * MINUTE;
const RANGE_RECENT_MS = 35 * MINUTE;
const RUN_WINDOW_MS = 10 * MINUTE;
const RUN_KEEP = 12;
const BLOCK_HOLD_MS = 30 * MINUTE;
const COUNTRY_HOLD_MS = 60 * MINUTE;
/** A flood's thin-range closing lasts this long after the flood was last seen going on. */
const FLOOD_HOLD_MS = 5 * MINUTE;
/** While a country is flooded, its established ranges that carry this share of its real traffic stay open. */
const FLOOD_OPEN_SHARE = 0.85;
/** Caps that keep an item far below DynamoDB's 400 KB (and the send path's read small). */
const MAX_RANGES = 400;
const MAX_ESTABLISHED = 300;
const MAX_BLOCKS = 60;
const MAX_BASE_NOVEL_SHARE = 0.1;
/** Reasons that block a prefix (as opposed to novelty): their sends are not counted as novel. */
const PREFIX_REASONS = new Set<GuardReason>(['high_risk_range', 'sequential_numbers', 'prefix_surge']);
/** A conversion ratio this far below the baseline's, by chance, in at most this share of cases (binomial). */
const SIGNIFICANCE = { standard: 0.001, strict: 0.01 } as const;
/** Baseline conversion assumed before a country has one. */
const DEFAULT_CONVERSION = 0.6;

/** P(X <= k) for X ~ Binomial(n, p). */
export function binomialAtMost(k: number, n: number, p: number): number {
  if (k >= n) return 1;
  let term = Math.pow(1 - p, n);
  let sum = term;
  for (let i = 1; i <= k; i++) {
    term *= ((n - i + 1) / i) * (p / (1 - p));
    sum += term;
  }
  return Math.min(1, sum);
}

/** One event from the stream. `flagged`: the guard blocked it or (shadow) would have. */
export type GuardEvent =
  | {
      kind: 'send';
      serviceSid: string;
      e164: string;
      country: string;
      at: number;
      accepted: boolean;
      decision?: GuardDecision;
    }
  | {
      kind: 'conversion';
      serviceSid: string;
      e164: string;
      country: string;
      at: number;
      sentAt: number;
      flagged: boolean;
    };

export interface Decayed {
  s: number;
  c: number;
  t: number;
}

/** One minute: sends (all), accepted-unflagged sends `a`, their conversions `c`; the same for novel ranges. */
export interface MinuteBucket {
  s: number;
  a: number;
  c: number;
  n: number;
  na: number;
  nc: number;
}

export interface CountryStats {
  base: Decayed & { n: number };
  ranges: Record<string, Decayed>;
  minutes: Record<string, MinuteBucket>;
  /** range → five-minute bucket start → [sends, accepted-unflagged, conversions]. */
  recentRanges: Record<string, Record<string, [number, number, number]>>;
  /** run prefix → [suffix, at] of the last sends. */
  runs: Record<string, [number, number][]>;
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
  countries: Record<string, Decayed>;
  minutes: Record<string, ScopeMinute>;
}

export const emptyCountryStats = (): CountryStats => ({
  base: { s: 0, c: 0, n: 0, t: 0 },
  ranges: {},
  minutes: {},
  recentRanges: {},
  runs: {},
});
export const emptyScopeStats = (): ScopeStats => ({ countries: {}, minutes: {} });
export const emptyCountryState = (): CountryGuardState => ({ blocks: [], established: [], lifted: {} });
export const emptyScopeState = (): ScopeGuardState => ({ establishedCountries: [], lifted: {} });

const decay = (value: Decayed, now: number): Decayed => {
  if (value.t === 0 || now <= value.t) return { ...value, t: Math.max(value.t, now) };
  const factor = Math.pow(0.5, (now - value.t) / BASELINE_HALF_LIFE_MS);
  return { ...value, s: value.s * factor, c: value.c * factor, t: now };
};

const decayBase = (base: CountryStats['base'], now: number): CountryStats['base'] => {
  const factor = base.t === 0 || now <= base.t ? 1 : Math.pow(0.5, (now - base.t) / BASELINE_HALF_LIFE_MS);
  return { s: base.s * factor, c: base.c * factor, n: base.n * factor, t: Math.max(base.t, now) };
};

/** A range (or country) is established when codes sent there were checked: at least 2, and a quarter of them. */
export const isEstablishedRange = (d: Decayed | undefined): boolean => !!d && d.c >= 2 && d.c >= 0.25 * d.s;
export const isEstablishedCountry = (d: Decayed | undefined): boolean => !!d && d.c >= 3 && d.c >= 0.3 * d.s;

const minuteKey = (at: number) => String(Math.floor(at / MINUTE));
const rangeBucketKey = (at: number) => String(Math.floor(at / RANGE_BUCKET_MS) * RANGE_BUCKET_MS);
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

const isFlagged = (event: GuardEvent): boolean =>
  event.kind === 'send' ? !event.accepted || event.decision !== undefined : event.flagged;

/** What applying one event to a country's stats found out, for the scope-wide fold. */
export interface EventFacts {
  novelRange: boolean;
}

/** Folds one event into a country's stats (in place); returns whether its range was novel. */
export function applyCountryEvent(stats: CountryStats, event: GuardEvent): EventFacts {
  const place = placeOf(event.e164, event.country);
  const range = stats.ranges[place.range];
  const novelRange = !isEstablishedRange(range && decay(range, event.at));
  const flagged = isFlagged(event);
  if (event.kind === 'send') {
    const minute = (stats.minutes[minuteKey(event.at)] ??= emptyMinute());
    minute.s += 1;
    if (!flagged) minute.a += 1;
    // A send a prefix block already explains is no sign of traffic to new places.
    const explained = !!event.decision && PREFIX_REASONS.has(event.decision.reason);
    if (novelRange && !explained) {
      minute.n += 1;
      if (!flagged) minute.na += 1;
    }
    const buckets = (stats.recentRanges[place.range] ??= {});
    const bucket = (buckets[rangeBucketKey(event.at)] ??= [0, 0, 0]);
    bucket[0] += 1;
    if (!flagged) bucket[1] += 1;
    const run = (stats.runs[place.runPrefix] ??= []);
    run.push([place.runSuffix, event.at]);
    if (run.length > RUN_KEEP) run.splice(0, run.length - RUN_KEEP);
    if (!flagged) {
      const base = decayBase(stats.base, event.at);
      stats.base = { ...base, n: base.n + (novelRange ? 1 : 0), s: base.s + 1 };
      const r = decay(range ?? { s: 0, c: 0, t: event.at }, event.at);
      stats.ranges[place.range] = { ...r, s: r.s + 1 };
    }
  } else if (!flagged) {
    // Counted in the minute its send was made, so a window's ratio compares like with like.
    const minute = stats.minutes[minuteKey(event.sentAt)];
    if (minute) {
      minute.c += 1;
      if (novelRange) minute.nc += 1;
    }
    const bucket = stats.recentRanges[place.range]?.[rangeBucketKey(event.sentAt)];
    if (bucket) bucket[2] += 1;
    const base = decayBase(stats.base, event.at);
    stats.base = { ...base, c: base.c + 1 };
    const r = decay(range ?? { s: 1, c: 0, t: event.at }, event.at);
    stats.ranges[place.range] = { ...r, c: r.c + 1 };
  }
  return { novelRange };
}

/** Folds one event into the scope's cross-country stats (in place), given what the country fold found. */
export function applyScopeEvent(stats: ScopeStats, event: GuardEvent, facts: EventFacts): void {
  const known = stats.countries[event.country];
  const novelCountry = !isEstablishedCountry(known && decay(known, event.at));
  const flagged = isFlagged(event);
  if (event.kind === 'send') {
    const minute = (stats.minutes[minuteKey(event.at)] ??= emptyScopeMinute());
    if (novelCountry) {
      minute.n += 1;
      if (!flagged) minute.na += 1;
      if (!minute.nCountries.includes(event.country)) minute.nCountries.push(event.country);
    }
    if (facts.novelRange) {
      minute.r += 1;
      if (!flagged) minute.ra += 1;
      if (!minute.rCountries.includes(event.country)) minute.rCountries.push(event.country);
    }
    if (!flagged) {
      const d = decay(known ?? { s: 0, c: 0, t: event.at }, event.at);
      stats.countries[event.country] = { ...d, s: d.s + 1 };
    }
  } else if (!flagged) {
    const minute = stats.minutes[minuteKey(event.sentAt)];
    if (minute && novelCountry) minute.nc += 1;
    if (minute && facts.novelRange) minute.rc += 1;
    const d = decay(known ?? { s: 1, c: 0, t: event.at }, event.at);
    stats.countries[event.country] = { ...d, c: d.c + 1 };
  }
}

/** Drops what no window needs any more and caps the per-range maps. */
export function pruneCountryStats(stats: CountryStats, now: number): void {
  const oldestMinute = Math.floor((now - RECENT_MS) / MINUTE);
  for (const key of Object.keys(stats.minutes)) if (Number(key) < oldestMinute) delete stats.minutes[key];
  for (const [range, buckets] of Object.entries(stats.recentRanges)) {
    for (const key of Object.keys(buckets)) if (Number(key) < now - RANGE_RECENT_MS) delete buckets[key];
    if (Object.keys(buckets).length === 0) delete stats.recentRanges[range];
  }
  for (const [prefix, run] of Object.entries(stats.runs)) {
    const kept = run.filter(([, at]) => at > now - RUN_WINDOW_MS);
    if (kept.length === 0) delete stats.runs[prefix];
    else stats.runs[prefix] = kept;
  }
  const ranges = Object.entries(stats.ranges).map(([range, d]) => [range, decay(d, now)] as const);
  stats.ranges = Object.fromEntries(
    ranges
      .filter(([, d]) => d.s >= 0.05 || d.c >= 0.05)
      .sort((a, b) => b[1].s - a[1].s)
      .slice(0, MAX_RANGES),
  );
  stats.base = decayBase(stats.base, now);
}

export function pruneScopeStats(stats: ScopeStats, now: number): void {
  const oldestMinute = Math.floor((now - 2 * RECENT_MS) / MINUTE);
  for (const key of Object.keys(stats.minutes)) if (Number(key) < oldestMinute) delete stats.minutes[key];
  stats.countries = Object.fromEntries(
    Object.entries(stats.countries)
      .map(([country, d]) => [country, decay(d, now)] as const)
      .filter(([, d]) => d.s >= 0.05 || d.c >= 0.05),
  );
}

/** Thresholds of each rule at each level; a signal fires at the strictest level whose thresholds it meets. */
export const THRESHOLDS = {
  sequential: { standard: { run: 5 }, strict: { run: 4 } },
  prefixSurge: {
    standard: { matured: 6, maxConversion: 0.2, shareOverBase: 3, minShare: 0.15 },
    strict: { matured: 4, maxConversion: 0.3, shareOverBase: 2, minShare: 0.1 },
  },
  novelSurge: {
    standard: { matured: 8, maxConversion: 0.15, minFraction: 0.3, fast: 10, fastFraction: 0.6 },
    strict: { matured: 5, maxConversion: 0.25, minFraction: 0.2, fast: 8, fastFraction: 0.5 },
  },
  novelCountries: {
    standard: { matured: 6, maxConversion: 0.15, countries: 3 },
    strict: { matured: 4, maxConversion: 0.25, countries: 2 },
  },
  novelSpread: { strict: { matured: 8, maxConversion: 0.25, countries: 3 } },
} as const;

/** The level a signal reaches: `standard` (applies at both), `strict` (at strict only), or none. */
function levelOf(meets: (level: BlockLevel) => boolean): BlockLevel | undefined {
  if (meets('standard')) return 'standard';
  if (meets('strict')) return 'strict';
  return undefined;
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

interface Sums {
  s: number;
  a: number;
  c: number;
  n: number;
  na: number;
  nc: number;
}

/** The one-minute buckets that start in `[from, to)`. */
const minutesBetween = <T>(minutes: Record<string, T>, from: number, to: number): T[] =>
  Object.entries(minutes)
    .filter(([key]) => Number(key) * MINUTE >= from && Number(key) * MINUTE < to)
    .map(([, bucket]) => bucket);

function sumMinutes(stats: CountryStats, from: number, to: number): Sums {
  const sums: Sums = { s: 0, a: 0, c: 0, n: 0, na: 0, nc: 0 };
  for (const m of minutesBetween(stats.minutes, from, to)) {
    sums.s += m.s;
    sums.a += m.a;
    sums.c += m.c;
    sums.n += m.n;
    sums.na += m.na;
    sums.nc += m.nc;
  }
  return sums;
}

const ratio = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
const round2 = (value: number) => Math.round(value * 100) / 100;

function mergeBlock(
  blocks: GuardBlock[],
  found: Omit<GuardBlock, 'since'>,
  now: number,
): GuardBlock | undefined {
  const existing = blocks.find((block) => block.prefix === found.prefix && block.until > now);
  if (existing) {
    existing.until = Math.max(existing.until, found.until);
    // The level and figures of the latest evidence: a standard block renewed on strict evidence only is strict.
    existing.level = found.level;
    existing.figures = found.figures;
    existing.reason = existing.reason === 'sequential_numbers' ? existing.reason : found.reason;
    return undefined;
  }
  const block = { ...found, since: now };
  blocks.push(block);
  return block;
}

function mergeNovelty(
  current: NoveltyBlock | undefined,
  found: { reason: GuardReason; level: BlockLevel; figures: Figures; hold: number },
  now: number,
): { block: NoveltyBlock; started: boolean } {
  if (current && current.until > now) {
    return {
      block: {
        ...current,
        until: Math.max(current.until, now + found.hold),
        level: found.level,
        figures: found.figures,
      },
      started: false,
    };
  }
  return {
    block: {
      reason: found.reason,
      level: found.level,
      since: now,
      until: now + found.hold,
      figures: found.figures,
    },
    started: true,
  };
}

const liftedPrefix = (lifted: Record<string, number>, prefix: string, now: number) =>
  Object.entries(lifted).some(([p, until]) => until > now && prefix.startsWith(p));

/** What a rule started (not renewed): for the owner's alert. */
export interface StartedBlock {
  reason: GuardReason;
  prefix: string;
  level: BlockLevel;
  figures: Figures;
}

/**
 * The country's blocks after these stats: rules that fire make or extend a block; a block whose signal has gone
 * lifts at its `until`. `global`: the all-services scope (prefix rules only: novelty is a service's own).
 */
export function evaluateCountry(
  stats: CountryStats,
  previous: CountryGuardState,
  country: string,
  now: number,
  scope: 'service' | 'global',
): { state: CountryGuardState; started: StartedBlock[] } {
  const lifted = Object.fromEntries(Object.entries(previous.lifted).filter(([, until]) => until > now));
  const blocks = previous.blocks.filter((block) => block.until > now).map((block) => ({ ...block }));
  const started: StartedBlock[] = [];
  const propose = (found: Omit<GuardBlock, 'since'>) => {
    if (liftedPrefix(lifted, found.prefix, now)) return;
    const made = mergeBlock(blocks, found, now);
    if (made)
      started.push({ reason: made.reason, prefix: made.prefix, level: made.level, figures: made.figures });
  };

  // Near-sequential runs, per run prefix; two runs under one parent block the parent (the next 10,000).
  const runParents = new Map<string, number>();
  for (const [prefix, run] of Object.entries(stats.runs)) {
    const recent = run.filter(([, at]) => at > now - RUN_WINDOW_MS).map(([suffix]) => suffix);
    const length = longestRun(recent);
    const level = levelOf((l) => length >= THRESHOLDS.sequential[l].run);
    if (!level) continue;
    propose({
      prefix,
      reason: 'sequential_numbers',
      level,
      until: now + BLOCK_HOLD_MS,
      figures: { run: length, window_minutes: RUN_WINDOW_MS / MINUTE },
    });
    const parent = prefix.slice(0, -1);
    runParents.set(parent, (runParents.get(parent) ?? 0) + 1);
  }
  for (const block of blocks) {
    if (block.reason !== 'sequential_numbers' || block.until <= now) continue;
    const parent = block.prefix.slice(0, -1);
    if (!runParents.has(parent)) runParents.set(parent, 0);
    runParents.set(parent, runParents.get(parent)! + 1);
  }
  for (const [parent, count] of runParents) {
    const runs = blocks.filter((b) => b.reason === 'sequential_numbers' && b.prefix.slice(0, -1) === parent);
    if (count >= 2 && runs.length >= 2 && !blocks.some((b) => b.prefix === parent))
      propose({
        prefix: parent,
        reason: 'sequential_numbers',
        level: runs.some((b) => b.level === 'standard') ? 'standard' : 'strict',
        until: now + BLOCK_HOLD_MS,
        figures: { runs_blocked: runs.length },
      });
  }

  // A range's share of the country's recent traffic against its baseline share, with few codes checked.
  const country30 = sumMinutes(stats, now - 30 * MINUTE, now + MINUTE);
  const base = decayBase(stats.base, now);
  const baseConversion = base.s >= 20 ? Math.min(0.95, ratio(base.c, base.s)) : DEFAULT_CONVERSION;
  for (const [range, buckets] of Object.entries(stats.recentRanges)) {
    let sends = 0;
    let accepted = 0;
    let matured = 0;
    let converted = 0;
    for (const [key, [s, a, c]] of Object.entries(buckets)) {
      const start = Number(key);
      if (start < now - 30 * MINUTE) continue;
      sends += s;
      accepted += a;
      if (start + RANGE_BUCKET_MS <= now - MATURITY_MS) {
        matured += a;
        converted += c;
      }
    }
    const share = ratio(sends, country30.s);
    // The baseline is what came before the window: the decayed totals less the window's own sends.
    const known = stats.ranges[range];
    const baseRange = known ? Math.max(0, decay(known, now).s - accepted) : 0;
    const baseShare = ratio(baseRange, Math.max(0, base.s - country30.a));
    const active = blocks.some((b) => b.prefix === range && b.until > now);
    const level = levelOf((l) => {
      const t = THRESHOLDS.prefixSurge[l];
      const surging = share >= t.minShare && share >= t.shareOverBase * baseShare;
      if (!surging) return false;
      if (matured >= t.matured)
        return (
          ratio(converted, matured) <= t.maxConversion &&
          binomialAtMost(converted, matured, baseConversion) < SIGNIFICANCE[l]
        );
      // Renewal: the traffic goes on while blocked (blocked sends are never checked).
      return active && sends >= t.matured;
    });
    if (level)
      propose({
        prefix: range,
        reason: 'prefix_surge',
        level,
        until: now + BLOCK_HOLD_MS,
        figures: {
          sends_30m: sends,
          share: round2(share),
          baseline_share: round2(baseShare),
          checked: round2(ratio(converted, matured)),
        },
      });
  }

  let novelty = previous.novelty && previous.novelty.until > now ? previous.novelty : undefined;
  if (scope === 'service') {
    // Many sends to ranges not established in this country, with few codes checked (or a sudden flood).
    const matured = sumMinutes(stats, now - 33 * MINUTE, now - MATURITY_MS);
    const recent = sumMinutes(stats, now - 10 * MINUTE, now + MINUTE);
    // While the guard learns a service, every range is new: the baseline's novel share is capped, or the first
    // days would teach it that a flood of new ranges is normal.
    const baseNovel = Math.min(MAX_BASE_NOVEL_SHARE, ratio(base.n, base.s));
    const fraction30 = ratio(country30.n, country30.s);
    const fraction10 = ratio(recent.n, recent.s);
    const level = levelOf((l) => {
      const t = THRESHOLDS.novelSurge[l];
      const unusual = fraction30 >= Math.max(t.minFraction, 3 * baseNovel);
      const slow =
        unusual &&
        matured.na >= t.matured &&
        ratio(matured.nc, matured.na) <= t.maxConversion &&
        binomialAtMost(matured.nc, matured.na, baseConversion) < SIGNIFICANCE[l];
      const fast =
        recent.n >= t.fast && fraction10 >= t.fastFraction && recent.n >= 5 * (baseNovel * recent.s + 1);
      const renew = !!novelty && unusual && country30.n >= t.matured;
      return slow || fast || renew;
    });
    if (level && !liftedPrefix(lifted, countryPrefixOf(country) ?? '+', now)) {
      const merged = mergeNovelty(
        novelty,
        {
          reason: 'novel_prefix_surge',
          level,
          hold: BLOCK_HOLD_MS,
          figures: {
            novel_sends_30m: country30.n,
            novel_share: round2(fraction30),
            baseline_novel_share: round2(baseNovel),
            checked: round2(ratio(matured.nc, matured.na)),
          },
        },
        now,
      );
      if (merged.started)
        started.push({ reason: 'novel_prefix_surge', prefix: country, level, figures: merged.block.figures });
      novelty = merged.block;
    }
    if (novelty) novelty = floodOf(stats, novelty, recent, now, started, country);
  }

  const established = Object.entries(stats.ranges)
    .filter(([, d]) => isEstablishedRange(decay(d, now)))
    .sort((a, b) => b[1].s - a[1].s)
    .slice(0, MAX_ESTABLISHED)
    .map(([range]) => range)
    .sort();
  blocks.sort((a, b) => (a.level === b.level ? b.until - a.until : a.level === 'standard' ? -1 : 1));
  return {
    state: {
      blocks: blocks.slice(0, MAX_BLOCKS),
      established,
      ...(novelty && { novelty }),
      lifted,
    },
    started,
  };
}

/**
 * A flood's random numbers fall in every range of the country, the established ones too, and in a thin one (few
 * real users) they outnumber its real users. While the flood that made the country's novelty block goes on (new
 * ranges still take a fast rule's volume), only the established ranges that carry `FLOOD_OPEN_SHARE` of the
 * country's baseline stay open; the thin tail closes until the flood has been gone `FLOOD_HOLD_MS`.
 */
function floodOf(
  stats: CountryStats,
  novelty: NoveltyBlock,
  recent: Sums,
  now: number,
  started: StartedBlock[],
  country: string,
): NoveltyBlock {
  const t = THRESHOLDS.novelSurge[novelty.level];
  const flooding = recent.n >= t.fast && ratio(recent.n, recent.s) >= t.fastFraction;
  const current = novelty.flood && novelty.flood.until > now ? novelty.flood : undefined;
  if (!flooding) {
    if (current) return novelty;
    const { flood: _ended, ...rest } = novelty;
    return rest;
  }
  const established = Object.entries(stats.ranges)
    .map(([range, d]) => [range, decay(d, now)] as const)
    .filter(([, d]) => isEstablishedRange(d))
    .sort((a, b) => b[1].s - a[1].s);
  const total = established.reduce((sum, [, d]) => sum + d.s, 0);
  const open: string[] = [];
  let covered = 0;
  for (const [range, d] of established) {
    if (covered >= FLOOD_OPEN_SHARE * total) break;
    open.push(range);
    covered += d.s;
  }
  const figures = {
    novel_sends_10m: recent.n,
    novel_share_10m: round2(ratio(recent.n, recent.s)),
    ranges_open: open.length,
    ranges_closed: established.length - open.length,
  };
  if (!current) started.push({ reason: 'country_flood', prefix: country, level: novelty.level, figures });
  return {
    ...novelty,
    flood: { open: open.sort(), since: current?.since ?? now, until: now + FLOOD_HOLD_MS, figures },
  };
}

function sumScope(stats: ScopeStats, from: number, to: number) {
  const sums = {
    n: 0,
    na: 0,
    nc: 0,
    r: 0,
    ra: 0,
    rc: 0,
    nCountries: new Set<string>(),
    rCountries: new Set<string>(),
  };
  for (const m of minutesBetween(stats.minutes, from, to)) {
    sums.n += m.n;
    sums.na += m.na;
    sums.nc += m.nc;
    sums.r += m.r;
    sums.ra += m.ra;
    sums.rc += m.rc;
    for (const c of m.nCountries) sums.nCountries.add(c);
    for (const c of m.rCountries) sums.rCountries.add(c);
  }
  return sums;
}

/** The scope's cross-country state: established countries, and the two novelty rules across countries. */
export function evaluateScope(
  stats: ScopeStats,
  previous: ScopeGuardState,
  now: number,
): { state: ScopeGuardState; started: StartedBlock[] } {
  const lifted = Object.fromEntries(Object.entries(previous.lifted).filter(([, until]) => until > now));
  const started: StartedBlock[] = [];
  const matured = sumScope(stats, now - 63 * MINUTE, now - MATURITY_MS);
  const hour = sumScope(stats, now - 60 * MINUTE, now + MINUTE);
  /** A cross-country rule that fired or renewed: its block held on, reported when it starts. */
  const holdNovelty = (
    current: NoveltyBlock | undefined,
    reason: GuardReason,
    level: BlockLevel,
    figures: Figures,
  ): NoveltyBlock => {
    const merged = mergeNovelty(current, { reason, level, hold: COUNTRY_HOLD_MS, figures }, now);
    if (merged.started) started.push({ reason, prefix: '*', level, figures: merged.block.figures });
    return merged.block;
  };

  let novelCountries =
    previous.novelCountries && previous.novelCountries.until > now ? previous.novelCountries : undefined;
  const countryLevel = levelOf((l) => {
    const t = THRESHOLDS.novelCountries[l];
    const spread = hour.nCountries.size >= t.countries;
    const fired = spread && matured.na >= t.matured && ratio(matured.nc, matured.na) <= t.maxConversion;
    const renew = !!novelCountries && spread && hour.n >= t.matured;
    return fired || renew;
  });
  if (countryLevel && !liftedPrefix(lifted, '*', now)) {
    novelCountries = holdNovelty(novelCountries, 'novel_country_surge', countryLevel, {
      novel_country_sends_60m: hour.n,
      countries: hour.nCountries.size,
      checked: round2(ratio(matured.nc, matured.na)),
    });
  }

  let novelRanges =
    previous.novelRanges && previous.novelRanges.until > now ? previous.novelRanges : undefined;
  const t = THRESHOLDS.novelSpread.strict;
  const spread = hour.rCountries.size >= t.countries;
  const fired = spread && matured.ra >= t.matured && ratio(matured.rc, matured.ra) <= t.maxConversion;
  if (fired && !liftedPrefix(lifted, '*', now)) {
    novelRanges = holdNovelty(novelRanges, 'novel_prefix_spread', 'strict', {
      novel_range_sends_60m: hour.r,
      countries: hour.rCountries.size,
      checked: round2(ratio(matured.rc, matured.ra)),
    });
  }

  const establishedCountries = Object.entries(stats.countries)
    .filter(([, d]) => isEstablishedCountry(decay(d, now)))
    .map(([country]) => country)
    .sort();
  return {
    state: {
      establishedCountries,
      ...(novelCountries && { novelCountries }),
      ...(novelRanges && { novelRanges }),
      lifted,
    },
    started,
  };
}
