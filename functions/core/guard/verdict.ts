/**
 * The verdict on the send path: pure, over the guard state that came with the send's own BatchGetItem. No
 * read, no threshold here: the consumer of the table's stream (./signals.ts) turned the signals into blocks.
 */
import type {
  BlockLevel,
  CountryGuardState,
  Figures,
  GuardBlock,
  GuardReason,
  GuardSettings,
  GuardView,
  NoveltyBlock,
} from './model';
import { placeOf, type NumberPlace } from './prefix';
import { highRiskRangeOf } from './ranges';

export interface GuardInput {
  settings: GuardSettings;
  /** `RiskCheck=disable` on this send. */
  riskCheckDisabled: boolean;
  e164: string;
  country: string;
  view: GuardView;
  now: number;
}

export type GuardVerdict =
  | { action: 'allow'; why: 'off' | 'risk_check_disabled' | 'safe_list' | 'no_signal' }
  | {
      /** `block`: refuse. `shadow`: the level is shadow; record and send. */
      action: 'block' | 'shadow';
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

/** The first block of `state` covering the number, unless the service's operator lifted it (`lifted`). */
function prefixBlock(
  state: CountryGuardState | undefined,
  lifted: Record<string, number> | undefined,
  place: NumberPlace,
  enforced: 'standard' | 'strict',
  now: number,
): GuardBlock | undefined {
  if (isLifted(lifted, place.e164, now)) return undefined;
  return state?.blocks.find(
    (block) => block.until > now && applies(block.level, enforced) && place.e164.startsWith(block.prefix),
  );
}

const active = (block: NoveltyBlock | undefined, enforced: 'standard' | 'strict', now: number) =>
  block && block.until > now && applies(block.level, enforced) ? block : undefined;

/** Which rule, if any, refuses this destination at the service's level (shadow decides as standard). */
export function guardVerdict(input: GuardInput): GuardVerdict {
  const { settings, e164, now, view } = input;
  if (settings.level === 'off') return { action: 'allow', why: 'off' };
  if (input.riskCheckDisabled) return { action: 'allow', why: 'risk_check_disabled' };
  if (settings.safeList.some((prefix) => e164.startsWith(prefix)))
    return { action: 'allow', why: 'safe_list' };
  const enforced = settings.level === 'strict' ? 'strict' : 'standard';
  const hit = findHit(placeOf(e164, input.country), view, enforced, now);
  if (!hit) return { action: 'allow', why: 'no_signal' };
  return { action: settings.level === 'shadow' ? 'shadow' : 'block', ...hit };
}

function findHit(
  place: NumberPlace,
  view: GuardView,
  enforced: 'standard' | 'strict',
  now: number,
): Hit | undefined {
  const risky = highRiskRangeOf(place.e164);
  if (risky) return { reason: 'high_risk_range', prefix: risky.prefix, scope: 'list', figures: {} };

  const own = view.service.country;
  const all = view.service.all;
  // A prefix the service's operator lifted by hand is lifted for that service's sends, global blocks included.
  const block = prefixBlock(own, own?.lifted, place, enforced, now);
  if (block) return { reason: block.reason, prefix: block.prefix, scope: 'service', figures: block.figures };
  const global = prefixBlock(view.global.country, { ...own?.lifted, ...all?.lifted }, place, enforced, now);
  if (global)
    return { reason: global.reason, prefix: global.prefix, scope: 'global', figures: global.figures };

  const liftedHere = isLifted(own?.lifted, place.e164, now) || isLifted(all?.lifted, place.e164, now);
  if (liftedHere) return undefined;
  const rangeKnown = own?.established.includes(place.range) ?? false;
  const countryKnown = all?.establishedCountries.includes(place.country) ?? false;

  // A novelty block refuses what it does not know, under the prefix it judged (the range or the country).
  const hit = (block: NoveltyBlock, prefix: string): Hit => ({
    reason: block.reason,
    prefix,
    scope: 'service',
    figures: block.figures,
  });
  const novelty = active(own?.novelty, enforced, now);
  if (novelty && !rangeKnown) return hit(novelty, place.range);
  const flood = novelty?.flood;
  if (flood && flood.until > now && !flood.open.includes(place.range))
    return { reason: 'country_flood', prefix: place.range, scope: 'service', figures: flood.figures };
  const novelCountries = active(all?.novelCountries, enforced, now);
  if (novelCountries && !countryKnown) return hit(novelCountries, place.countryPrefix);
  const novelRanges = active(all?.novelRanges, enforced, now);
  if (novelRanges && !rangeKnown) return hit(novelRanges, place.range);
  return undefined;
}
