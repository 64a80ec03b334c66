import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max';

export type { NumberType };

export interface PhoneNumber {
  /** Normalised E.164, the verification's `to`. */
  e164: string;
  /** ISO 3166-1 alpha-2 country of the number. */
  country: string;
  /** Number type from the full metadata; routing depends on it (a landline gets no WhatsApp). */
  type: NumberType;
}

/**
 * What typed or pasted text carries that libphonenumber does not read as the separators they are: spaces other
 * than the plain and no-break ones (a tab, the thin and narrow no-break spaces of formatted text) become plain
 * spaces, and invisible format characters (the bidirectional marks a copy from a right-to-left page adds,
 * zero-width spaces, a byte order mark) go. A full-width plus, as an IME types it, is the plus.
 */
const untangle = (raw: string): string =>
  raw
    .replace(/\p{Cf}/gu, '')
    .replace(/\s/gu, ' ')
    .replace(/^( *)\uff0b/, '$1+');

/**
 * Parses an international number. It must start with `+`; what a user may have typed or pasted around the digits
 * (spaces of any kind, dashes, dots, slashes, brackets, invisible marks, digits and a plus of another script such
 * as full-width ones) is normalised away, which is why `to` can differ from `To`. An extension is refused rather
 * than dropped: a code cannot reach one, and the number without it may be someone else's.
 */
export function parsePhone(raw: string): PhoneNumber | undefined {
  const text = untangle(raw).trim();
  if (!text.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(text);
  if (!parsed || parsed.ext !== undefined || !parsed.isValid() || !parsed.country) return undefined;
  return { e164: parsed.number, country: parsed.country, type: parsed.getType() };
}

/**
 * Why `raw` is not a number `parsePhone` takes, in words for the caller. The commonest slip gets its own words:
 * a `+` sent unencoded in a form body (`To=+4474…`) arrives as a space.
 */
export function phoneProblem(raw: string): string {
  const text = untangle(raw).trim();
  if (/^\s+\d/.test(raw))
    return 'To must start with +: a + sent unencoded in a form body arrives as a space; send it as %2B.';
  if (!text.startsWith('+')) return 'To must start with + and the country code (E.164).';
  // Not the extension's digits: libphonenumber reads `+44 7450 123460#` as +447450 extension 123460, and naming
  // those would send the caller looking for an extension they never typed.
  if (parsePhoneNumberFromString(text)?.ext !== undefined)
    return 'To has an extension mark (x, ext, ;ext= or #): send the number alone.';
  return 'To is not a valid phone number.';
}
