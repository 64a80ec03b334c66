/**
 * The range rule (`prefix_surge`): a range holding far more of the country's traffic than usual, its codes
 * unchecked; a range so concentrated that real users seldom fill it so is judged as narrow traffic.
 */
import { MINUTE, RANGE_BUCKET_MS, round2 } from '../aggregates';
import {
  conversionEvidence,
  damning,
  type Evidence,
  exactConversionEvidence,
  poissonAtLeast,
  sum,
} from '../evidence';
import type { BlockLevel } from '../model';
import {
  BLOCK_HOLD_MS,
  type Judging,
  levelOf,
  LOG_ALPHA,
  minutesSum,
  NARROW_CONVERSION,
  receivedConversion,
  startsAt,
  THRESHOLDS,
} from './judging';

/**
 * A range concentrated: at least `sends` of the country's last 30 minutes where its usual share (at least
 * `floorShare`, for a range seldom or never seen) would give so many less than once in `1 / chance`. Narrow as a
 * sequence is, and judged as one (`LOG_ALPHA.narrow`, `NARROW_CONVERSION`): a drip into one range is stopped
 * before the half hour holds enough of its codes for the bar of a broad surge.
 */
const CONCENTRATION = { sends: 5, floorShare: 0.01, chance: 1e-6 } as const;

/** Delivered codes a concentrated range needs before they are judged at the country's own conversion. */
const RECEIVED_SENDS = 8;

/** A range's share of the country's recent traffic far above its baseline share, its codes not checked. */
export function judgeRangeSurges(j: Judging): void {
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
