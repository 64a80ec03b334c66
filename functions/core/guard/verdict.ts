/**
 * The verdict on the send path: pure, over the guard state that came with the send's own BatchGetItem. No
 * read, no threshold here: the consumer of the table's stream (./signals.ts) turned the signals into blocks.
 */
import {
  knownPasses,
  type BlockLevel,
  type CountryGuardState,
  type Figures,
  type GuardBlock,
  type GuardReason,
  type GuardSettings,
  type GuardView,
  type NoveltyBlock,
} from './model';
import { placeOf, type NumberPlace } from './prefix';
import { highRiskRangeOf } from './ranges';
import { GLOBAL_QUORUM } from './rules/judging';
import { isProbe, serviceTag } from './aggregates';

export interface GuardInput {
  settings: GuardSettings;
  /** The sending service: a global block applies to it only when enough other services showed the signal. */
  serviceSid: string;
  /** `RiskCheck=disable` on this send. */
  riskCheckDisabled: boolean;
  e164: string;
  country: string;
  view: GuardView;
  now: number;
}

export type GuardVerdict =
  | { action: 'allow'; why: 'off' | 'risk_check_disabled' | 'safe_list' | 'no_signal' | 'probe' }
  | {
      /**
       * `block`: refuse. `shadow`: the level is shadow; record and send. `known`: the number checked the code of
       * one of the service's last sends to it (`KnownNumber`); record and send.
       */
      action: 'block' | 'shadow' | 'known';
      /**
       * At `shadow`, a block a known number would pass: the send reads its last sends' verifications to tell, so
       * that the record says what `standard` would do.
       */
      unlessKnown?: true;
      reason: GuardReason;
      prefix: string;
      scope: 'service' | 'global' | 'list';
      figures: Figures;
    };

const applies = (level: BlockLevel, enforced: 'standard' | 'strict'): boolean =>
  level === 'standard' || enforced === 'strict';

const isLifted = (lifted: Record<string, number> | undefined, e164: string, now: number): boolean =>
  Object.entries(lifted ?? {}).some(([prefix, until]) => until > now && e164.startsWith(prefix));

type Hit = { reason: GuardReason; prefix: string; scope: 'service' | 'global' | 'list'; figures: Figures };

/**
 * The block of `state` covering the number, unless the service's operator lifted it (`lifted`): one that takes no
 * probes first, so a probe of a wider block never passes a cap or a sequence under it.
 */
function prefixBlock(
  state: CountryGuardState | undefined,
  lifted: Record<string, number> | undefined,
  place: NumberPlace,
  enforced: 'standard' | 'strict',
  now: number,
): GuardBlock | undefined {
  if (isLifted(lifted, place.e164, now)) return undefined;
  const covering = (state?.blocks ?? []).filter(
    (block) => block.until > now && applies(block.level, enforced) && place.e164.startsWith(block.prefix),
  );
  return covering.find((block) => block.probes === undefined) ?? covering[0];
}

const active = <T extends NoveltyBlock>(
  block: T | undefined,
  enforced: 'standard' | 'strict',
  now: number,
) => (block && block.until > now && applies(block.level, enforced) ? block : undefined);

/** Which rule, if any, refuses this destination at the service's level (shadow decides as standard). */
export function guardVerdict(input: GuardInput): GuardVerdict {
  const { settings, e164, now, view } = input;
  if (settings.level === 'off') return { action: 'allow', why: 'off' };
  if (input.riskCheckDisabled) return { action: 'allow', why: 'risk_check_disabled' };
  if (settings.safeList.some((prefix) => e164.startsWith(prefix)))
    return { action: 'allow', why: 'safe_list' };
  const enforced = settings.level === 'strict' ? 'strict' : 'standard';
  const hit = findHit(placeOf(e164, input.country), view, enforced, now, serviceTag(input.serviceSid));
  if (!hit) return { action: 'allow', why: 'no_signal' };
  if (hit === 'probe') return { action: 'allow', why: 'probe' };
  const { shadowOnly, ...rest } = hit;
  if (shadowOnly) return { action: 'shadow', ...rest };
  // What the guard learnt from traffic does not hold against a returning user; the lists and caps do.
  const learnt = rest.scope !== 'list' && rest.reason !== 'country_cap';
  if (learnt && knownPasses(view.known, now)) return { action: 'known', ...rest };
  if (settings.level === 'shadow') return { action: 'shadow', ...rest, ...(learnt && { unlessKnown: true }) };
  return { action: 'block', ...rest };
}

/**
 * The rule that refuses the number, `probe` when one would but the send goes through as its probe, or nothing.
 * A global block another service's traffic made is `shadowOnly` unless `GLOBAL_QUORUM` other services showed it:
 * then the service's own blocks still decide first, since one tenant's traffic alone can make a global block on any
 * range it sends to, and a shadow-only one in their place would pass what the service's own guard refuses.
 */
function findHit(
  place: NumberPlace,
  view: GuardView,
  enforced: 'standard' | 'strict',
  now: number,
  tag: string,
): (Hit & { shadowOnly?: boolean }) | 'probe' | undefined {
  const risky = highRiskRangeOf(place.e164);
  if (risky) return { reason: 'high_risk_range', prefix: risky.prefix, scope: 'list', figures: {} };
  // Caps and probes: a cap refuses every send past it; other blocks let a few probes through (their checked
  // codes lift the block early, their unchecked ones renew it).
  const probe = isProbe(place.e164, now);
  const probing = (block: GuardBlock) => block.probes !== undefined && probe;

  const own = view.service.country;
  const all = view.service.all;
  // A prefix the service's operator lifted by hand is lifted for that service's sends, global blocks included.
  const block = prefixBlock(own, own?.lifted, place, enforced, now);
  if (block)
    return probing(block)
      ? 'probe'
      : { reason: block.reason, prefix: block.prefix, scope: 'service', figures: block.figures };
  const global = prefixBlock(view.global.country, { ...own?.lifted, ...all?.lifted }, place, enforced, now);
  if (global) {
    const others = (global.services ?? []).filter((service) => service !== tag).length;
    const hit = {
      reason: global.reason,
      prefix: global.prefix,
      scope: 'global' as const,
      figures: global.figures,
    };
    if (others >= GLOBAL_QUORUM) return probing(global) ? 'probe' : hit;
    const ownHit = noveltyHit(place, view, enforced, now, probe);
    return ownHit && ownHit !== 'probe' ? ownHit : { ...hit, shadowOnly: true };
  }
  return noveltyHit(place, view, enforced, now, probe);
}

/** The service's own blocks of what it does not know (ranges, countries), or its closed country. */
function noveltyHit(
  place: NumberPlace,
  view: GuardView,
  enforced: 'standard' | 'strict',
  now: number,
  probe: boolean,
): Hit | 'probe' | undefined {
  const own = view.service.country;
  const all = view.service.all;
  const liftedHere = isLifted(own?.lifted, place.e164, now) || isLifted(all?.lifted, place.e164, now);
  if (liftedHere) return undefined;
  const rangeKnown = own?.established.includes(place.range) ?? false;
  const countryKnown = all?.establishedCountries.includes(place.country) ?? false;

  // A novelty block refuses what it does not know, under the prefix it judged (the range or the country).
  const hit = (block: NoveltyBlock, prefix: string): Hit | 'probe' =>
    probe ? 'probe' : { reason: block.reason, prefix, scope: 'service', figures: block.figures };
  const novelty = active(own?.novelty, enforced, now);
  if (novelty && !rangeKnown) return hit(novelty, place.range);
  const closed = active(own?.closed, enforced, now);
  if (closed && !closed.open.includes(place.range)) return hit(closed, place.countryPrefix);
  const novelCountries = active(all?.novelCountries, enforced, now);
  if (novelCountries && !countryKnown) return hit(novelCountries, place.countryPrefix);
  const novelRanges = active(all?.novelRanges, enforced, now);
  if (novelRanges && !rangeKnown) return hit(novelRanges, place.range);
  return undefined;
}
