/** The service's rules across its countries (the scope item): codes to new countries, new ranges in many. */
import {
  decay,
  isEstablishedCountry,
  MINUTE,
  round2,
  scopeHasBaseline,
  type ScopeMinute,
  type ScopeStats,
} from '../aggregates';
import { type Cohort, conversionEvidence, damning } from '../evidence';
import type { BlockLevel, Figures, GuardReason, NoveltyBlock, ScopeGuardState } from '../model';
import { carry, current, liftedPrefix, mergeNovelty } from './block-life';
import {
  BLOCK_HOLD_MS,
  LEGIT_FLOOR_CONVERSION,
  levelOf,
  LOG_ALPHA,
  type StartedBlock,
  startsAt,
  THRESHOLDS,
  VINDICATED_MS,
} from './judging';

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
