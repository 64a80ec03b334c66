/**
 * What the guard's country rules share while they judge one country (`Judging`): the bars their evidence must pass,
 * each rule's thresholds by level, the conversion real users are assumed to reach, and the minute buckets read as
 * cohorts of codes.
 */
import { type CountryStats, hasBaseline, MINUTE, type MinuteBucket, SUSPECT_RUN } from '../aggregates';
import { type Cohort, sum } from '../evidence';
import type { BlockLevel, CountryCaps, CountryGuardState, Figures, GuardBlock, GuardReason } from '../model';

/** The conversion real users are assumed to reach at least where no baseline says otherwise. */
export const LEGIT_FLOOR_CONVERSION = 0.3;

/**
 * Without a baseline: this many unchecked sends in 10 minutes more than the codes checked in the last 30 (real
 * users' checked codes vouch for as many unchecked sends).
 */
const UNCHECKED_BURST = 20;

/** A surge goes on while its last this many minutes keep it up: only then is its closure renewed or a block started. */
const SURGE_ON_MINUTES = 5;

/** How long a block of a prefix (or of a country's new ranges) lasts past its start or renewal. */
export const BLOCK_HOLD_MS = 60 * MINUTE;

/** The same for a country's closure: every range but its open ones, so shorter. */
export const COUNTRY_HOLD_MS = 30 * MINUTE;

/** A global block applies to a service when at least this many other services showed its signal. */
export const GLOBAL_QUORUM = 3;

/**
 * The chance, in log, a test allows real users' traffic to look this bad: to start a block, and (lower bar: the
 * block was justified once) to renew it on its probes.
 */
export const LOG_ALPHA = {
  start: { standard: Math.log(1e-5), strict: Math.log(1e-3) },
  /** Narrow traffic (a sequence, a concentrated range): its shape alone is rare for real users. */
  narrow: { standard: Math.log(5e-2), strict: Math.log(2e-1) },
  renew: Math.log(1e-2),
  /**
   * A concentrated range's codes a prompt receipt says were delivered, at the country's own conversion: the
   * narrow bar, once `RECEIVED_SENDS` such codes are there (a real range's few users fall short of their
   * country's conversion now and then; with fewer codes they refused real users on training seeds).
   */
  received: { standard: Math.log(5e-2), strict: Math.log(1e-1) },
} as const;

/**
 * The conversion narrow traffic is judged at, at least: real users in one range or sequence are people of one
 * organisation or carrier, who check their codes as the country's users do, not at the rules' half margin.
 */
export const NARROW_CONVERSION = 0.45;

/** The country's own conversion, at most: a few fast-checking days must not make every user suspect. */
const MAX_OWN_CONVERSION = 0.9;

/** Thresholds of each rule at each level; a signal fires at the strictest level whose thresholds it meets. */
export const THRESHOLDS = {
  sequential: { standard: { run: 5 }, strict: { run: SUSPECT_RUN } },
  prefixSurge: {
    standard: { shareOverBase: 3, minShare: 0.15 },
    strict: { shareOverBase: 2, minShare: 0.1 },
  },
  novelSurge: {
    standard: { minFraction: 0.3, overUsual: 0.5 },
    strict: { minFraction: 0.2, overUsual: 0.3 },
  },
  countrySurge: {
    standard: { overRate: 4 },
    strict: { overRate: 3 },
  },
  novelCountries: { standard: { countries: 3 }, strict: { countries: 2 } },
  novelSpread: { strict: { countries: 3 } },
} as const;

/** The level a signal reaches: `standard` (applies at both), `strict` (at strict only), or none. */
export function levelOf(meets: (level: BlockLevel) => boolean): BlockLevel | undefined {
  if (meets('standard')) return 'standard';
  if (meets('strict')) return 'strict';
  return undefined;
}

/**
 * Whether a rule may start a block at `level` where `current` holds: none yet, or a strict one that standard
 * evidence now upgrades (else a block started at strict would never refuse at standard while it lasts).
 */
export const startsAt = (current: { level: BlockLevel } | undefined, level: BlockLevel): boolean =>
  !current || (level === 'standard' && current.level === 'strict');

/** After probes vindicated a destination, the rules leave it alone this long (its old evidence is spent). */
export const VINDICATED_MS = 30 * MINUTE;

export const minuteCohorts = (
  minutes: Record<string, MinuteBucket>,
  from: number,
  pick: (bucket: MinuteBucket) => [number, number],
): Cohort[] =>
  Object.entries(minutes)
    .filter(([key]) => Number(key) * MINUTE >= from)
    .map(([key, bucket]) => {
      const [sends, checked] = pick(bucket);
      return { at: Number(key) * MINUTE + MINUTE / 2, sends, checked };
    });

/** One field of the country's minute buckets, summed over the last `minutes` minutes. */
export const minutesSum = (
  stats: CountryStats,
  now: number,
  minutes: number,
  pick: (bucket: MinuteBucket) => number,
): number =>
  sum(
    Object.entries(stats.minutes)
      .filter(([key]) => Number(key) * MINUTE >= now - minutes * MINUTE)
      .map(([, m]) => pick(m)),
  );

/** What the last `SURGE_ON_MINUTES` minutes carry, at the rate of `minutes`: whether a surge still goes on. */
export const lastMinutesAt = (
  stats: CountryStats,
  now: number,
  minutes: number,
  pick: (bucket: MinuteBucket) => number,
): number => (minutesSum(stats, now, SURGE_ON_MINUTES, pick) * minutes) / SURGE_ON_MINUTES;

export const cohortsOf = (counts: Record<string, [number, number]>, width: number, from = 0): Cohort[] =>
  Object.entries(counts)
    .filter(([key]) => Number(key) * width >= from)
    .map(([key, [sends, checked]]) => ({ at: Number(key) * width + width / 2, sends, checked }));

/**
 * The conversion real users of this country are assumed to reach at least: half the baseline's (what came before
 * the last hour, which is what is being judged), or the floor without a baseline.
 */
export function legitConversion(stats: CountryStats, now: number): number {
  const measured = measuredConversion(stats, now);
  if (measured === undefined) return LEGIT_FLOOR_CONVERSION;
  return Math.min(0.475, Math.max(LEGIT_FLOOR_CONVERSION / 2, 0.5 * measured));
}

/**
 * The conversion a code a prompt receipt says was delivered is judged at: the country's own (`measuredConversion`),
 * bounded to [`NARROW_CONVERSION`, `MAX_OWN_CONVERSION`]; none without a baseline.
 */
export function receivedConversion(stats: CountryStats, now: number): number | undefined {
  const own = measuredConversion(stats, now);
  return own === undefined ? undefined : Math.min(MAX_OWN_CONVERSION, Math.max(own, NARROW_CONVERSION));
}

/** The share of the country's codes checked before the last hour; none without a baseline. */
export function measuredConversion(stats: CountryStats, now: number): number | undefined {
  if (!hasBaseline(stats, now)) return undefined;
  const recent = Object.values(stats.minutes);
  const sends = stats.base.s - sum(recent.map((m) => m.a));
  const checked = stats.base.c - sum(recent.map((m) => m.c));
  return sends < 10 ? undefined : checked / sends;
}

/** What a rule started (not renewed): for the owner's alert. */
export interface StartedBlock {
  reason: GuardReason;
  prefix: string;
  level: BlockLevel;
  figures: Figures;
}

/** What `evaluateCountry` needs besides the stats and the previous state. */
export interface CountryContext {
  country: string;
  now: number;
  scope: 'service' | 'global';
  /** The caps the service's owner set for this country (service scope). */
  caps?: CountryCaps;
  /** The service is at `strict`: the flood rule that refuses a real crowd's first minutes runs for it alone. */
  strict?: boolean;
}

/** What the rules of one country share while they judge it: the stats, the blocks so far, what they started. */
export interface Judging {
  stats: CountryStats;
  previous: CountryGuardState;
  context: CountryContext;
  /** The conversion the rules assume of real users (`legitConversion`). */
  conversion: number;
  baseline: boolean;
  /** Prefixes lifted by hand, and those the rules leave alone for a while (`vindicated`, written by the rules). */
  lifted: Record<string, number>;
  vindicated: Record<string, number>;
  /** The blocks carried from the previous state, then each rule's. */
  blocks: GuardBlock[];
  started: StartedBlock[];
  /** Makes or extends a block, unless its prefix is lifted or vindicated. */
  propose: (found: Omit<GuardBlock, 'since'>) => void;
}

/**
 * Unchecked sends of the last 10 minutes past what the checked codes of the last 30 vouch for, over `cohorts`
 * (minute index → [accepted, checked]): a country's, or a sequence's own.
 */
export function uncheckedBurstOf(
  cohorts: Record<string, readonly [number, number]>,
  now: number,
  threshold = UNCHECKED_BURST,
): { bursting: boolean; burst: number } {
  const since = (minutes: number, pick: 0 | 1) =>
    sum(
      Object.entries(cohorts)
        .filter(([key]) => Number(key) * MINUTE >= now - minutes * MINUTE)
        .map(([, cohort]) => cohort[pick]),
    );
  const burst = since(10, 0);
  return { bursting: burst - since(10, 1) >= threshold + since(30, 1), burst };
}
