/**
 * The simulated day of the pumping-guard bench: legitimate users and four attacks, as a list of timed sends with
 * what the sender does after each (check the right code after a delay, retry, nothing). Deterministic from a
 * seed: every level replays the same day.
 *
 * Model (stated in docs/bench.md, "Pumping guard"):
 * - legitimate users: per country a daily volume on a diurnal curve, numbers drawn from the country's allocated
 *   ranges in use (25 ranges of 4 national digits, Zipf-weighted) and 1 % anywhere in its mobile ranges; a
 *   per-country share checks the right code 10 to 150 s after the send; of the others half retry after 30 to 90 s
 *   (a new send to the same number, which again converts at the country's rate) and half give up;
 * - a launch-day spike: BR at 5× from 13:00 to 16:00; a new country: KE from 09:00, ~400 users;
 * - (a) sequential: +63 9xx, numbers increasing by 1 to 2, one every 2 s from 03:00 for 60 minutes, no checks;
 * - (b) flood: random numbers across ID's mobile ranges at 10× ID's rate of that hour, 19:00 to 20:30, no checks;
 * - (c) drip: one range of NG (4 national digits) at NG's own rate (the country at 2× its baseline), 06:00 to
 *   14:00, 5 % of the codes checked right (fake conversions);
 * - (d) spread: 24 countries (8 the service serves, 16 it does not), random mobile numbers, 60 sends an hour in
 *   all, 14:00 to 22:00, no checks.
 * The guard starts from a baseline learnt on the previous day's legitimate traffic (same model, other seed).
 */
import { getExampleNumber, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';

export type AttackName = 'a' | 'b' | 'c' | 'd';

export interface PlannedSend {
  at: number;
  to: string;
  country: string;
  /** Undefined: legitimate. */
  attack?: AttackName;
  /** Check the right code this many ms after the send (undefined: never). */
  checkAfterMs?: number;
  /** When not checked: send again after this many ms (a retry), with these follow-ups. */
  retry?: { afterMs: number; checkAfterMs?: number };
}

export const HOUR = 3_600_000;
const MINUTE = 60_000;

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

/** Legitimate first sends per day and share of codes checked right. */
export const LEGIT_COUNTRIES: Record<string, { daily: number; conversion: number }> = {
  US: { daily: 3000, conversion: 0.9 },
  GB: { daily: 1500, conversion: 0.88 },
  DE: { daily: 1200, conversion: 0.9 },
  FR: { daily: 1100, conversion: 0.87 },
  ES: { daily: 800, conversion: 0.85 },
  IT: { daily: 800, conversion: 0.84 },
  NL: { daily: 500, conversion: 0.92 },
  IN: { daily: 2500, conversion: 0.7 },
  BR: { daily: 1500, conversion: 0.75 },
  MX: { daily: 900, conversion: 0.72 },
  AU: { daily: 500, conversion: 0.9 },
  CA: { daily: 600, conversion: 0.91 },
  ID: { daily: 1000, conversion: 0.65 },
  PH: { daily: 600, conversion: 0.68 },
  NG: { daily: 500, conversion: 0.6 },
  ZA: { daily: 350, conversion: 0.7 },
  TR: { daily: 500, conversion: 0.8 },
  PL: { daily: 400, conversion: 0.88 },
  SE: { daily: 250, conversion: 0.95 },
  AR: { daily: 350, conversion: 0.75 },
  CO: { daily: 300, conversion: 0.73 },
  EG: { daily: 300, conversion: 0.62 },
};
export const NEW_COUNTRY = { country: 'KE', from: 9 * HOUR, users: 400, conversion: 0.75 };
export const SPIKE = { country: 'BR', from: 13 * HOUR, to: 16 * HOUR, factor: 5 };
const SPREAD_SERVED = ['US', 'GB', 'IN', 'BR', 'MX', 'ID', 'TR', 'EG'];
const SPREAD_OTHERS = [
  'PK',
  'BD',
  'VN',
  'TH',
  'SA',
  'AE',
  'UA',
  'KZ',
  'UZ',
  'AZ',
  'GH',
  'TZ',
  'PE',
  'CL',
  'MA',
  'LK',
];

/** Share of a day's sends in each hour: low at night, a peak in the afternoon. */
const HOURLY = Array.from({ length: 24 }, (_, h) => 0.25 + Math.exp(-(((h - 14) / 5) ** 2)));
const HOURLY_SUM = HOURLY.reduce((a, b) => a + b, 0);
export const hourShare = (at: number) => HOURLY[Math.floor(at / HOUR) % 24]! / HOURLY_SUM;

/** Numbers of one country: its calling code, national length, and valid mobile numbers from digits. */
class NumberPlan {
  readonly callingCode: string;
  readonly length: number;
  readonly lead: string;
  constructor(readonly country: string) {
    const example = getExampleNumber(country as CountryCode, examples)!;
    this.callingCode = example.countryCallingCode;
    this.length = example.nationalNumber.length;
    this.lead = example.nationalNumber.slice(0, 1);
  }

  /** A valid mobile number `+<cc><national>` or undefined. */
  valid(national: string): string | undefined {
    const parsed = parsePhoneNumberFromString(`+${this.callingCode}${national}`);
    if (!parsed?.isValid() || parsed.country !== this.country) return undefined;
    const type = parsed.getType();
    return type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE' ? parsed.number : undefined;
  }

  /** A random valid mobile number whose national number starts with `prefix` (default: the mobile lead digit). */
  random(rand: () => number, prefix = this.lead): string {
    for (let i = 0; i < 200; i++) {
      let national = prefix;
      while (national.length < this.length) national += Math.floor(rand() * 10);
      const number = this.valid(national);
      if (number) return number;
    }
    throw new Error(`no valid number for ${this.country} under ${prefix}`);
  }
}

const plans = new Map<string, NumberPlan>();
export const planOf = (country: string): NumberPlan => {
  let plan = plans.get(country);
  if (!plan) plans.set(country, (plan = new NumberPlan(country)));
  return plan;
};

/** The country's ranges in use: 25 national 4-digit prefixes of valid mobiles, fixed per country. */
const rangesInUse = new Map<string, string[]>();
function rangesOf(country: string): string[] {
  let ranges = rangesInUse.get(country);
  if (!ranges) {
    const rand = mulberry32(hash(country));
    const plan = planOf(country);
    const found = new Set<string>();
    for (let i = 0; found.size < 25 && i < 2000; i++) {
      const number = plan.random(rand);
      found.add(number.slice(1 + plan.callingCode.length, 1 + plan.callingCode.length + 4));
    }
    ranges = [...found];
    rangesInUse.set(country, ranges);
  }
  return ranges;
}

function hash(text: string): number {
  let h = 2166136261;
  for (const char of text) h = Math.imul(h ^ char.charCodeAt(0), 16777619);
  return h >>> 0;
}

/** A legitimate user's number: 99 % in a range in use (Zipf), 1 % anywhere in the mobile ranges. */
function legitNumber(country: string, rand: () => number): string {
  const plan = planOf(country);
  if (rand() < 0.01) return plan.random(rand);
  const ranges = rangesOf(country);
  const weights = ranges.map((_, i) => 1 / (i + 1));
  let pick = rand() * weights.reduce((a, b) => a + b, 0);
  let index = 0;
  while (pick > weights[index]! && index < ranges.length - 1) pick -= weights[index++]!;
  try {
    return plan.random(rand, ranges[index]!);
  } catch {
    return plan.random(rand);
  }
}

const legitFollowUp = (
  rand: () => number,
  conversion: number,
): Omit<PlannedSend, 'at' | 'to' | 'country'> => {
  const checkDelay = () => 10_000 + rand() * 140_000;
  if (rand() < conversion) return { checkAfterMs: checkDelay() };
  if (rand() < 0.5) {
    return {
      retry: {
        afterMs: 30_000 + rand() * 60_000,
        ...(rand() < conversion && { checkAfterMs: checkDelay() }),
      },
    };
  }
  return {};
};

/** Legitimate sends over `[from, to)` of one day (ms from midnight), day volume `daily` and a rate factor. */
function legitimate(
  country: string,
  daily: number,
  conversion: number,
  rand: () => number,
  from = 0,
  to = 24 * HOUR,
  factor = (_at: number) => 1,
): PlannedSend[] {
  const sends: PlannedSend[] = [];
  for (let hour = Math.floor(from / HOUR); hour * HOUR < to; hour++) {
    const expected = daily * hourShare(hour * HOUR) * factor(hour * HOUR);
    const count = Math.floor(expected) + (rand() < expected % 1 ? 1 : 0);
    for (let i = 0; i < count; i++) {
      const at = Math.max(from, hour * HOUR + rand() * HOUR);
      if (at >= to) continue;
      sends.push({ at, to: legitNumber(country, rand), country, ...legitFollowUp(rand, conversion) });
    }
  }
  return sends;
}

export function legitimateDay(seed: number): PlannedSend[] {
  const rand = mulberry32(seed);
  const sends: PlannedSend[] = [];
  for (const [country, { daily, conversion }] of Object.entries(LEGIT_COUNTRIES)) {
    const spike = (at: number) =>
      country === SPIKE.country && at >= SPIKE.from && at < SPIKE.to ? SPIKE.factor : 1;
    sends.push(...legitimate(country, daily, conversion, rand, 0, 24 * HOUR, spike));
  }
  return sends;
}

export function newCountry(seed: number): PlannedSend[] {
  const rand = mulberry32(seed);
  const share = HOURLY.slice(NEW_COUNTRY.from / HOUR).reduce((a, b) => a + b, 0) / HOURLY_SUM;
  return legitimate(
    NEW_COUNTRY.country,
    NEW_COUNTRY.users / share,
    NEW_COUNTRY.conversion,
    rand,
    NEW_COUNTRY.from,
  );
}

export function attacks(seed: number): PlannedSend[] {
  const rand = mulberry32(seed);
  const sends: PlannedSend[] = [];
  // (a) sequential numbers in one range, one every 2 s for an hour.
  const ph = planOf('PH');
  let national = Number(ph.random(rand, '917').slice(3));
  for (let at = 3 * HOUR; at < 4 * HOUR; at += 2000) {
    national += 1 + Math.floor(rand() * 2);
    const number = ph.valid(String(national));
    if (number) sends.push({ at, to: number, country: 'PH', attack: 'a' });
  }
  // (b) random numbers across ID's mobile ranges at 10× ID's rate.
  const id = planOf('ID');
  for (let at = 19 * HOUR; at < 20.5 * HOUR;) {
    const rate = 10 * LEGIT_COUNTRIES.ID!.daily * hourShare(at); // per hour
    at += (-Math.log(1 - rand()) * HOUR) / rate;
    if (at < 20.5 * HOUR) sends.push({ at, to: id.random(rand), country: 'ID', attack: 'b' });
  }
  // (c) a drip into one NG range at NG's own rate, 5 % of codes checked.
  const ng = planOf('NG');
  const used = new Set(rangesOf('NG'));
  let dripRange = '';
  do dripRange = ng.random(rand).slice(4, 8);
  while (used.has(dripRange));
  for (let at = 6 * HOUR; at < 14 * HOUR;) {
    const rate = LEGIT_COUNTRIES.NG!.daily * hourShare(at);
    at += (-Math.log(1 - rand()) * HOUR) / rate;
    if (at >= 14 * HOUR) break;
    sends.push({
      at,
      to: ng.random(rand, dripRange),
      country: 'NG',
      attack: 'c',
      ...(rand() < 0.05 && { checkAfterMs: 20_000 + rand() * 60_000 }),
    });
  }
  // (d) thin over 24 countries, 60 an hour in all.
  const spread = [...SPREAD_SERVED, ...SPREAD_OTHERS];
  for (let at = 14 * HOUR; at < 22 * HOUR;) {
    at += -Math.log(1 - rand()) * MINUTE;
    if (at >= 22 * HOUR) break;
    const country = spread[Math.floor(rand() * spread.length)]!;
    sends.push({ at, to: planOf(country).random(rand), country, attack: 'd' });
  }
  return sends;
}
