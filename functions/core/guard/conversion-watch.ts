/**
 * The conversion watch: a country whose codes of the last hour were checked far less than its users check theirs.
 * It refuses nothing; the owner is told (docs/guard.md, "Conversion watch"). What the rules cannot pin on a prefix
 * (an attacker paced over many ranges) or must not refuse (a carrier holding the codes back) shows here.
 */
import { MINUTE, RECENT_MS, round2, type MinuteBucket } from './aggregates';
import { binomialAtLeast, sum } from './evidence';
import type { Figures } from './model';

export const CONVERSION_WATCH = {
  /** Codes of the last hour (the minute buckets kept), each once old enough to have been typed. */
  windowMs: RECENT_MS,
  typedMs: 3 * MINUTE,
  /** Told when the share checked is below this part of the country's usual conversion, */
  ratio: 0.85,
  /** by more than chance gives once in 100,000 (binomial), */
  alpha: 1e-5,
  /** and this many checked codes short of the usual at least: a small country's few misses are no news. */
  missing: 20,
  /** Told once per country in this long. */
  quietMs: 60 * MINUTE,
} as const;

/**
 * The figures of a conversion drop in these minute buckets (accepted sends, checked codes), against the country's
 * `usual` conversion (its baseline's, without the last hour); none when the last hour's codes are checked about as
 * usual. Refused sends made no code; the guard's probes did, and count.
 */
export function conversionDrop(
  minutes: Record<string, MinuteBucket>,
  usual: number,
  now: number,
  pick: (bucket: MinuteBucket) => [sends: number, checked: number] = (m) => [m.a, m.c],
): Figures | undefined {
  const { windowMs, typedMs, ratio, alpha, missing } = CONVERSION_WATCH;
  const typed = Object.entries(minutes)
    .filter(([key]) => Number(key) * MINUTE >= now - windowMs && (Number(key) + 1) * MINUTE <= now - typedMs)
    .map(([, bucket]) => bucket);
  const sends = sum(typed.map((m) => pick(m)[0]));
  const checked = sum(typed.map((m) => pick(m)[1]));
  const short = usual * sends - checked;
  // At most `checked` of `sends` at the watched conversion: at least the rest unchecked, at its complement.
  if (short < missing || binomialAtLeast(sends - checked, sends, 1 - ratio * usual) >= alpha)
    return undefined;
  return {
    sends_60m: sends,
    checked_60m: checked,
    usual_conversion: round2(usual),
    missing: Math.round(short),
  };
}

/** Which codes a drop's figures are of: the country's (`all`), or its ranges not established alone (`new`). */
export const dropRanges = (figures: Figures): 'all' | 'new' => (figures.new_ranges ? 'new' : 'all');
