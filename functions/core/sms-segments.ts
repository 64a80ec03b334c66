/**
 * How many SMS parts a text takes, as carriers bill it: GSM-7 when every character is in the GSM 03.38 alphabet
 * (its extension characters take two septets), else UCS-2 (UTF-16 code units). One part holds 160 septets or 70
 * units; a longer text is split into parts of 153 septets or 67 units, the rest going to the concatenation header,
 * and a two-septet character or a surrogate pair is never split across two parts. The console's page bundles this
 * module to show a template's size as it is typed: it imports no Node built-in.
 */
import { renderMessage } from './message';

const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿' +
  'abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENSION = '\f^{}\\[~]|€';
const BASIC = new Set(GSM_BASIC);
const EXTENSION = new Set(GSM_EXTENSION);

type SmsEncoding = 'GSM-7' | 'UCS-2';

export interface SmsSize {
  encoding: SmsEncoding;
  /** Septets (GSM-7) or UTF-16 code units (UCS-2). */
  units: number;
  segments: number;
}

const LIMITS = {
  'GSM-7': { single: 160, part: 153 },
  'UCS-2': { single: 70, part: 67 },
} as const;

/** The longest code a send can carry: a caller's own code of up to 10 characters. */
export const LONGEST_CODE = '0'.repeat(10);

/** Each character's size in the text's encoding, in order. */
function widths(text: string): { encoding: SmsEncoding; sizes: number[] } {
  const characters = [...text];
  if (characters.every((c) => BASIC.has(c) || EXTENSION.has(c)))
    return { encoding: 'GSM-7', sizes: characters.map((c) => (EXTENSION.has(c) ? 2 : 1)) };
  return { encoding: 'UCS-2', sizes: characters.map((c) => c.length) };
}

export function smsSize(text: string): SmsSize {
  const { encoding, sizes } = widths(text);
  const units = sizes.reduce((total, size) => total + size, 0);
  const limit = LIMITS[encoding];
  if (units <= limit.single) return { encoding, units, segments: units === 0 ? 0 : 1 };
  let segments = 1;
  let used = 0;
  for (const size of sizes) {
    if (used + size > limit.part) {
      segments++;
      used = 0;
    }
    used += size;
  }
  return { encoding, units, segments };
}

/** The size of a template's SMS with the longest code a send can put in it. */
export const templateSmsSize = (template: string): SmsSize => smsSize(renderMessage(template, LONGEST_CODE));
