/**
 * A block's life after a rule starts it: the probes it lets through and counts (`foldCountryProbes`, called by the
 * consumer on each event), its renewal while they go unchecked and its lifting when they are checked (`carry`), and
 * how a rule's finding joins the blocks already there.
 */
import { type CountryStats, type GuardEvent, LIMITS, MINUTE, minuteIndex, RECENT_MS } from '../aggregates';
import { type Cohort, conversionEvidence, damning, sum, vindicating } from '../evidence';
import type {
  BlockLevel,
  CountryBlock,
  CountryGuardState,
  Figures,
  GuardBlock,
  GuardReason,
  NoveltyBlock,
  ProbeCohorts,
  ScopeGuardState,
} from '../model';
import { placeOf } from '../prefix';
import { cohortsOf, COUNTRY_HOLD_MS, LOG_ALPHA, type StartedBlock } from './judging';

/** Probes, checked less often than real users would, that renew a block whose rule still fires. */
const PROBES_TO_CONFIRM = 3;

/** Whether `prefix` lies under a lift (by hand, or a rule's timer) that still holds. */
export const liftedPrefix = (lifted: Record<string, number>, prefix: string, now: number) =>
  Object.entries(lifted).some(([p, until]) => until > now && prefix.startsWith(p));

/** The marks (lifts, timers) that still hold at `now`. */
export const current = (marks: Record<string, number> | undefined, now: number): Record<string, number> =>
  Object.fromEntries(Object.entries(marks ?? {}).filter(([, until]) => until > now));

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
export function carry<
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

export function mergeBlock(
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

export function mergeNovelty<T extends NoveltyBlock>(
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

export function closeCountry(
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
