/**
 * What the guard does for one service now, as `npm run admin -- guard report` and the console show it: the blocks
 * in force (its own, and the global ones with whether they apply to it), each with the prefix that lifts it, and
 * the conversion drops told of in the last hour.
 */
import type { GuardReport } from './consumer';
import type {
  BlockLevel,
  CountryGuardState,
  Figures,
  GuardBlock,
  GuardLevel,
  GuardReason,
  NoveltyBlock,
  ScopeGuardState,
} from './model';
import { countryPrefixOf } from './prefix';
import { GLOBAL_QUORUM } from './rules/judging';
import { serviceTag } from './aggregates';

/** How long a prefix lifted by hand (`guard unblock`, the console) stays lifted: the rules leave it alone meanwhile. */
export const LIFT_MS = 60 * 60_000;

/** The service's guard as stored: its settings, its countries' and its own state, the global scope's, the report. */
export interface GuardOverview {
  level: GuardLevel | undefined;
  safeList: string[];
  countries: { country: string; state: CountryGuardState }[];
  scope: ScopeGuardState | undefined;
  /** The global scope's state in the countries the service sends to. */
  global: { country: string; state: CountryGuardState }[];
  report: GuardReport;
}

export interface BlockInForce {
  /** What is refused: a prefix, or a description of what a novelty block refuses. */
  blocked: string;
  /** The prefix `unblock` lifts it with (`*`: every block of the service). */
  liftWith: string;
  reason: GuardReason;
  level: BlockLevel;
  scope: 'service' | 'global';
  /**
   * It refuses the service's sends at its level (`off` and `shadow` refuse nothing): a `strict` block only at
   * `strict`, a global one only when enough other services showed it (else shadow only).
   */
  applies: boolean;
  until: number;
  figures: Figures;
}

/** A conversion drop the service was told of, in its quiet hour (conversion-watch.ts): nothing was refused. */
export interface DropTold {
  country: string;
  since: number;
  until: number;
  figures: Figures;
}

/** The service's countries told of a conversion drop within the hour before `now`, the latest first. */
export function conversionDrops(overview: GuardOverview, now: number): DropTold[] {
  return overview.countries
    .flatMap(({ country, state }) =>
      state.drop && state.drop.until > now ? [{ country, ...state.drop }] : [],
    )
    .sort((a, b) => b.since - a.since);
}

/** The blocks in force at `now`, the service's first, each once. */
export function blocksInForce(overview: GuardOverview, serviceSid: string, now: number): BlockInForce[] {
  const tag = serviceTag(serviceSid);
  const enforced = overview.level === 'strict' ? 'strict' : 'standard';
  const atLevel = (level: BlockLevel) => level === 'standard' || enforced === 'strict';
  const live = <T extends { until: number }>(block: T | undefined): block is T =>
    !!block && block.until > now;
  // Lifted by hand for the service (`unblock`): the verdict passes the numbers under a lifted prefix.
  const liftedIn = (lifted: Record<string, number> | undefined, prefix: string) =>
    Object.entries(lifted ?? {}).some(([p, until]) => until > now && prefix.startsWith(p));
  const ownLifted = new Map(overview.countries.map(({ country, state }) => [country, state.lifted]));
  const lifted = (country: string, prefix: string) =>
    liftedIn(ownLifted.get(country), prefix) || liftedIn(overview.scope?.lifted, prefix);
  const novelty = (blocked: string, liftWith: string, block: NoveltyBlock): BlockInForce => ({
    blocked,
    liftWith,
    reason: block.reason,
    level: block.level,
    scope: 'service',
    applies: atLevel(block.level),
    until: block.until,
    figures: block.figures,
  });
  const fromBlock = (b: GuardBlock, scope: 'service' | 'global', applies: boolean): BlockInForce => ({
    blocked: b.prefix,
    liftWith: b.prefix,
    reason: b.reason,
    level: b.level,
    scope,
    applies,
    until: b.until,
    figures: b.figures,
  });
  const own = overview.countries.flatMap(({ country, state }) => {
    const countryPrefix = countryPrefixOf(country) ?? '*';
    return [
      ...state.blocks
        .filter((b) => live(b) && !lifted(country, b.prefix))
        .map((b) => fromBlock(b, 'service', atLevel(b.level))),
      ...(live(state.novelty)
        ? [novelty(`${country}: ranges not established`, countryPrefix, state.novelty)]
        : []),
      ...(live(state.closed)
        ? [novelty(`${country} but ${state.closed.open.length} ranges`, countryPrefix, state.closed)]
        : []),
    ];
  });
  const scope = overview.scope;
  const wide = [
    ...(live(scope?.novelCountries) ? [novelty('countries not established', '*', scope.novelCountries)] : []),
    ...(live(scope?.novelRanges)
      ? [novelty('ranges not established, every country', '*', scope.novelRanges)]
      : []),
  ];
  const global = overview.global.flatMap(({ country, state }) =>
    state.blocks
      .filter((b) => live(b) && !lifted(country, b.prefix))
      .map((b) =>
        fromBlock(
          b,
          'global',
          atLevel(b.level) && (b.services ?? []).filter((service) => service !== tag).length >= GLOBAL_QUORUM,
        ),
      ),
  );
  return [...own, ...wide, ...global];
}
