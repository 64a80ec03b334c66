/**
 * Where a number lies, as the guard sees it: the country, the national significant number, and prefixes of it at
 * a few widths. A prefix is written as the E.164 text it starts with (`+447400`), so a safe-list entry, a block
 * and a number compare with `startsWith`.
 */
import { getCountries, getCountryCallingCode, type CountryCode } from 'libphonenumber-js/max';

/** Digits of the national number in the range prefixes the signals are kept for. */
export const RANGE_WIDTH = 4;
/** A run of near-sequential numbers is looked for among numbers sharing all but these last digits. */
const RUN_SUFFIX_DIGITS = 3;

export interface NumberPlace {
  e164: string;
  country: string;
  /** `+` and the country calling code, e.g. `+44`. */
  countryPrefix: string;
  /** The national significant number, e.g. `7400123456`. */
  national: string;
  /** Country prefix and the first RANGE_WIDTH national digits, e.g. `+447400`. */
  range: string;
  /** All but the last RUN_SUFFIX_DIGITS digits, e.g. `+447400123`. */
  runPrefix: string;
  /** The last RUN_SUFFIX_DIGITS digits as a number (0..999). */
  runSuffix: number;
}

/** `+` and the country's calling code (`+44` for GB); undefined for a code libphonenumber does not know. */
export function countryPrefixOf(country: string): string | undefined {
  try {
    return `+${getCountryCallingCode(country as CountryCode)}`;
  } catch {
    return undefined;
  }
}

/**
 * The countries a prefix covers whole: those whose calling code starts with its digits (`+1`: US, CA and the rest
 * of the NANP; `+4`: GB, DE, …; `+447` or `+1415`: none).
 */
export function countriesCoveredBy(prefix: string): string[] {
  const digits = prefix.slice(1);
  return getCountries().filter((country) => getCountryCallingCode(country).startsWith(digits));
}

export function placeOf(e164: string, country: string): NumberPlace {
  const countryPrefix = countryPrefixOf(country) ?? e164.slice(0, 2);
  const national = e164.startsWith(countryPrefix) ? e164.slice(countryPrefix.length) : e164.slice(1);
  const cut = Math.max(0, national.length - RUN_SUFFIX_DIGITS);
  return {
    e164,
    country,
    countryPrefix,
    national,
    range: countryPrefix + national.slice(0, RANGE_WIDTH),
    runPrefix: countryPrefix + national.slice(0, cut),
    runSuffix: Number(national.slice(cut) || '0'),
  };
}
