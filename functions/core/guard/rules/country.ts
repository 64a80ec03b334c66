/**
 * The country's own rules: sends to ranges not established (`novel_prefix_surge`), a surge's or a flood's closure
 * (`country_surge`), and, before the service has a baseline there, its conversion alone (`low_conversion`).
 */
import {
  BASELINE_HALF_LIFE_MS,
  type CountryStats,
  isEstablishedRange,
  longestRun,
  MINUTE,
  type MinuteBucket,
  minuteIndex,
  round2,
  RUN_WINDOW_MS,
} from '../aggregates';
import { type Cohort, conversionEvidence, damning } from '../evidence';
import type { CountryBlock, GuardBlock, NoveltyBlock } from '../model';
import { countryPrefixOf, RANGE_WIDTH } from '../prefix';
import { carry, closeCountry, liftedPrefix, mergeNovelty } from './block-life';
import { FLOOD_CONFIRMED, FLOOD_LAPSED, floodClosure } from './flood-closure';
import {
  BLOCK_HOLD_MS,
  COUNTRY_HOLD_MS,
  type Judging,
  lastMinutesAt,
  levelOf,
  LOG_ALPHA,
  minuteCohorts,
  minutesSum,
  startsAt,
  THRESHOLDS,
  uncheckedBurstOf,
  VINDICATED_MS,
} from './judging';

/** The same in a country surge where the service has a baseline (its rules have more to go on). */
const SURGE_UNCHECKED_BURST = 30;

/**
 * A block of ranges not established outlives the traffic that made it by this long: a flood's refused sends stop
 * with it, and a crowd of real users that comes after it is traffic of its own, judged afresh.
 */
const NOVELTY_QUIET_MS = 15 * MINUTE;

/**
 * The country's own traffic: novelty (ranges not established), a surge's or a flood's closure, and, with no
 * baseline yet, its conversion alone. The service scope's: novelty and closures are a service's own.
 */
export function judgeCountry(j: Judging): { novelty?: NoveltyBlock; closed?: CountryBlock } {
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

/** A country's minute buckets as [accepted, checked] cohorts. */
const acceptedChecked = (minutes: Record<string, MinuteBucket>): Record<string, [number, number]> =>
  Object.fromEntries(Object.entries(minutes).map(([key, m]) => [key, [m.a, m.c]]));
