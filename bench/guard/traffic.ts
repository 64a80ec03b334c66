/**
 * The traffic model of the pumping-guard bench: legitimate users and attackers as timed sends, each with what
 * its sender does next (check the code, a wrong code first, retry). Deterministic from a seed; times are ms from
 * the measured day's midnight (negative: the days before, the warm-up).
 *
 * Legitimate users (docs/bench.md, "Pumping guard"): per country a daily volume on a diurnal curve; numbers from
 * the country's population of ranges (bench/guard/population.ts); the country's share of users check the right
 * code 10 to 150 s after the send; of the others half retry after 30 to 90 s (converting again at the country's
 * rate); a user refused with `blocked_by_policy` tries once more 45 s later.
 */
import { mulberry32, numbersOf } from './population';

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export { mulberry32 };

/**
 * Seeds for tuning the guard (any run on them may shape a rule), and the held-out seeds the bench reports by
 * default (never tuned on). `--train` runs all twenty; `--seeds` picks a few.
 */
export const TRAINING_SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
export const HELD_OUT_SEEDS = [101, 102, 103, 104, 105, 106, 107, 108, 109, 110];
/** The warm-up (the service's history) is drawn from another seed than the measured period. */
export const WARM_SEED_OFFSET = 10_000;
/** Days of the service's own traffic a warm service folds before the measured window (its history). */
export const WARM_DAYS = 2;

export interface Check {
  /** After the send was accepted. */
  afterMs: number;
  /** A wrong code (the next digit string), as a user who mistypes. */
  wrong?: boolean;
}

type Group = 'legit' | 'focus' | 'attack';

export interface PlannedSend {
  at: number;
  to: string;
  country: string;
  /** `legit`: the service's usual users; `focus`: the legitimate users the scenario is about; `attack`. */
  group: Group;
  /** A sub-population reported apart (attack (d): `inside` / `outside` the allow-list). */
  tag?: string;
  /** Checks made after this send is accepted. */
  checks?: Check[];
  /** A second send to the same number (a user whose code did not come), with its own checks. */
  retry?: { afterMs: number; checks?: Check[] };
  /**
   * A returning user: its number checked a code of the service at this time, in the history (stored before the
   * run as the service stores a send and its check).
   */
  verifiedAt?: number;
  /** A person refused with `blocked_by_policy` tries once more 45 s later (an attacker's script does not). */
  retryOnBlock?: boolean;
  /**
   * When each accepted send's delivery receipt comes (its retry's too); absent: `RECEIPT_MS` after it, for real
   * and pumped numbers alike (a pumping carrier delivers: it is paid by the message).
   */
  receiptAfterMs?: number;
  /** Sent with the caller's own code (`Code`), which the caller checks itself: no check reaches the service. */
  callerCode?: boolean;
}

/** A receipt's usual delay after the send. */
export const RECEIPT_MS = 3_000;

/** Legitimate first sends per day, share of codes checked right, UTC offset (hours) for local-time curves. */
export const COUNTRIES: Record<string, { daily: number; conversion: number; utc: number }> = {
  US: { daily: 3000, conversion: 0.9, utc: -5 },
  GB: { daily: 1500, conversion: 0.88, utc: 0 },
  DE: { daily: 1200, conversion: 0.9, utc: 1 },
  FR: { daily: 1100, conversion: 0.87, utc: 1 },
  ES: { daily: 800, conversion: 0.85, utc: 1 },
  IT: { daily: 800, conversion: 0.84, utc: 1 },
  NL: { daily: 500, conversion: 0.92, utc: 1 },
  IN: { daily: 2500, conversion: 0.7, utc: 5.5 },
  BR: { daily: 1500, conversion: 0.75, utc: -3 },
  MX: { daily: 900, conversion: 0.72, utc: -6 },
  AU: { daily: 500, conversion: 0.9, utc: 10 },
  CA: { daily: 600, conversion: 0.91, utc: -5 },
  ID: { daily: 1000, conversion: 0.65, utc: 7 },
  PH: { daily: 600, conversion: 0.68, utc: 8 },
  NG: { daily: 500, conversion: 0.6, utc: 1 },
  ZA: { daily: 350, conversion: 0.7, utc: 2 },
  TR: { daily: 500, conversion: 0.8, utc: 3 },
  PL: { daily: 400, conversion: 0.88, utc: 1 },
  SE: { daily: 250, conversion: 0.95, utc: 1 },
  AR: { daily: 350, conversion: 0.75, utc: -3 },
  CO: { daily: 300, conversion: 0.73, utc: -5 },
  EG: { daily: 300, conversion: 0.62, utc: 2 },
};

/** How a service's legitimate traffic is shaped: which countries, what volume, which daily curve. */
export interface LegitModel {
  name: string;
  countries: Record<string, { daily: number; conversion: number; utc: number }>;
  /** `utc`: one curve for all (an audience in one region's day); `local`: each country on its own clock. */
  curve: 'utc' | 'local';
}

export const BASE_MODEL: LegitModel = { name: 'base', countries: COUNTRIES, curve: 'utc' };
/** A US/IN-only service at 4x the base volume of US and 4x that of IN, over their thousands of ranges. */
export const RANGE_SPREAD_MODEL: LegitModel = {
  name: 'range_spread',
  countries: { US: { ...COUNTRIES.US!, daily: 12_000 }, IN: { ...COUNTRIES.IN!, daily: 10_000 } },
  curve: 'utc',
};
/** The base countries, each on its local-time curve (sharper: quiet nights, morning ramp). */
export const DAILY_CURVES_MODEL: LegitModel = { name: 'daily_curves', countries: COUNTRIES, curve: 'local' };

/** Share of a day's sends in each UTC hour: low at night, a peak in the afternoon. */
const HOURLY = Array.from({ length: 24 }, (_, h) => 0.25 + Math.exp(-(((h - 14) / 5) ** 2)));
/** Local-time curve: near silent 01:00 to 06:00, ramp from 07:00, peaks at 12:00 and 20:00. */
const LOCAL = Array.from(
  { length: 24 },
  (_, h) => 0.05 + Math.exp(-(((h - 12) / 3) ** 2)) + 0.8 * Math.exp(-(((h - 20) / 2) ** 2)),
);
const normalise = (curve: number[]) => {
  const sum = curve.reduce((a, b) => a + b, 0);
  return curve.map((v) => v / sum);
};
const HOURLY_SHARE = normalise(HOURLY);
const LOCAL_SHARE = normalise(LOCAL);
const hourOfDay = (at: number) => (((Math.floor(at / HOUR) % 24) + 24) % 24) as number;

/** The share of `country`'s daily volume in the hour holding `at`. */
export function hourShare(model: LegitModel, country: string, at: number): number {
  if (model.curve === 'utc') return HOURLY_SHARE[hourOfDay(at)]!;
  const offset = Math.round(model.countries[country]?.utc ?? 0);
  return LOCAL_SHARE[hourOfDay(at + offset * HOUR)]!;
}

const checkDelay = (rand: () => number) => 10_000 + rand() * 140_000;

/** A legitimate user's follow-ups: converts at `conversion`; else half retry after 30-90 s. */
function legitFollowUp(
  rand: () => number,
  conversion: number,
): Pick<PlannedSend, 'checks' | 'retry' | 'retryOnBlock'> {
  if (rand() < conversion) return { checks: [{ afterMs: checkDelay(rand) }], retryOnBlock: true };
  if (rand() < 0.5) {
    const converts = rand() < conversion;
    return {
      retry: {
        afterMs: 30_000 + rand() * 60_000,
        ...(converts && { checks: [{ afterMs: checkDelay(rand) }] }),
      },
      retryOnBlock: true,
    };
  }
  return { retryOnBlock: true };
}

/** Arrivals over [from, to) at an hourly rate (per hour), a Poisson process hour by hour. */
function arrivals(rand: () => number, from: number, to: number, rate: (at: number) => number): number[] {
  const times: number[] = [];
  for (let hour = Math.floor(from / HOUR); hour * HOUR < to; hour++) {
    const start = Math.max(from, hour * HOUR);
    const end = Math.min(to, (hour + 1) * HOUR);
    const expected = (rate(hour * HOUR) * (end - start)) / HOUR;
    // Poisson count (Knuth for small means, normal approximation above).
    let count: number;
    if (expected < 30) {
      const limit = Math.exp(-expected);
      let p = rand();
      count = 0;
      while (p > limit) {
        p *= rand();
        count++;
      }
    } else {
      const u = Math.max(1e-12, rand());
      const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
      count = Math.max(0, Math.round(expected + Math.sqrt(expected) * normal));
    }
    for (let i = 0; i < count; i++) times.push(start + rand() * (end - start));
  }
  return times.sort((a, b) => a - b);
}

/** The service's legitimate traffic over [from, to), drawn from `seed`. */
export function legitimate(model: LegitModel, seed: number, from: number, to: number): PlannedSend[] {
  const sends: PlannedSend[] = [];
  for (const [country, { daily, conversion }] of Object.entries(model.countries)) {
    const rand = mulberry32(seed * 7919 + hashCountry(country));
    const numbers = numbersOf(country);
    for (const at of arrivals(rand, from, to, (t) => daily * hourShare(model, country, t)))
      sends.push({ at, to: numbers.user(rand), country, group: 'legit', ...legitFollowUp(rand, conversion) });
  }
  return sends.sort((a, b) => a.at - b.at);
}

const hashCountry = (country: string) => country.charCodeAt(0) * 31 + country.charCodeAt(1);

// --- Legitimate scenario traffic ---------------------------------------------------------------------------

/** A country the service never sent to, opening at `from`: `users` people over [from, to), 75 % convert. */
export function newCountryUsers(seed: number, country: string, from: number, to: number, users: number) {
  const rand = mulberry32(seed * 31 + 11);
  const numbers = numbersOf(country);
  return arrivals(rand, from, to, () => (users * HOUR) / (to - from)).map((at): PlannedSend => ({
    at,
    to: numbers.user(rand),
    country,
    group: 'focus',
    ...legitFollowUp(rand, 0.75),
  }));
}

/**
 * A push campaign: the country's own users (drawn as its real users are, over its ranges by weight) at `rate` sends
 * an hour over [from, to), on top of its usual traffic; they check their codes as the country's users do.
 */
export function campaignUsers(seed: number, country: string, from: number, to: number, rate: number) {
  const rand = mulberry32(seed * 31 + 13);
  const numbers = numbersOf(country);
  const { conversion } = COUNTRIES[country]!;
  return arrivals(rand, from, to, () => rate).map((at): PlannedSend => ({
    at,
    to: numbers.user(rand),
    country,
    group: 'focus',
    ...legitFollowUp(rand, conversion),
  }));
}

/**
 * A company onboards `count` employees whose numbers are one sequential block (NXX-0100 upwards in one of the
 * country's ranges), at random times over [from, to); every one checks the code.
 */
export function corporateOnboarding(seed: number, country: string, from: number, to: number, count: number) {
  const rand = mulberry32(seed * 31 + 12);
  const numbers = numbersOf(country);
  // A range of the country's middle ranks (a company's city), a block starting at ...0100.
  const range = numbers.ranges[20 + Math.floor(rand() * Math.min(200, numbers.ranges.length - 20))]!;
  const base = numbers.nationalOf(range.example).slice(0, -4);
  const block: string[] = [];
  for (let n = 100; block.length < count && n < 10_000; n++) {
    const number = numbers.valid(base + String(n).padStart(4, '0'));
    if (number) block.push(number);
  }
  for (let i = block.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [block[i], block[j]] = [block[j]!, block[i]!];
  }
  return block.map((number): PlannedSend => ({
    at: from + rand() * (to - from),
    to: number,
    country,
    group: 'focus',
    checks: [{ afterMs: checkDelay(rand) }],
    retryOnBlock: true,
  }));
}

/**
 * A carrier outage in `country` over [from, to): messages arrive 30 minutes late. A user checks the code when it
 * arrives (expired by then: codes live 5 minutes); 60 % send again after 30 to 90 s meanwhile. Replaces the
 * country's legitimate sends in the window (they become `focus`).
 */
export function carrierOutage(sends: PlannedSend[], seed: number, country: string, from: number, to: number) {
  const rand = mulberry32(seed * 31 + 13);
  const conversion = COUNTRIES[country]?.conversion ?? 0.8;
  return sends.map((send): PlannedSend => {
    if (send.country !== country || send.at < from || send.at >= to) return send;
    const late = 30 * MINUTE + checkDelay(rand);
    const converts = rand() < conversion;
    const retries = rand() < 0.6;
    return {
      ...send,
      group: 'focus',
      // The first code is not there yet: no prompt check; the retry's code comes as late.
      checks: !retries && converts ? [{ afterMs: late }] : [],
      retry: retries
        ? { afterMs: 30_000 + rand() * 60_000, ...(converts && { checks: [{ afterMs: late }] }) }
        : undefined,
      retryOnBlock: true,
      // The receipt comes when the code does.
      receiptAfterMs: late,
    };
  });
}

/**
 * Users slower than the guard assumes (it has every code that will be checked typed by 3 minutes): each check of
 * the window comes after a delay drawn afresh, log-normal with a median of `medianMs` and a spread of `sigma`
 * (at 60 s and 1.0, one in seven after 3 minutes, one in a hundred after 10): response times' own shape, not
 * the uniform one the other scenarios draw.
 */
export function slowTypists(
  sends: PlannedSend[],
  seed: number,
  from: number,
  to: number,
  medianMs: number,
  sigma: number,
) {
  const rand = mulberry32(seed * 31 + 16);
  const delay = () => {
    const z = Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
    return Math.max(5_000, medianMs * Math.exp(sigma * z));
  };
  const slower = (checks: Check[] | undefined) => checks?.map((check) => ({ ...check, afterMs: delay() }));
  return sends.map((send): PlannedSend => {
    if (send.at < from || send.at >= to || !(send.checks?.length || send.retry?.checks?.length)) return send;
    return {
      ...send,
      group: 'focus',
      ...(send.checks && { checks: slower(send.checks) }),
      ...(send.retry && {
        retry: { ...send.retry, ...(send.retry.checks && { checks: slower(send.retry.checks) }) },
      }),
    };
  });
}

/**
 * A backend that makes its own codes and checks them itself (the send's `Code`): every send carries one, and
 * the users' checks happen out of the service's sight.
 */
export const withCallerCodes = (sends: PlannedSend[]): PlannedSend[] =>
  sends.map(({ checks: _checks, retry, ...send }) => ({
    ...send,
    callerCode: true,
    ...(retry && { retry: { afterMs: retry.afterMs } }),
  }));

/**
 * People who sign in again: `share` of `country`'s legitimate sends go to numbers whose codes were checked in
 * `history` (the warm-up's sends), drawn at random from them; they become `focus`, with the time of that send.
 * The others stay as drawn.
 */
export function returningUsers(
  sends: PlannedSend[],
  history: PlannedSend[],
  seed: number,
  country: string,
  share: number,
): PlannedSend[] {
  const rand = mulberry32(seed * 31 + 15);
  const right = (checks: Check[] | undefined) => checks?.some((check) => !check.wrong) ?? false;
  // Each number's latest checked send (a retry's, when that was the one checked).
  const verified = new Map<string, number>();
  for (const send of history) {
    if (send.country !== country) continue;
    const at = right(send.retry?.checks)
      ? send.at + send.retry!.afterMs
      : right(send.checks)
        ? send.at
        : undefined;
    if (at !== undefined && at > (verified.get(send.to) ?? -Infinity)) verified.set(send.to, at);
  }
  const known = [...verified];
  return sends.map((send): PlannedSend => {
    if (send.group !== 'legit' || send.country !== country || rand() >= share) return send;
    const [to, verifiedAt] = known[Math.floor(rand() * known.length)]!;
    return { ...send, to, verifiedAt, group: 'focus' };
  });
}

/** `share` of the converting users over [from, to) type a wrong code first, then the right one 5 to 20 s later. */
export function mistypes(sends: PlannedSend[], seed: number, share: number, from: number, to: number) {
  const rand = mulberry32(seed * 31 + 14);
  return sends.map((send): PlannedSend => {
    const first = send.checks?.[0];
    if (!first || send.at < from || send.at >= to || rand() >= share) return send;
    return {
      ...send,
      group: 'focus',
      checks: [{ afterMs: first.afterMs, wrong: true }, { afterMs: first.afterMs + 5_000 + rand() * 15_000 }],
    };
  });
}

// --- Attacks -----------------------------------------------------------------------------------------------

const attack = (at: number, to: string, country: string, extra: Partial<PlannedSend> = {}): PlannedSend => ({
  at,
  to,
  country,
  group: 'attack',
  ...extra,
});

/** (a) Sequential numbers in one range: +1 or +2 each, one every `everyMs`, no checks. */
export function sequentialAttack(seed: number, country: string, from: number, to: number, everyMs: number) {
  const rand = mulberry32(seed * 31 + 21);
  const numbers = numbersOf(country);
  const range = numbers.ranges[Math.floor(rand() * numbers.ranges.length)]!;
  let national = Number(numbers.nationalOf(numbers.inRange(rand, range)));
  const sends: PlannedSend[] = [];
  for (let at = from; at < to; at += everyMs) {
    national += 1 + Math.floor(rand() * 2);
    const number = numbers.valid(String(national));
    if (number) sends.push(attack(at, number, country));
  }
  return sends;
}

/** (b) Random valid numbers anywhere in the country's mobile ranges at `rate` an hour, no checks. */
export function floodAttack(
  seed: number,
  country: string,
  from: number,
  to: number,
  rate: (at: number) => number,
) {
  const rand = mulberry32(seed * 31 + 22);
  const numbers = numbersOf(country);
  return arrivals(rand, from, to, rate).map((at) => attack(at, numbers.anywhere(rand), country));
}

/** (c) A drip into one range its users hardly use (the tail), `checked` of the codes checked right. */
export function dripAttack(
  seed: number,
  country: string,
  from: number,
  to: number,
  rate: (at: number) => number,
  checked: number,
) {
  const rand = mulberry32(seed * 31 + 23);
  const numbers = numbersOf(country);
  const tail = Math.floor(numbers.ranges.length / 2);
  const range = numbers.ranges[tail + Math.floor(rand() * (numbers.ranges.length - tail))]!;
  return arrivals(rand, from, to, rate).map((at) =>
    attack(at, numbers.inRange(rand, range), country, {
      ...(rand() < checked && { checks: [{ afterMs: 20_000 + rand() * 60_000 }] }),
    }),
  );
}

/** (d) Thin spread: random numbers over `inside` and `outside` countries alike, `perHour` in all, no checks. */
export function spreadAttack(
  seed: number,
  inside: string[],
  outside: string[],
  from: number,
  to: number,
  perHour: number,
) {
  const rand = mulberry32(seed * 31 + 24);
  const all = [...inside.map((c) => ({ c, tag: 'inside' })), ...outside.map((c) => ({ c, tag: 'outside' }))];
  return arrivals(rand, from, to, () => perHour).map((at) => {
    const { c, tag } = all[Math.floor(rand() * all.length)]!;
    return attack(at, numbersOf(c).anywhere(rand), c, { tag });
  });
}

/** (e1) Paced under thresholds: `ranges` random ranges, `perRangeHour` sends an hour each, random numbers. */
export function pacedAttack(
  seed: number,
  country: string,
  from: number,
  to: number,
  ranges: number,
  perRangeHour: number,
) {
  const rand = mulberry32(seed * 31 + 25);
  const numbers = numbersOf(country);
  const picked = Array.from(
    { length: ranges },
    () => numbers.ranges[Math.floor(rand() * numbers.ranges.length)]!,
  );
  const sends: PlannedSend[] = [];
  for (const range of picked)
    for (const at of arrivals(rand, from, to, () => perRangeHour))
      sends.push(attack(at, numbers.inRange(rand, range), country));
  return sends.sort((a, b) => a.at - b.at);
}
