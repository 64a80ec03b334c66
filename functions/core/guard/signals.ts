/**
 * The guard's rules: they turn the aggregates (./aggregates.ts, the fold of the table's stream) into the blocks the
 * send path reads. `evaluateCountry` runs one country's rules (rules/), carries its blocks, applies its owner's caps
 * and keeps the conversion watch; `evaluateScope` (rules/scope.ts) judges the service across countries.
 *
 * One principle runs through every rule (docs/guard.md, "Rules"): a destination is refused only on evidence
 * that its codes are checked far less than real users check theirs. Volume, novelty and sequences only say
 * where to look; the evidence is a test of the checked codes against what real users would have checked by
 * now, given how long ago each code was sent (`conversionEvidence`, evidence.ts). Rules that compare with a
 * baseline (a range's usual share, ranges never seen) act only where the service has one (`hasBaseline`);
 * before that a country is judged on its conversions alone. A block takes a few probes through; it is renewed
 * only while the probes' codes go unchecked, and lifted early when they are checked (rules/block-life.ts).
 */
import {
  BASELINE,
  type CountryStats,
  DAY,
  hasBaseline,
  HOUR,
  isEstablishedRange,
  LIMITS,
} from './aggregates';
import { CONVERSION_WATCH, conversionDrop } from './conversion-watch';
import { sum } from './evidence';
import type { ConversionDrop, CountryCaps, CountryGuardState, Figures, GuardBlock } from './model';
import { countryPrefixOf } from './prefix';
import { carry, current, liftedPrefix, mergeBlock } from './rules/block-life';
import { judgeCountry } from './rules/country';
import { FLOOD_CONFIRMED, NOVEL_FLOOD } from './rules/flood-closure';
import {
  BLOCK_HOLD_MS,
  COUNTRY_HOLD_MS,
  type CountryContext,
  type Judging,
  legitConversion,
  measuredConversion,
  type StartedBlock,
  VINDICATED_MS,
} from './rules/judging';
import { judgeRangeSurges } from './rules/range-surges';
import { judgeSequences } from './rules/sequences';
import { judgeUncheckedRanges } from './rules/unchecked-ranges';

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
