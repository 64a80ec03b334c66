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
