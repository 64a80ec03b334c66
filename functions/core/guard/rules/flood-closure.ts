/** A flood's provisional closure of its country (`country_surge`, `provisional`), and its confirmation or lapse. */
import {
  type CountryStats,
  isEstablishedRange,
  MINUTE,
  RANGE_BUCKET_MS,
  rangeBucketIndex,
  round2,
} from '../aggregates';
import {
  binomialAtLeast,
  damning,
  exactConversionEvidence,
  jointChance,
  poissonAtLeast,
  sum,
} from '../evidence';
import type { BlockLevel, CountryBlock } from '../model';
import { closeCountry } from './block-life';
import { COUNTRY_HOLD_MS, LOG_ALPHA, minuteCohorts, minutesSum, type StartedBlock } from './judging';

/**
 * At `strict`, a flood into ranges not established, seen in `windowMs`, closes the country for `holdMs` before its
 * codes can be judged (provisional), kept only if the codes of the sends that started it went unchecked. No range
 * may hold more than `topShare` of those sends: one range is a surge or a sequence, and its own rules judge it.
 */
export const NOVEL_FLOOD = {
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

/** A flood's provisional closure may lapse on its checks this long after it started (a batching window). */
const LAPSE_AFTER_MS = 30_000;

/** The `vindicated` key of a flood's provisional closure that lapsed unconfirmed. */
export const FLOOD_LAPSED = 'flood';

/** The `vindicated` key (a rule's timer, as `FLOOD_LAPSED`) of a flood closure its codes confirmed. */
export const FLOOD_CONFIRMED = 'flood_confirmed';

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
export function floodClosure(
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
