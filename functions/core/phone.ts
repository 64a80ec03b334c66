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
 * Parses an international number. It must start with `+`; spacing and punctuation a user may have typed
 * are tolerated and normalised away, which is why `to` can differ from `To`.
 */
export function parsePhone(raw: string): PhoneNumber | undefined {
  const text = raw.trim();
  if (!text.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(text);
  if (!parsed || !parsed.isValid() || !parsed.country) return undefined;
  return { e164: parsed.number, country: parsed.country, type: parsed.getType() };
}

/**
 * Why `raw` is not a number `parsePhone` takes, in words for the caller. The commonest slip gets its own words:
 * a `+` sent unencoded in a form body (`To=+4474…`) arrives as a space.
 */
export function phoneProblem(raw: string): string {
  const text = raw.trim();
  if (/^\s+\d/.test(raw))
    return 'To must start with +: a + sent unencoded in a form body arrives as a space; send it as %2B.';
  if (!text.startsWith('+')) return 'To must start with + and the country code (E.164).';
  return 'To is not a valid phone number.';
}
