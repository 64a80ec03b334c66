/** The paced attacker's rule (`unchecked_range`): ranges whose last hours hold codes none of which was checked. */
import { type CountryStats, MINUTE, rangeBucketIndex, round2 } from '../aggregates';
import { poissonAtLeast, sum } from '../evidence';
import {
  BLOCK_HOLD_MS,
  type Judging,
  levelOf,
  LOG_ALPHA,
  NARROW_CONVERSION,
  receivedConversion,
  startsAt,
} from './judging';

/**
 * Ranges a slow attacker paces its sends over: each too thin for a half hour's evidence, but their last hours
 * hold sends none of whose codes was checked, in more of the ranges sent to lately than real users leave so.
 */
export function judgeUncheckedRanges(j: Judging): void {
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

/** `uncheckedRanges`: sends a range's history needs to count, and ranges the rule needs at least. */
const UNCHECKED_RANGES = { sends: 3, min: 3 } as const;
