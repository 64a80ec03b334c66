/** The sequence rule (`sequential_numbers`): near-sequential runs of numbers whose codes go unchecked. */
import { longestRun, MINUTE, round2, RUN_WINDOW_MS } from '../aggregates';
import { conversionEvidence, damning } from '../evidence';
import { countryPrefixOf } from '../prefix';
import {
  BLOCK_HOLD_MS,
  cohortsOf,
  type Judging,
  levelOf,
  LOG_ALPHA,
  NARROW_CONVERSION,
  startsAt,
  THRESHOLDS,
  uncheckedBurstOf,
} from './judging';

/** A run this long blocks its parent (10,000 numbers) at once. */
const WALKING_RUN = 8;

/** The prefix of the same length that follows (`+447400999` → `+447401000`); none after all nines. */
function nextPrefix(prefix: string): string | undefined {
  const digits = prefix.slice(1);
  const next = (BigInt(digits) + 1n).toString().padStart(digits.length, '0');
  return next.length === digits.length ? `+${next}` : undefined;
}

/** Near-sequential runs: suspect run prefixes whose codes real users would have checked by now. */
export function judgeSequences(j: Judging): void {
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
