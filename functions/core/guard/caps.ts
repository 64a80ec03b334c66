/**
 * The owner's per-country caps (`GuardSettings.caps`): their names, their bounds, editing one country's entry, and
 * what a `country_cap` block says about the cap it reached. The rule that compares them with the consumer's
 * counts is in `signals.ts`; this is what the admin command, the console and the webhook event share.
 */
import { UNITS_PER_USD } from '../money';
import type { CountryCaps, GuardBlock } from './model';

/** Every cap a country may have, in the order they are shown. */
export const CAP_FIELDS = ['hourlySends', 'dailySends', 'hourlySpend', 'dailySpend'] as const;
export type CapField = (typeof CAP_FIELDS)[number];

/** The names a `country_cap` block's figures, the metric and the webhook event use. */
export const CAP_NAMES: Record<CapField, string> = {
  hourlySends: 'hourly_sends',
  dailySends: 'daily_sends',
  hourlySpend: 'hourly_spend',
  dailySpend: 'daily_spend',
};

/** The entry that applies to every country without its own. */
export const ANY_COUNTRY = '*';

/** Spend caps are in units of 0.0001 USD; send caps count sends. */
export const isSpendCap = (field: CapField): boolean => field === 'hourlySpend' || field === 'dailySpend';

/**
 * Bounds of one cap. At least 1: a cap of 0 would say "no country" in a roundabout way (the allow-list says it
 * plainly). At most what no real day reaches, so a typo of a few zeros is refused rather than meaning "no cap".
 */
const CAP_BOUNDS: Record<'sends' | 'spend', { min: number; max: number }> = {
  sends: { min: 1, max: 100_000_000 },
  spend: { min: 1, max: 10_000_000 * UNITS_PER_USD },
};

/** Why a cap value is not acceptable, or undefined when it is. */
export function capProblem(field: CapField, value: number): string | undefined {
  const { min, max } = CAP_BOUNDS[isSpendCap(field) ? 'spend' : 'sends'];
  if (!Number.isInteger(value) || value < min || value > max) {
    return isSpendCap(field)
      ? `${CAP_NAMES[field]} is an amount in USD from 0.0001 to ${max / UNITS_PER_USD}`
      : `${CAP_NAMES[field]} is a whole number of sends from ${min} to ${max}`;
  }
  return undefined;
}

/** Only the caps that are set (an entry with none is no entry). */
function cleanCaps(caps: CountryCaps): CountryCaps {
  const clean: CountryCaps = {};
  for (const field of CAP_FIELDS) if (caps[field] !== undefined) clean[field] = caps[field];
  return clean;
}

/**
 * The service's caps with `country`'s entry replaced by `entry` (none set: the entry removed). Undefined when no
 * country has a cap left, so the attribute can go.
 */
export function withCountryCaps(
  caps: Readonly<Record<string, CountryCaps>> | undefined,
  country: string,
  entry: CountryCaps | undefined,
): Record<string, CountryCaps> | undefined {
  const next: Record<string, CountryCaps> = { ...caps };
  const clean = entry && cleanCaps(entry);
  if (clean && Object.keys(clean).length > 0) next[country] = clean;
  else delete next[country];
  return Object.keys(next).length > 0 ? next : undefined;
}

/** `*` last, countries in order. */
export const capCountries = (caps: Readonly<Record<string, CountryCaps>> | undefined): string[] =>
  Object.keys(caps ?? {}).sort((a, b) =>
    a === ANY_COUNTRY ? 1 : b === ANY_COUNTRY ? -1 : a.localeCompare(b),
  );

/** What a `country_cap` block reached: which cap, its limit, and the count or spend that reached it. */
export interface CapReached {
  /** `hourly_sends`, `daily_sends`, `hourly_spend` or `daily_spend`. */
  cap: string;
  limit: number;
  value: number;
  spend: boolean;
}

/** The cap a `country_cap` block reached (its figures: the cap's name with the value, and `cap`). */
export function capReachedBy(block: Pick<GuardBlock, 'reason' | 'figures'>): CapReached | undefined {
  if (block.reason !== 'country_cap') return undefined;
  const name = Object.keys(block.figures).find((key) => key !== 'cap');
  if (!name || typeof block.figures.cap !== 'number') return undefined;
  return {
    cap: name,
    limit: block.figures.cap,
    value: block.figures[name]!,
    spend: name.endsWith('_spend'),
  };
}
