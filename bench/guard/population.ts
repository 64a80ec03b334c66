/**
 * The numbering of a country as the bench's users and attackers see it: every 4-digit national range ("range",
 * the guard's unit: calling code + first 4 national digits) that holds valid mobile numbers, found from
 * libphonenumber's own metadata, with a fixed heavy-tailed (Zipf-like) weight per range. The population (which
 * ranges exist, their weights) is a property of the country, the same in every run and process, like the real
 * world; each seed draws different users from it.
 *
 * Validity is decided as libphonenumber-js decides it (`getNumberType`: the national pattern, then fixed line,
 * then mobile, with their possible lengths) on precompiled patterns: a full parse costs about 100 µs, too much
 * for every number of a matrix of runs. Countries whose calling code is shared (+1, +44, +7 ...) are confirmed
 * with the full parse, since the country is told apart there by more than the pattern. Every range kept holds a
 * number confirmed by the full parse, so a draw never fails: when random digits do not make a valid number, the
 * range's known number is used.
 */
import { getExampleNumber, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import * as core from 'libphonenumber-js/core';
import examples from 'libphonenumber-js/mobile/examples';
import metadata from 'libphonenumber-js/metadata.max.json';

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hash(text: string): number {
  let h = 2166136261;
  for (const char of text) h = Math.imul(h ^ char.charCodeAt(0), 16777619);
  return h >>> 0;
}

/** Zipf–Mandelbrot weight of the range at `rank` (0 = most used): 1 / (rank + Q)^S. */
const ZIPF = { S: 1.1, Q: 10 };
/** Random completions tried per prefix while enumerating (1, 2, 3 and 4 digits). */
const TRIES = [400, 120, 50, 24];

interface TypeDef {
  pattern(): string;
  possibleLengths(): number[] | undefined;
}
interface NumberingPlan {
  callingCode(): string;
  nationalNumberPattern(): string;
  possibleLengths(): number[];
  type(type: string): TypeDef | undefined;
}
type MetadataClass = new (json: unknown) => {
  selectNumberingPlan(country: string): void;
  numberingPlan: NumberingPlan;
};
const Metadata = (core as unknown as { Metadata: MetadataClass }).Metadata;
const sharedCodes = (metadata as unknown as { country_calling_codes: Record<string, string[]> })
  .country_calling_codes;

const entire = (pattern: string) => new RegExp(`^(?:${pattern})$`);

/** One range of a population: 4 national digits, a number known valid in it, and its national lengths. */
export interface Range {
  prefix: string;
  example: string;
  lengths: number[];
}

export class CountryNumbers {
  readonly callingCode: string;
  /** All ranges with valid mobile numbers, in rank order (most used first). */
  readonly ranges: Range[];
  /** Cumulative Zipf weights over `ranges`, normalised to end at 1. */
  private readonly cumulative: number[];
  private readonly national: RegExp;
  private readonly fixed?: { re: RegExp; lengths?: number[] };
  private readonly mobile?: { re: RegExp; lengths?: number[] };
  /** Mobile numbers are the fixed-line pattern (libphonenumber's FIXED_LINE_OR_MOBILE, e.g. US). */
  private readonly mobileIsFixed: boolean;
  private readonly mobileLengths: number[];
  private readonly shared: boolean;
  private readonly fallback: string;

  constructor(readonly country: string) {
    const meta = new Metadata(metadata);
    meta.selectNumberingPlan(country);
    const plan = meta.numberingPlan;
    this.callingCode = plan.callingCode();
    this.national = entire(plan.nationalNumberPattern());
    const typeOf = (name: string) => {
      const type = plan.type(name);
      if (!type || !type.pattern()) return undefined;
      return { re: entire(type.pattern()), lengths: type.possibleLengths() };
    };
    this.fixed = typeOf('FIXED_LINE');
    this.mobile = typeOf('MOBILE');
    this.mobileIsFixed = this.mobile === undefined;
    this.mobileLengths =
      (this.mobileIsFixed ? this.fixed?.lengths : this.mobile?.lengths) ?? plan.possibleLengths();
    this.shared = (sharedCodes[this.callingCode]?.length ?? 1) > 1;
    this.fallback = getExampleNumber(country as CountryCode, examples)?.number ?? '';
    this.ranges = this.enumerate();
    const rank = this.ranges.map((_, i) => 1 / (i + ZIPF.Q) ** ZIPF.S);
    const total = rank.reduce((a, b) => a + b, 0);
    let sum = 0;
    this.cumulative = rank.map((w) => (sum += w / total));
  }

  /** `+<cc><national>` when it is a valid mobile number of this country, else undefined. */
  valid(national: string): string | undefined {
    if (!this.fastMobile(national)) return undefined;
    const e164 = `+${this.callingCode}${national}`;
    return !this.shared || fullCheck(e164, this.country) ? e164 : undefined;
  }

  private fastMobile(national: string): boolean {
    if (!this.national.test(national)) return false;
    const matches = (type: { re: RegExp; lengths?: number[] } | undefined) =>
      !!type && (!type.lengths || type.lengths.includes(national.length)) && type.re.test(national);
    if (matches(this.fixed)) return this.mobileIsFixed || matches(this.mobile);
    return matches(this.mobile);
  }

  /** Every 4-digit prefix with valid mobiles, found digit by digit from random completions; ranked at random. */
  private enumerate(): Range[] {
    const rand = mulberry32(hash(`population:${this.country}`));
    const found: Range[] = [];
    const complete = (prefix: string): string => {
      const length = this.mobileLengths[Math.floor(rand() * this.mobileLengths.length)]!;
      let national = prefix;
      while (national.length < length) national += Math.floor(rand() * 10);
      return national;
    };
    const walk = (prefix: string) => {
      const depth = prefix.length;
      const hits: string[] = [];
      for (let i = 0; i < TRIES[depth - 1]! && hits.length < 3; i++) {
        const national = complete(prefix);
        if (this.fastMobile(national)) hits.push(national);
      }
      if (hits.length === 0) return;
      if (depth < 4) {
        for (let d = 0; d < 10; d++) walk(prefix + d);
        return;
      }
      const confirmed = hits.find((national) => fullCheck(`+${this.callingCode}${national}`, this.country));
      if (!confirmed) return;
      const lengths = [...new Set(hits.map((n) => n.length))];
      found.push({ prefix, example: `+${this.callingCode}${confirmed}`, lengths });
    };
    for (let d = 0; d < 10; d++) walk(String(d));
    // A fixed random rank per country: the weights do not follow the numbering order.
    for (let i = found.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [found[i], found[j]] = [found[j]!, found[i]!];
    }
    return found;
  }

  /** A random valid mobile number in `range` (its known number when random digits keep failing). */
  inRange(rand: () => number, range: Range): string {
    for (let i = 0; i < 12; i++) {
      const length = range.lengths[Math.floor(rand() * range.lengths.length)]!;
      let national = range.prefix;
      while (national.length < length) national += Math.floor(rand() * 10);
      const number = this.valid(national);
      if (number) return number;
    }
    return range.example;
  }

  /** A user's number: a range drawn by its Zipf weight, then random digits. */
  user(rand: () => number): string {
    if (this.ranges.length === 0) return this.fallback;
    return this.inRange(rand, this.ranges[this.weightedIndex(rand())]!);
  }

  /** An attacker's random number: any range alike (uniform over the country's mobile ranges). */
  anywhere(rand: () => number): string {
    if (this.ranges.length === 0) return this.fallback;
    return this.inRange(rand, this.ranges[Math.floor(rand() * this.ranges.length)]!);
  }

  weightedIndex(u: number): number {
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cumulative[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The national number of an E.164 number of this country. */
  nationalOf(e164: string): string {
    return e164.slice(1 + this.callingCode.length);
  }
}

function fullCheck(e164: string, country: string): boolean {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed?.isValid() || parsed.country !== country) return false;
  const type = parsed.getType();
  return type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE';
}

const cache = new Map<string, CountryNumbers>();
export function numbersOf(country: string): CountryNumbers {
  let numbers = cache.get(country);
  if (!numbers) cache.set(country, (numbers = new CountryNumbers(country)));
  return numbers;
}
