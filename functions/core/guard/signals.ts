/**
 * The guard's rules: they turn the aggregates (./aggregates.ts, the fold of the table's stream) into the blocks the
 * send path reads.
 *
 * One principle runs through every rule (docs/guard.md, "Rules"): a destination is refused only on evidence
 * that its codes are checked far less than real users check theirs. Volume, novelty and sequences only say
 * where to look; the evidence is a test of the checked codes against what real users would have checked by
 * now, given how long ago each code was sent (`conversionEvidence`, evidence.ts). Rules that compare with a
 * baseline (a range's usual share, ranges never seen) act only where the service has one (`hasBaseline`);
 * before that a country is judged on its conversions alone. A block takes a few probes through; it is renewed
 * only while the probes' codes go unchecked, and lifted early when they are checked.
 */
import type {
  BlockLevel,
  CountryBlock,
  CountryCaps,
  CountryGuardState,
  ConversionDrop,
  Figures,
  GuardBlock,
  GuardReason,
  NoveltyBlock,
  ProbeCohorts,
  ScopeGuardState,
} from './model';
import {
  binomialAtLeast,
  conversionEvidence,
  damning,
  exactConversionEvidence,
  jointChance,
  poissonAtLeast,
  sum,
  vindicating,
  type Cohort,
  type Evidence,
} from './evidence';
import { conversionDrop, CONVERSION_WATCH } from './conversion-watch';
import { countryPrefixOf, placeOf, RANGE_WIDTH } from './prefix';
import {
  BASELINE,
  BASELINE_HALF_LIFE_MS,
  DAY,
  decay,
  hasBaseline,
  HOUR,
  isEstablishedCountry,
  isEstablishedRange,
  LIMITS,
  longestRun,
  MINUTE,
  minuteIndex,
  RANGE_BUCKET_MS,
  rangeBucketIndex,
  RECENT_MS,
  round2,
  RUN_WINDOW_MS,
  scopeHasBaseline,
  SUSPECT_RUN,
  type CountryStats,
  type GuardEvent,
  type MinuteBucket,
  type ScopeMinute,
  type ScopeStats,
} from './aggregates';

/** The conversion real users are assumed to reach at least where no baseline says otherwise. */
const LEGIT_FLOOR_CONVERSION = 0.3;
/**
 * Without a baseline: this many unchecked sends in 10 minutes more than the codes checked in the last 30 (real
 * users' checked codes vouch for as many unchecked sends).
 */
const UNCHECKED_BURST = 20;
/** The same in a country surge where the service has a baseline (its rules have more to go on). */
const SURGE_UNCHECKED_BURST = 30;
/** A surge goes on while its last this many minutes keep it up: only then is its closure renewed or a block started. */
const SURGE_ON_MINUTES = 5;
/**
 * A block of ranges not established outlives the traffic that made it by this long: a flood's refused sends stop
 * with it, and a crowd of real users that comes after it is traffic of its own, judged afresh.
 */
const NOVELTY_QUIET_MS = 15 * MINUTE;
/** Probes, checked less often than real users would, that renew a block whose rule still fires. */
const PROBES_TO_CONFIRM = 3;

/**
 * At `strict`, a flood into ranges not established, seen in `windowMs`, closes the country for `holdMs` before its
 * codes can be judged (provisional), kept only if the codes of the sends that started it went unchecked. No range
 * may hold more than `topShare` of those sends: one range is a surge or a sequence, and its own rules judge it.
 */
const NOVEL_FLOOD = {
  windowMs: 3 * MINUTE,
  sends: 10,
  peak: 2,
  alpha: 1e-6,
  topShare: 0.25,
  /**
   * At `standard` the flood must also be drawn unlike the country's users: of the accepted sends of `share.windowMs`,
   * more to rare ranges (`RARE_RANGE_SHARE`) than the country's usual share of them plus `margin` would give below
   * once in `1 / alpha` (binomial), that usual share measured on at least `baseSends` sends; or that chance joined
   * with how few of the window's delivered codes to ranges not established were checked (`jointChance`) below it.
   */
  share: { windowMs: 6 * MINUTE, margin: 0.05, alpha: 1e-3, baseSends: 200 },
  holdMs: 4 * MINUTE,
  /**
   * After a closure its codes confirmed, to the end of its hold and `memoryMs` more, the flood closes again on
   * fewer sends (`sends`, `alpha`): an attacker who waits out the hold comes back into the same country.
   */
  returning: { sends: 5, alpha: 1e-3, memoryMs: 60 * MINUTE },
} as const;
/**
 * A range concentrated: at least `sends` of the country's last 30 minutes where its usual share (at least
 * `floorShare`, for a range seldom or never seen) would give so many less than once in `1 / chance`. Narrow as a
 * sequence is, and judged as one (`LOG_ALPHA.narrow`, `NARROW_CONVERSION`): a drip into one range is stopped
 * before the half hour holds enough of its codes for the bar of a broad surge.
 */
const CONCENTRATION = { sends: 5, floorShare: 0.01, chance: 1e-6 } as const;
/** A flood's provisional closure may lapse on its checks this long after it started (a batching window). */
const LAPSE_AFTER_MS = 30_000;
/** The `vindicated` key of a flood's provisional closure that lapsed unconfirmed. */
const FLOOD_LAPSED = 'flood';
/** The `vindicated` key (a rule's timer, as `FLOOD_LAPSED`) of a flood closure its codes confirmed. */
const FLOOD_CONFIRMED = 'flood_confirmed';
const BLOCK_HOLD_MS = 60 * MINUTE;
const COUNTRY_HOLD_MS = 30 * MINUTE;

/** A run this long blocks its parent (10,000 numbers) at once. */
const WALKING_RUN = 8;

/** A global block applies to a service when at least this many other services showed its signal. */
export const GLOBAL_QUORUM = 3;

/**
 * The chance, in log, a test allows real users' traffic to look this bad: to start a block, and (lower bar: the
 * block was justified once) to renew it on its probes.
 */
const LOG_ALPHA = {
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
const NARROW_CONVERSION = 0.45;
/** Delivered codes a concentrated range needs before they are judged at the country's own conversion. */
const RECEIVED_SENDS = 8;
/** The country's own conversion, at most: a few fast-checking days must not make every user suspect. */
const MAX_OWN_CONVERSION = 0.9;

/** Thresholds of each rule at each level; a signal fires at the strictest level whose thresholds it meets. */
const THRESHOLDS = {
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
function levelOf(meets: (level: BlockLevel) => boolean): BlockLevel | undefined {
  if (meets('standard')) return 'standard';
  if (meets('strict')) return 'strict';
  return undefined;
}

/** The prefix of the same length that follows (`+447400999` → `+447401000`); none after all nines. */
function nextPrefix(prefix: string): string | undefined {
  const digits = prefix.slice(1);
  const next = (BigInt(digits) + 1n).toString().padStart(digits.length, '0');
  return next.length === digits.length ? `+${next}` : undefined;
}

/**
 * Whether a rule may start a block at `level` where `current` holds: none yet, or a strict one that standard
 * evidence now upgrades (else a block started at strict would never refuse at standard while it lasts).
 */
const startsAt = (current: { level: BlockLevel } | undefined, level: BlockLevel): boolean =>
  !current || (level === 'standard' && current.level === 'strict');

/** After probes vindicated a destination, the rules leave it alone this long (its old evidence is spent). */
const VINDICATED_MS = 30 * MINUTE;

const minuteCohorts = (
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
const minutesSum = (
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
const lastMinutesAt = (
  stats: CountryStats,
  now: number,
  minutes: number,
  pick: (bucket: MinuteBucket) => number,
): number => (minutesSum(stats, now, SURGE_ON_MINUTES, pick) * minutes) / SURGE_ON_MINUTES;

const cohortsOf = (counts: Record<string, [number, number]>, width: number, from = 0): Cohort[] =>
  Object.entries(counts)
    .filter(([key]) => Number(key) * width >= from)
    .map(([key, [sends, checked]]) => ({ at: Number(key) * width + width / 2, sends, checked }));

/**
 * The conversion real users of this country are assumed to reach at least: half the baseline's (what came before
 * the last hour, which is what is being judged), or the floor without a baseline.
 */
function legitConversion(stats: CountryStats, now: number): number {
  const measured = measuredConversion(stats, now);
  if (measured === undefined) return LEGIT_FLOOR_CONVERSION;
  return Math.min(0.475, Math.max(LEGIT_FLOOR_CONVERSION / 2, 0.5 * measured));
}

/**
 * The conversion a code a prompt receipt says was delivered is judged at: the country's own (`measuredConversion`),
 * bounded to [`NARROW_CONVERSION`, `MAX_OWN_CONVERSION`]; none without a baseline.
 */
function receivedConversion(stats: CountryStats, now: number): number | undefined {
  const own = measuredConversion(stats, now);
  return own === undefined ? undefined : Math.min(MAX_OWN_CONVERSION, Math.max(own, NARROW_CONVERSION));
}

/** The share of the country's codes checked before the last hour; none without a baseline. */
function measuredConversion(stats: CountryStats, now: number): number | undefined {
  if (!hasBaseline(stats, now)) return undefined;
  const recent = Object.values(stats.minutes);
  const sends = stats.base.s - sum(recent.map((m) => m.a));
  const checked = stats.base.c - sum(recent.map((m) => m.c));
  return sends < 10 ? undefined : checked / sends;
}

/**
 * The conversion watch on the codes sent to the country's ranges not established alone, against their own usual
 * conversion (the baseline's, without the last hour; counted from the version that added it): marked `new_ranges`.
 */
function newRangesDrop(stats: CountryStats, now: number): Figures | undefined {
  if (!stats.base.novel) return undefined;
  const recent = Object.values(stats.minutes);
  const sends = stats.base.novel[0] - sum(recent.map((m) => m.na));
  const checked = stats.base.novel[1] - sum(recent.map((m) => m.nc));
  if (sends < 30 || checked < 0) return undefined;
  const drop = conversionDrop(stats.minutes, Math.min(1, checked / sends), now, (m) => [m.na, m.nc]);
  return drop && { ...drop, new_ranges: 1 };
}

const liftedPrefix = (lifted: Record<string, number>, prefix: string, now: number) =>
  Object.entries(lifted).some(([p, until]) => until > now && prefix.startsWith(p));

const current = (marks: Record<string, number> | undefined, now: number): Record<string, number> =>
  Object.fromEntries(Object.entries(marks ?? {}).filter(([, until]) => until > now));

/** What a rule started (not renewed): for the owner's alert. */
export interface StartedBlock {
  reason: GuardReason;
  prefix: string;
  level: BlockLevel;
  figures: Figures;
}

/** Adds the probes' checked codes of these events to a block's cohorts (the consumer calls it on each event). */
function countProbe(probes: ProbeCohorts | undefined, event: GuardEvent): ProbeCohorts {
  const cohorts = probes ?? {};
  if (event.kind === 'send') {
    if (event.accepted) (cohorts[String(minuteIndex(event.at))] ??= [0, 0])[0] += 1;
  } else if (event.kind === 'conversion') {
    const cohort = cohorts[String(minuteIndex(event.sentAt))];
    if (cohort) cohort[1] += 1;
  }
  return cohorts;
}

/**
 * Whether an event under a block can be one of its probes (or a probe's check): a send refused is none, and a
 * known number's pass is chosen by its own past, not at random, so its check says nothing of the traffic.
 */
const isProbeEvent = (event: GuardEvent): boolean =>
  event.kind === 'send'
    ? event.accepted && event.decision?.mode !== 'known'
    : event.kind !== 'conversion' || event.known !== true;

/**
 * Counts an event toward the probes of the blocks it falls under (in place): an accepted send there went
 * through as a probe, a checked code of one is its conversion. `novelRange`: whether the number's range was
 * not established when folded.
 */
export function foldCountryProbes(state: CountryGuardState, event: GuardEvent, novelRange: boolean): void {
  const at = event.kind === 'send' ? event.at : event.sentAt;
  const during = (block: { since: number; until: number }) => at >= block.since && at < block.until;
  if (!isProbeEvent(event)) return;
  const range = placeOf(event.e164, event.country).range;
  for (const block of state.blocks)
    if (block.probes && during(block) && event.e164.startsWith(block.prefix))
      block.probes = countProbe(block.probes, event);
  if (state.novelty && during(state.novelty) && novelRange)
    state.novelty.probes = countProbe(state.novelty.probes, event);
  if (state.closed && during(state.closed) && !state.closed.open.includes(range))
    state.closed.probes = countProbe(state.closed.probes, event);
}

/** The same for the scope's cross-country blocks. */
export function foldScopeProbes(
  state: ScopeGuardState,
  event: GuardEvent,
  facts: { novelRange: boolean; novelCountry: boolean },
): void {
  if (!isProbeEvent(event)) return;
  const at = event.kind === 'send' ? event.at : event.sentAt;
  const during = (block: { since: number; until: number }) => at >= block.since && at < block.until;
  if (state.novelCountries && during(state.novelCountries) && facts.novelCountry)
    state.novelCountries.probes = countProbe(state.novelCountries.probes, event);
  if (state.novelRanges && during(state.novelRanges) && facts.novelRange)
    state.novelRanges.probes = countProbe(state.novelRanges.probes, event);
}

/**
 * A conversion-judged block after this evaluation: lifted when its probes were checked as real users check
 * codes, renewed when they were not (or the rule fired again), else kept until it ends.
 */
function carry<
  T extends { since: number; until: number; probes?: ProbeCohorts; figures: Figures; calm?: number },
>(
  block: T,
  conversion: number,
  hold: number,
  now: number,
  onVindicated: () => void,
  /** A surge's closure: whether its surge goes on (absent: a block that no surge keeps). */
  surge?: boolean,
  /** While the surge goes on: its share of the country's usual users (`vindicating`). */
  beside = 0,
  /** Whether the surge went on in the minute of these probes (its other sends then at the rule's rate). */
  surgedAt: (probes: Cohort) => boolean = () => true,
): T | undefined {
  if (block.until <= now) return undefined;
  const stillFiring = surge === true;
  // While a surge goes on, only the probes of this surge speak for it: those from before the last calm were
  // another surge's (a flood's, where this one may be a crowd of real users).
  const from = Math.max(now - RECENT_MS, stillFiring ? (block.calm ?? 0) : 0);
  const probes = cohortsOf(block.probes ?? {}, MINUTE, from);
  const evidence = conversionEvidence(probes, conversion, now);
  if (vindicating(evidence, stillFiring ? beside : 0)) {
    onVindicated();
    return undefined;
  }
  const kept = { ...block, ...(block.probes && { probes: trimProbes(block.probes, now) }) };
  // While the block's own signal still holds (the surge goes on, refused), a few probes checked less often than
  // the rule assumes real users check suffice: at 2 % of a flood, the probes of one hold are too few for the test
  // alone, and the country's real users among them check theirs.
  const confirmed =
    stillFiring && evidence.sends >= PROBES_TO_CONFIRM && evidence.checked < evidence.expected;
  if (confirmed) {
    // Held a hold past the surge's newest probe: as long as the flood lasts and a hold after it, not a hold past
    // the batch that happened to judge it (a flood that stopped keeps it no longer than that). Past a probe sent
    // while the flood went on, unchecked: a real user's just after it ended (the surge still on by its last minutes)
    // held the closure over a crowd that came 30 minutes later (bench seed 146).
    const newest = Math.max(...probes.filter((c) => c.checked < c.sends && surgedAt(c)).map((c) => c.at));
    if (newest + hold > kept.until) kept.until = newest + hold;
    // The last hour's probes still count while the surge goes on: a hold's own are too few to renew the next.
  } else if (surge === undefined && damning(evidence, LOG_ALPHA.renew) && block.until < now + hold / 2) {
    // A surge's closure whose surge is over ends at its hold: its probes sampled the surge, not what came after.
    kept.until = now + hold;
    kept.probes = {};
  }
  return kept;
}

const trimProbes = (probes: ProbeCohorts, now: number): ProbeCohorts =>
  Object.fromEntries(Object.entries(probes).filter(([key]) => Number(key) * MINUTE >= now - RECENT_MS));

function mergeBlock(
  blocks: GuardBlock[],
  found: Omit<GuardBlock, 'since'>,
  now: number,
): GuardBlock | undefined {
  const existing = blocks.find((block) => block.prefix === found.prefix && block.until > now);
  if (existing) {
    existing.until = Math.max(existing.until, found.until);
    existing.level = found.level;
    existing.figures = found.figures;
    if (found.services) existing.services = found.services;
    return undefined;
  }
  // Caps take no probes; nor do sequences: a block there covers a thousand numbers that real users who check
  // their codes never ran into (the rule needs their codes unchecked), and probes would be 2 % of the attack.
  const probed = found.reason !== 'country_cap' && found.reason !== 'sequential_numbers';
  const block: GuardBlock = { ...found, since: now, ...(probed && { probes: {} }) };
  blocks.push(block);
  return block;
}

function mergeNovelty<T extends NoveltyBlock>(
  current: T | undefined,
  found: Omit<T, 'since' | 'until'> & { hold: number },
  now: number,
): { block: T; started: boolean } {
  const { hold, ...rest } = found;
  if (current && current.until > now) {
    // Standard evidence upgrading a strict block starts it for the services at standard, which never saw it; and
    // any rule's evidence confirms a flood's provisional closure.
    const { provisional: _provisional, ...kept } = current;
    const block = { ...kept, ...rest, until: Math.max(current.until, now + hold) } as unknown as T;
    return { block, started: current.level === 'strict' && rest.level === 'standard' };
  }
  return { block: { ...rest, since: now, until: now + hold, probes: {} } as unknown as T, started: true };
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
interface Judging {
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
 * The country's blocks after these stats: rules that fire make or extend a block; a block whose probes were
 * checked lifts; one whose signal has gone lifts at its `until`. `global`: the all-services scope (the prefix
 * rules only, each block naming the services that showed its signal: novelty is a service's own).
 */
export function evaluateCountry(
  stats: CountryStats,
  previous: CountryGuardState,
  context: CountryContext,
): { state: CountryGuardState; started: StartedBlock[]; drop?: ConversionDrop } {
  const { country, now, scope } = context;
  const lifted = current(previous.lifted, now);
  const vindicated = current(previous.vindicated, now);
  const conversion = legitConversion(stats, now);
  const baseline = scope === 'service' ? hasBaseline(stats, now) : stats.base.c >= BASELINE.conversions;
  const blocks: GuardBlock[] = [];
  for (const block of previous.blocks) {
    if (block.reason === 'country_cap') {
      if (block.until > now) blocks.push({ ...block });
      continue;
    }
    const kept = carry(block, conversion, BLOCK_HOLD_MS, now, () => {
      vindicated[block.prefix] = now + VINDICATED_MS;
    });
    if (kept) blocks.push(kept);
  }
  const started: StartedBlock[] = [];
  const propose = (found: Omit<GuardBlock, 'since'>) => {
    if (liftedPrefix(lifted, found.prefix, now) || (vindicated[found.prefix] ?? 0) > now) return;
    const made = mergeBlock(blocks, found, now);
    if (made)
      started.push({ reason: made.reason, prefix: made.prefix, level: made.level, figures: made.figures });
  };

  const j: Judging = {
    stats,
    previous,
    context,
    conversion,
    baseline,
    lifted,
    vindicated,
    blocks,
    started,
    propose,
  };
  judgeSequences(j);
  if (baseline) judgeRangeSurges(j);
  if (baseline && scope === 'service') judgeUncheckedRanges(j);
  const { novelty, closed } = scope === 'service' ? judgeCountry(j) : {};

  // A flood's closure confirmed (by its codes, or any rule's evidence): the flood rule watches for its return.
  if (previous.closed?.provisional && closed && !closed.provisional)
    vindicated[FLOOD_CONFIRMED] = closed.since + COUNTRY_HOLD_MS + NOVEL_FLOOD.returning.memoryMs;

  const cap = scope === 'service' && context.caps ? capReached(stats, context.caps, now) : undefined;
  if (cap) {
    const prefix = countryPrefixOf(country) ?? '+';
    // A longer cap reached under a shorter one's block (the day's, by sends folded late, during the hour's) is a
    // block of its own: it outlasts the hour, and its owner is told of it.
    const shorter = blocks.findIndex(
      (b) => b.reason === 'country_cap' && b.prefix === prefix && b.until > now && b.until < cap.until,
    );
    if (shorter >= 0) blocks.splice(shorter, 1);
    propose({ prefix, reason: 'country_cap', level: 'standard', until: cap.until, figures: cap.figures });
  }

  // The conversion watch tells the owner (nothing is refused), once per country in its quiet time.
  const told = previous.drop && previous.drop.until > now ? previous.drop : undefined;
  const usual = scope === 'service' && !told ? measuredConversion(stats, now) : undefined;
  // The country's codes, else those to its ranges not established alone (where a paced attacker's land, most of
  // them), each against its own usual conversion.
  const found =
    usual === undefined
      ? undefined
      : (conversionDrop(stats.minutes, usual, now) ?? newRangesDrop(stats, now));
  const drop = found && { since: now, until: now + CONVERSION_WATCH.quietMs, figures: found };

  const established = Object.entries(stats.ranges)
    .filter(([, d]) => isEstablishedRange(d))
    .sort((a, b) => b[1][0] - a[1][0])
    .slice(0, LIMITS.established)
    .map(([range]) => range)
    .sort();
  blocks.sort((a, b) => (a.level === b.level ? b.until - a.until : a.level === 'standard' ? -1 : 1));
  return {
    state: {
      blocks: blocks.slice(0, LIMITS.blocks),
      established,
      ...(novelty && { novelty }),
      ...(closed && { closed }),
      lifted,
      ...(Object.keys(vindicated).length > 0 && { vindicated }),
      ...((drop ?? told) && { drop: drop ?? told }),
    },
    started,
    ...(drop && { drop }),
  };
}

/** Near-sequential runs: suspect run prefixes whose codes real users would have checked by now. */
function judgeSequences(j: Judging): void {
  const { stats, conversion, blocks, propose } = j;
  const { country, now, scope } = j.context;
  const runParents = new Map<string, number>();
  const walking = new Set<string>();
  for (const [prefix, suspect] of Object.entries(stats.suspects)) {
    const run = longestRun(
      (stats.runs[prefix] ?? [])
        .filter(([, sec]) => sec * 1000 > now - RUN_WINDOW_MS)
        .map(([suffix]) => suffix),
    );
    const blocked = blocks.find((b) => b.prefix === prefix);
    // Numbers in a sequence are people of one organisation (staff, a batch of SIMs): they check their codes.
    const evidence = conversionEvidence(
      cohortsOf(suspect.m, MINUTE),
      Math.max(conversion, NARROW_CONVERSION),
      now,
    );
    // Or its unchecked burst, counted as the learning rule counts the country's: the country's rules leave a
    // sequence's sends to this one (`withoutSequences`), so it stops a sequential flood as soon as they did.
    const { bursting, burst } = uncheckedBurstOf(suspect.m, now);
    const level = levelOf(
      (l) =>
        startsAt(blocked, l) &&
        run >= THRESHOLDS.sequential[l].run &&
        (damning(evidence, LOG_ALPHA.narrow[l]) || bursting),
    );
    if (!level) continue;
    propose({
      prefix,
      reason: 'sequential_numbers',
      level,
      until: now + BLOCK_HOLD_MS,
      figures: {
        run,
        sends: evidence.sends,
        checked: evidence.checked,
        expected: round2(evidence.expected),
        ...(bursting && { sends_10m: burst }),
      },
      ...(scope === 'global' && { services: suspect.tags ?? [] }),
    });
    const parent = prefix.slice(0, -1);
    runParents.set(parent, (runParents.get(parent) ?? 0) + 1);
    // A long run walks the numbering: it will be in the next thousand within minutes.
    if (run >= WALKING_RUN) walking.add(parent);
    // From the last thousand of its ten thousand it walks out of the parent: the next thousand is blocked too (the
    // run's own block made, not lifted by hand).
    const next = nextPrefix(prefix);
    const walksOut =
      run >= WALKING_RUN &&
      blocks.some((b) => b.prefix === prefix) &&
      next?.startsWith(countryPrefixOf(country) ?? '+') &&
      !next.startsWith(parent);
    if (walksOut && next)
      propose({
        prefix: next,
        reason: 'sequential_numbers',
        level,
        until: now + BLOCK_HOLD_MS,
        figures: { walking_run: run },
        ...(scope === 'global' && { services: suspect.tags ?? [] }),
      });
  }
  for (const [parent, count] of runParents) {
    const runs = blocks.filter((b) => b.reason === 'sequential_numbers' && b.prefix.slice(0, -1) === parent);
    const level = runs.some((b) => b.level === 'standard') ? 'standard' : 'strict';
    const current = blocks.find((b) => b.prefix === parent);
    if (((count >= 2 && runs.length >= 2) || walking.has(parent)) && startsAt(current, level))
      propose({
        prefix: parent,
        reason: 'sequential_numbers',
        level,
        until: now + BLOCK_HOLD_MS,
        figures: { runs_blocked: runs.length },
        ...(scope === 'global' && { services: [...new Set(runs.flatMap((b) => b.services ?? []))] }),
      });
  }
}

/** A range's share of the country's recent traffic far above its baseline share, its codes not checked. */
function judgeRangeSurges(j: Judging): void {
  const { stats, conversion, blocks, propose } = j;
  const { now, scope } = j.context;
  const country30 = minutesSum(stats, now, 30, (m) => m.s);
  const accepted30 = minutesSum(stats, now, 30, (m) => m.a);
  for (const [range, buckets] of Object.entries(stats.recentRanges)) {
    const inWindow = Object.entries(buckets).filter(
      ([key]) => Number(key) * RANGE_BUCKET_MS >= now - 30 * MINUTE,
    );
    const sends = sum(inWindow.map(([, [s]]) => s));
    const accepted = sum(inWindow.map(([, [, a]]) => a));
    const share = country30 > 0 ? sends / country30 : 0;
    // The baseline is what came before the window: the decayed totals less the window's own sends.
    const baseRange = Math.max(0, (stats.ranges[range]?.[0] ?? 0) - accepted);
    const baseAll = Math.max(0, stats.base.s - accepted30);
    const baseShare = baseAll > 0 ? baseRange / baseAll : 0;
    const blocked = blocks.find((b) => b.prefix === range);
    const cohorts = inWindow.map(([key, [, a, c]]) => ({
      at: Number(key) * RANGE_BUCKET_MS + RANGE_BUCKET_MS / 2,
      sends: a,
      checked: c,
    }));
    const concentrated =
      sends >= CONCENTRATION.sends &&
      poissonAtLeast(sends, country30 * Math.max(baseShare, CONCENTRATION.floorShare)) < CONCENTRATION.chance;
    // A few dozen sends at most: the exact chance, where the bound would hide a drip for minutes.
    const evidence = concentrated
      ? exactConversionEvidence(cohorts, Math.max(conversion, NARROW_CONVERSION), now)
      : conversionEvidence(cohorts, conversion, now);
    // The codes a prompt receipt says reached their phones, against the country's own conversion. The checked
    // codes are all the range's, whether or not a receipt came (the test errs towards real users).
    const own = concentrated ? receivedConversion(stats, now) : undefined;
    const received =
      own === undefined
        ? undefined
        : exactConversionEvidence(
            inWindow.map(([key, [, , c, d]]) => ({
              at: Number(key) * RANGE_BUCKET_MS + RANGE_BUCKET_MS / 2,
              sends: d ?? 0,
              checked: c,
            })),
            own,
            now,
          );
    const damnedBy = (l: BlockLevel): Evidence | undefined => {
      if (!concentrated) return damning(evidence, LOG_ALPHA.start[l]) ? evidence : undefined;
      if (damning(evidence, LOG_ALPHA.narrow[l])) return evidence;
      return received && received.sends >= RECEIVED_SENDS && damning(received, LOG_ALPHA.received[l])
        ? received
        : undefined;
    };
    const level = levelOf((l) => {
      const t = THRESHOLDS.prefixSurge[l];
      const surging = share >= t.minShare && share >= t.shareOverBase * baseShare;
      return startsAt(blocked, l) && surging && damnedBy(l) !== undefined;
    });
    const damned = level && damnedBy(level);
    if (level && damned)
      propose({
        prefix: range,
        reason: 'prefix_surge',
        level,
        until: now + BLOCK_HOLD_MS,
        figures: {
          sends_30m: sends,
          share: round2(share),
          baseline_share: round2(baseShare),
          ...(concentrated && { concentrated: 1 }),
          ...(damned === received && { delivered: damned.sends }),
          checked: damned.checked,
          expected: round2(damned.expected),
        },
        ...(scope === 'global' && { services: stats.rangeTags?.[range] ?? [] }),
      });
  }
}

/**
 * Ranges a slow attacker paces its sends over: each too thin for a half hour's evidence, but their last hours
 * hold sends none of whose codes was checked, in more of the ranges sent to lately than real users leave so.
 */
function judgeUncheckedRanges(j: Judging): void {
  const { stats, conversion, blocks, propose } = j;
  const { now } = j.context;
  // Codes a prompt receipt says reached their phones are judged at the country's own conversion (as a concentrated
  // range's are): only late codes (an outage's) need the rules' margin, and they come with late receipts.
  const sent = Math.max(conversion, NARROW_CONVERSION);
  const dead = uncheckedRanges(stats, now, { sent, delivered: receivedConversion(stats, now) ?? sent });
  const level = levelOf(
    (l) =>
      dead.ranges.length >= UNCHECKED_RANGES.min &&
      dead.ranges.length >= 2 * dead.expected &&
      Math.log(poissonAtLeast(dead.ranges.length, dead.expected)) < LOG_ALPHA.start[l],
  );
  if (level)
    for (const { range, sends } of dead.ranges)
      if (
        startsAt(
          blocks.find((b) => b.prefix === range),
          level,
        )
      )
        propose({
          prefix: range,
          reason: 'unchecked_range',
          level,
          until: now + BLOCK_HOLD_MS,
          figures: {
            sends: round2(sends),
            checked: 0,
            unchecked_ranges: dead.ranges.length,
            expected_ranges: round2(dead.expected),
          },
        });
}

/**
 * The country's own traffic: novelty (ranges not established), a surge's or a flood's closure, and, with no
 * baseline yet, its conversion alone. The service scope's: novelty and closures are a service's own.
 */
function judgeCountry(j: Judging): { novelty?: NoveltyBlock; closed?: CountryBlock } {
  const { stats, previous, context, conversion, baseline, blocks, started, lifted, vindicated } = j;
  const { country, now } = context;
  // The last 15 minutes' sends (refused ones too) against the country's usual rate.
  const age = now - stats.base.since;
  const window = (BASELINE_HALF_LIFE_MS / Math.LN2) * (1 - Math.pow(0.5, age / BASELINE_HALF_LIFE_MS));
  const usual15 = window > 0 ? (stats.base.s / window) * 15 * MINUTE : 0;
  const sends15 = minutesSum(stats, now, 15, (m) => m.s);
  const country30 = minutesSum(stats, now, 30, (m) => m.s);
  const countryPrefix = countryPrefixOf(country) ?? '+';
  const vindicate = () => {
    vindicated[countryPrefix] = now + VINDICATED_MS;
  };
  let novelty = previous.novelty && carry(previous.novelty, conversion, BLOCK_HOLD_MS, now, vindicate);
  // Sends to ranges not established go on: their last minutes carry at least half their half hour's rate.
  const novel = minutesSum(stats, now, 30, (m) => m.n);
  const ongoing = novel > 0 && lastMinutesAt(stats, now, 30, (m) => m.n) >= 0.5 * novel;
  if (novelty && ongoing) delete novelty.quiet;
  else if (novelty && novelty.quiet === undefined) novelty.quiet = now;
  else if (novelty?.quiet !== undefined && now >= novelty.quiet + NOVELTY_QUIET_MS) novelty = undefined;
  // The surge goes on: judged on its last minutes (at the rate of 15), so that the tail of a flood that stopped
  // (its refused sends still in the 15 minutes) does not renew the closure for the half hour after it.
  const surgeRate = previous.closed
    ? THRESHOLDS.countrySurge[previous.closed.level].overRate * Math.max(usual15, 2)
    : Infinity;
  const surging =
    previous.closed?.reason === 'country_surge' && lastMinutesAt(stats, now, 15, (m) => m.s) >= surgeRate;
  const surgedAt = (probes: Cohort) =>
    ((stats.minutes[String(minuteIndex(probes.at))]?.s ?? 0) - probes.sends) * 15 >= surgeRate;
  let closed: CountryBlock | undefined =
    previous.closed &&
    carry(
      previous.closed,
      conversion,
      COUNTRY_HOLD_MS,
      now,
      vindicate,
      previous.closed.reason === 'country_surge' ? surging : undefined,
      Math.min(1, usual15 / Math.max(sends15, 1)),
      surgedAt,
    );
  if (closed?.reason === 'country_surge' && !surging) closed = { ...closed, calm: now };
  // A flood's provisional closure that lapsed unconfirmed was a crowd checking its codes: that rule leaves the
  // country alone for a while (the crowd's volume would close it again at once); the other rules do not.
  const quietFloodRule = () => {
    vindicated[FLOOD_LAPSED] = now + VINDICATED_MS;
  };
  if (previous.closed?.provisional && !closed) quietFloodRule();
  const countryLifted = liftedPrefix(lifted, countryPrefix, now) || (vindicated[countryPrefix] ?? 0) > now;
  // The country's rules judge the country's traffic but its sequences: those are the sequence rule's.
  const judged = withoutSequences(stats, blocks, countryPrefix, now);
  const cohorts30 = (pick: (bucket: MinuteBucket) => [number, number]) =>
    minuteCohorts(judged.minutes, now - 30 * MINUTE, pick);
  const all = conversionEvidence(
    cohorts30((m) => [m.a, m.c]),
    conversion,
    now,
  );

  if (baseline && !countryLifted) {
    // Many sends to ranges not established in this country, their codes not checked.
    // A country whose real users are spread over many ranges sends much to ranges not established every day:
    // its novel share must rise well above its own usual share (half the way to all), not above a fixed one.
    const baseNovel = stats.base.s > 0 ? stats.base.n / stats.base.s : 0;
    const fraction = country30 > 0 ? novel / country30 : 0;
    const evidence = conversionEvidence(
      cohorts30((m) => [m.na, m.nc]),
      conversion,
      now,
    );
    // Only while they go on (above): a flood that stopped leaves its refused sends in the half hour; its codes,
    // now old enough to judge, must not start an hour's block after it.
    const level = levelOf(
      (l) =>
        startsAt(novelty, l) &&
        ongoing &&
        fraction >=
          Math.max(
            THRESHOLDS.novelSurge[l].minFraction,
            baseNovel + THRESHOLDS.novelSurge[l].overUsual * (1 - baseNovel),
          ) &&
        damning(evidence, LOG_ALPHA.start[l]),
    );
    if (level) {
      const merged = mergeNovelty(
        novelty,
        {
          reason: 'novel_prefix_surge',
          level,
          hold: BLOCK_HOLD_MS,
          figures: {
            novel_sends_30m: novel,
            novel_share: round2(fraction),
            baseline_novel_share: round2(baseNovel),
            checked: evidence.checked,
            expected: round2(evidence.expected),
          },
        },
        now,
      );
      if (merged.started)
        started.push({
          reason: 'novel_prefix_surge',
          prefix: country,
          level,
          figures: merged.block.figures,
        });
      novelty = merged.block;
    }

    // The country's volume far above its usual rate, its codes checked far less than usual.
    // Judged on the surge's own 15 minutes: the half hour's earlier, checked sends would dilute it.
    const surge = conversionEvidence(
      minuteCohorts(judged.minutes, now - 15 * MINUTE, (m) => [m.a, m.c]),
      conversion,
      now,
    );
    // Or, in a surge, unchecked sends past what the last half hour's checked codes vouch for (the learning
    // rule's burst): a flood is stopped in minutes, before the typing pace lets the test above conclude.
    // Only where no narrower block (a sequence, a range, new ranges) already answers the traffic.
    const narrower =
      novelty?.level === 'standard' ||
      blocks.some((b) => b.level === 'standard' && b.reason !== 'unchecked_range');
    const bursting =
      !narrower && uncheckedBurstOf(acceptedChecked(judged.minutes), now, SURGE_UNCHECKED_BURST).bursting;
    closed = floodClosure(stats, closed, {
      now,
      conversion,
      window,
      started,
      country,
      strict: !!context.strict,
      mayStart: (vindicated[FLOOD_LAPSED] ?? 0) <= now,
      returning: (vindicated[FLOOD_CONFIRMED] ?? 0) > now,
      onLapse: quietFloodRule,
    });
    const surgeLevel = levelOf(
      (l) =>
        (startsAt(closed, l) || !!closed?.provisional) &&
        sends15 >= THRESHOLDS.countrySurge[l].overRate * Math.max(usual15, 2) &&
        (damning(surge, LOG_ALPHA.start[l]) || bursting),
    );
    if (surgeLevel)
      closed = closeCountry(stats, closed, 'country_surge', surgeLevel, now, started, country, {
        sends_15m: sends15,
        usual_15m: round2(usual15),
        checked: surge.checked,
        expected: round2(surge.expected),
      });
  } else if (!countryLifted) {
    // Learning: no baseline yet, so no rule compares with one; the country's checked codes alone decide.
    const level = levelOf((l) => damning(all, LOG_ALPHA.start[l]));
    const { bursting, burst } = uncheckedBurstOf(acceptedChecked(judged.minutes), now);
    const found = bursting ? 'standard' : level;
    if (found && startsAt(closed, found))
      closed = closeCountry(stats, closed, 'low_conversion', found, now, started, country, {
        sends_30m: all.sends,
        sends_10m: burst,
        checked: all.checked,
        expected: round2(all.expected),
      });
  }
  return { novelty, closed };
}

/**
 * A flood into ranges not established (`NOVEL_FLOOD`): many more such sends in minutes than the country's usual,
 * spread thin, close the country (but its open ranges) at once, before real users could have typed their codes, for
 * a few minutes: at `strict` on that volume, at `standard` only where most of them also land in the country's rare
 * ranges (a real crowd's numbers fall where its users' always do), or fewer do and their delivered codes go
 * unchecked. A flood drawn over the whole numbering also hits established ranges, so the closure is the country's.
 * It is kept (for the closure's hold) only if the codes of the sends that started it then go unchecked, judged at
 * the country's own conversion and the sequence rule's bar: the volume and the spread already said much. A real
 * crowd checks its codes and the closure lapses: the price of `strict` is that crowd's first minutes refused.
 */
function floodClosure(
  stats: CountryStats,
  closed: CountryBlock | undefined,
  context: {
    now: number;
    conversion: number;
    window: number;
    started: StartedBlock[];
    country: string;
    /** The service is at strict: the flood's volume alone closes (at standard, only if drawn unlike its users). */
    strict: boolean;
    /** No provisional closure lapsed lately. */
    mayStart: boolean;
    /** A closure of a flood was confirmed lately (`NOVEL_FLOOD.returning`). */
    returning: boolean;
    onLapse: () => void;
  },
): CountryBlock | undefined {
  const { now, conversion, window, started, country } = context;
  if (closed?.provisional) {
    // `conversion` is half the baseline's (the rules' margin); a crowd of real users converts as the country's do.
    const trigger = exactConversionEvidence(
      minuteCohorts(stats.minutes, closed.since - NOVEL_FLOOD.windowMs, (m) => [m.na, m.nc]),
      2 * conversion,
      now,
    );
    // Real users' codes come back within the typing time: as soon as they are checked about as often as the
    // country's users check theirs, the crowd is let through (a flood, even with a few fake checks, is not).
    // Not within a batching window of the closure: the rule closed knowing those checks, and judging them again
    // moments later (another batch: receipts) let a couple of real users' checks among a flood lift it.
    // A closure drawn unlike the country's users (its figures say so) sets aside, first, the checks its usual users
    // beside it would make over the cohorts' span: all their sends' eventual checks, not aged as the crowd's are,
    // since a handful of real users' quick checks among a flood's young codes is what lifted it (ADR 0008). A
    // closure on volume alone (strict) does not: its crowd may be the usual users, checking slowly.
    const drawn = closed.figures.rare_sends_6m !== undefined;
    const usualSends =
      drawn && window > 0 ? (stats.base.n / window) * (now - closed.since + NOVEL_FLOOD.windowMs) : 0;
    const crowdChecked = trigger.checked - usualSends * 2 * conversion;
    const crowdExpected = trigger.expected * Math.max(0, 1 - usualSends / Math.max(trigger.sends, 1));
    if (now - closed.since >= LAPSE_AFTER_MS && crowdChecked >= 2 && crowdChecked > 0.5 * crowdExpected) {
      context.onLapse();
      return undefined;
    }
    if (!damning(trigger, LOG_ALPHA.narrow.standard)) return closed;
    const { provisional: _provisional, ...confirmed } = closed;
    // The hold counts from the closure, not from the batch that confirmed it: how often the consumer runs (a
    // batch of receipts moments later) must not move when the country opens again.
    return {
      ...confirmed,
      until: Math.max(closed.until, closed.since + COUNTRY_HOLD_MS),
      figures: { ...closed.figures, checked: trigger.checked, expected: round2(trigger.expected) },
    };
  }
  if (closed || !context.mayStart) return closed;
  // Accepted sends only: refused ones never start (or restart) a closure on their volume.
  const novel = minutesSum(stats, now, NOVEL_FLOOD.windowMs / MINUTE, (m) => m.na);
  const usual = window > 0 ? (stats.base.n / window) * NOVEL_FLOOD.windowMs : 0;
  // Spread thin: over the range buckets' span, no range not established holds much of such sends.
  const spanFrom = (rangeBucketIndex(now) - 1) * RANGE_BUCKET_MS;
  const spanNovel = minutesSum(stats, now, (now - spanFrom) / MINUTE, (m) => m.na);
  const busiest = Math.max(
    0,
    ...Object.entries(stats.recentRanges)
      .filter(([range]) => !isEstablishedRange(stats.ranges[range]))
      .map(([, buckets]) =>
        sum(
          Object.entries(buckets)
            .filter(([key]) => Number(key) * RANGE_BUCKET_MS >= spanFrom)
            .map(([, [, accepted]]) => accepted),
        ),
      ),
  );
  // Far past what the usual rate (a daily mean; an afternoon peaks near twice it) would give by chance.
  const bar = context.returning ? NOVEL_FLOOD.returning : NOVEL_FLOOD;
  const unlikely = poissonAtLeast(novel, NOVEL_FLOOD.peak * usual) < bar.alpha;
  if (novel < bar.sends || !unlikely || busiest > NOVEL_FLOOD.topShare * spanNovel) return undefined;
  // A crowd of real users draws its numbers as the country's users do, a flood over the whole numbering does not:
  // far more of its sends land in the country's rare ranges than usual. That alone lets the closure act at
  // `standard`; at `strict` the volume suffices.
  const { share } = NOVEL_FLOOD;
  const accepted = minutesSum(stats, now, share.windowMs / MINUTE, (m) => m.a);
  const rare = minutesSum(stats, now, share.windowMs / MINUTE, (m) => m.ra ?? 0);
  const [baseSends, baseRare] = stats.base.rare ?? [0, 0];
  const usualRare = baseSends >= share.baseSends ? baseRare / baseSends : 1;
  const drawChance = binomialAtLeast(rare, accepted, Math.min(usualRare + share.margin, 1));
  // The same minutes' codes to ranges not established that a prompt receipt says reached their phones, and how few
  // of them were checked (at the rules' conversion): a test of its own, joined with the draw's.
  const typed = exactConversionEvidence(
    minuteCohorts(stats.minutes, now - share.windowMs, (m) => [Math.min(m.nd ?? 0, m.na), m.nc]),
    conversion,
    now,
  );
  const unlikeUsers = Math.min(drawChance, jointChance(Math.log(drawChance), typed.logChance)) < share.alpha;
  const level: BlockLevel | undefined = unlikeUsers ? 'standard' : context.strict ? 'strict' : undefined;
  if (!level) return undefined;
  const block = closeCountry(stats, undefined, 'country_surge', level, now, started, country, {
    novel_sends_3m: novel,
    usual_3m: round2(usual),
    ...(unlikeUsers && {
      rare_sends_6m: rare,
      sends_6m: accepted,
      usual_rare_share: round2(usualRare),
      delivered_6m: typed.sends,
      checked_6m: typed.checked,
    }),
    ...(context.returning && { returning: 1 }),
  });
  return { ...block, until: now + NOVEL_FLOOD.holdMs, provisional: true };
}

/**
 * Ranges sent to lately (a send in the last 35 minutes, refused ones too) whose last hours (`lately`) hold at least
 * `UNCHECKED_RANGES.sends` sends old enough to check (not of the last 5 minutes), none of them checked; and how many
 * such ranges real users would leave (each range's chance that none was checked, summed), converting at
 * `conversion.delivered` the codes a prompt receipt says were delivered, at `conversion.sent` the others.
 */
function uncheckedRanges(
  stats: CountryStats,
  now: number,
  conversion: { sent: number; delivered: number },
): { ranges: { range: string; sends: number }[]; expected: number } {
  const youngFrom = rangeBucketIndex(now - 5 * MINUTE);
  const ranges: { range: string; sends: number }[] = [];
  let expected = 0;
  for (const [range, buckets] of Object.entries(stats.recentRanges)) {
    const lately = stats.lately?.[range];
    if (!lately || sum(Object.values(buckets).map(([sent]) => sent)) < 1) continue;
    const young = Object.entries(buckets).filter(([key]) => Number(key) >= youngFrom);
    const [total, checked, deliveredLately = 0] = lately;
    const sends = total - sum(young.map(([, [, accepted]]) => accepted));
    if (sends < UNCHECKED_RANGES.sends) continue;
    const delivered = Math.min(sends, Math.max(0, deliveredLately - sum(young.map(([, b]) => b[3] ?? 0))));
    expected +=
      Math.pow(1 - conversion.delivered, delivered) * Math.pow(1 - conversion.sent, sends - delivered);
    if (checked < 0.5) ranges.push({ range, sends });
  }
  return { ranges, expected };
}

/**
 * The stats with the accepted sends and checked codes of the sequences the sequence rule judges at `standard` taken
 * out of the minute buckets (a run's range not established: out of the novel counts too): suspects whose last 10
 * minutes run as long as that rule asks, or under its block. Left in, a sequence's first unchecked codes closed its
 * whole country to its real users (ADR 0008). Shorter runs stay in: a run of 4 here and there would otherwise be
 * judged by no rule at `standard`.
 */
function withoutSequences(
  stats: CountryStats,
  blocks: readonly GuardBlock[],
  countryPrefix: string,
  now: number,
): CountryStats {
  const judged = Object.entries(stats.suspects).filter(
    ([prefix]) =>
      blocks.some(
        (b) => b.reason === 'sequential_numbers' && b.level === 'standard' && prefix.startsWith(b.prefix),
      ) ||
      longestRun(
        (stats.runs[prefix] ?? [])
          .filter(([, sec]) => sec * 1000 > now - RUN_WINDOW_MS)
          .map(([suffix]) => suffix),
      ) >= THRESHOLDS.sequential.standard.run,
  );
  if (judged.length === 0) return stats;
  const minutes: Record<string, MinuteBucket> = {};
  for (const [key, bucket] of Object.entries(stats.minutes)) minutes[key] = { ...bucket };
  for (const [prefix, suspect] of judged) {
    const novel = !isEstablishedRange(stats.ranges[prefix.slice(0, countryPrefix.length + RANGE_WIDTH)]);
    for (const [key, [accepted, checked]] of Object.entries(suspect.m)) {
      const minute = minutes[key];
      if (!minute) continue;
      minute.a = Math.max(0, minute.a - accepted);
      minute.c = Math.max(0, minute.c - checked);
      if (novel) {
        minute.na = Math.max(0, minute.na - accepted);
        minute.nc = Math.max(0, minute.nc - checked);
        // Receipts are not counted per run: its sends are taken out as if all were delivered.
        if (minute.nd) minute.nd = Math.max(0, minute.nd - accepted);
      }
    }
  }
  return { ...stats, minutes };
}

/** `uncheckedRanges`: sends a range's history needs to count, and ranges the rule needs at least. */
const UNCHECKED_RANGES = { sends: 3, min: 3 } as const;

/**
 * Unchecked sends of the last 10 minutes past what the checked codes of the last 30 vouch for, over `cohorts`
 * (minute index → [accepted, checked]): a country's, or a sequence's own.
 */
function uncheckedBurstOf(
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

/** A country's minute buckets as [accepted, checked] cohorts. */
const acceptedChecked = (minutes: Record<string, MinuteBucket>): Record<string, [number, number]> =>
  Object.fromEntries(Object.entries(minutes).map(([key, m]) => [key, [m.a, m.c]]));

/** Checked codes in the last 35 minutes that keep a range open while its country is closed. */
const OPEN_CHECKED = 2;

/** The ranges that stay open while a country is closed: those whose codes were checked lately. */
function openRanges(stats: CountryStats): string[] {
  return Object.entries(stats.recentRanges)
    .filter(([, buckets]) => sum(Object.values(buckets).map(([, , checked]) => checked)) >= OPEN_CHECKED)
    .map(([range]) => range)
    .sort()
    .slice(0, LIMITS.open);
}

function closeCountry(
  stats: CountryStats,
  current: CountryBlock | undefined,
  reason: GuardReason,
  level: BlockLevel,
  now: number,
  started: StartedBlock[],
  country: string,
  figures: Figures,
): CountryBlock {
  const open = openRanges(stats);
  const merged = mergeNovelty<CountryBlock>(
    current,
    { reason, level, hold: COUNTRY_HOLD_MS, figures: { ...figures, ranges_open: open.length }, open },
    now,
  );
  if (merged.started) started.push({ reason, prefix: country, level, figures: merged.block.figures });
  return merged.block;
}

/** The cap reached that lasts longest (a day's before an hour's), and when it lifts (the end of that hour or day). */
function capReached(
  stats: CountryStats,
  caps: CountryCaps,
  now: number,
): { until: number; figures: Figures } | undefined {
  const hour = stats.caps.h?.[0] === Math.floor(now / HOUR) ? stats.caps.h : undefined;
  const day = stats.caps.d?.[0] === Math.floor(now / DAY) ? stats.caps.d : undefined;
  const checks: [number | undefined, number | undefined, number, string][] = [
    [caps.hourlySends, hour?.[1], (Math.floor(now / HOUR) + 1) * HOUR, 'hourly_sends'],
    [caps.hourlySpend, hour?.[2], (Math.floor(now / HOUR) + 1) * HOUR, 'hourly_spend'],
    [caps.dailySends, day?.[1], (Math.floor(now / DAY) + 1) * DAY, 'daily_sends'],
    [caps.dailySpend, day?.[2], (Math.floor(now / DAY) + 1) * DAY, 'daily_spend'],
  ];
  let reached: { until: number; figures: Figures } | undefined;
  for (const [cap, value, until, name] of checks)
    if (cap !== undefined && value !== undefined && value >= cap && until > (reached?.until ?? 0))
      reached = { until, figures: { [name]: value, cap } };
  return reached;
}

function scopeCohorts(stats: ScopeStats, from: number, pick: (m: ScopeMinute) => [number, number]): Cohort[] {
  return Object.entries(stats.minutes)
    .filter(([key]) => Number(key) * MINUTE >= from)
    .map(([key, m]) => {
      const [sends, checked] = pick(m);
      return { at: Number(key) * MINUTE + MINUTE / 2, sends, checked };
    });
}

/** The scope's cross-country state: established countries, and the two novelty rules across countries. */
export function evaluateScope(
  stats: ScopeStats,
  previous: ScopeGuardState,
  now: number,
): { state: ScopeGuardState; started: StartedBlock[] } {
  const lifted = current(previous.lifted, now);
  const vindicated = current(previous.vindicated, now);
  const started: StartedBlock[] = [];
  const conversion = LEGIT_FLOOR_CONVERSION;
  const vindicate = () => {
    vindicated['*'] = now + VINDICATED_MS;
  };
  let novelCountries =
    previous.novelCountries && carry(previous.novelCountries, conversion, BLOCK_HOLD_MS, now, vindicate);
  let novelRanges =
    previous.novelRanges && carry(previous.novelRanges, conversion, BLOCK_HOLD_MS, now, vindicate);
  const hour = Object.entries(stats.minutes).filter(([key]) => Number(key) * MINUTE >= now - 60 * MINUTE);
  const nCountries = new Set(hour.flatMap(([, m]) => m.nCountries));
  const rCountries = new Set(hour.flatMap(([, m]) => m.rCountries));
  const hold = (
    current: NoveltyBlock | undefined,
    reason: GuardReason,
    level: BlockLevel,
    figures: Figures,
  ) => {
    const merged = mergeNovelty(current, { reason, level, hold: BLOCK_HOLD_MS, figures }, now);
    if (merged.started) started.push({ reason, prefix: '*', level, figures: merged.block.figures });
    return merged.block;
  };

  if (scopeHasBaseline(stats, now) && !liftedPrefix({ ...lifted, ...vindicated }, '*', now)) {
    const countryEvidence = conversionEvidence(
      scopeCohorts(stats, now - 60 * MINUTE, (m) => [m.na, m.nc]),
      conversion,
      now,
    );
    const countryLevel = levelOf(
      (l) =>
        startsAt(novelCountries, l) &&
        nCountries.size >= THRESHOLDS.novelCountries[l].countries &&
        damning(countryEvidence, LOG_ALPHA.start[l]),
    );
    if (countryLevel)
      novelCountries = hold(novelCountries, 'novel_country_surge', countryLevel, {
        countries: nCountries.size,
        checked: countryEvidence.checked,
        expected: round2(countryEvidence.expected),
      });
    const rangeEvidence = conversionEvidence(
      scopeCohorts(stats, now - 60 * MINUTE, (m) => [m.ra, m.rc]),
      conversion,
      now,
    );
    if (
      startsAt(novelRanges, 'strict') &&
      rCountries.size >= THRESHOLDS.novelSpread.strict.countries &&
      damning(rangeEvidence, LOG_ALPHA.start.strict)
    )
      novelRanges = hold(novelRanges, 'novel_prefix_spread', 'strict', {
        countries: rCountries.size,
        checked: rangeEvidence.checked,
        expected: round2(rangeEvidence.expected),
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
      ...(Object.keys(vindicated).length > 0 && { vindicated }),
    },
    started,
  };
}
