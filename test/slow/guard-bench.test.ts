/**
 * The pumping-guard bench's traffic generator (bench/guard/): deterministic per seed, never throws, draws valid
 * mobile numbers of the right country, over a realistic number of ranges; the tuning and reporting seeds apart.
 */
import { parsePhone } from '../../functions/core/phone';
import { numbersOf } from '../../bench/guard/population';
import {
  NEW_COUNTRY,
  SCENARIOS,
  SPREAD_INSIDE,
  SPREAD_OUTSIDE,
  scenarioByName,
} from '../../bench/guard/scenarios';
import {
  BASE_MODEL,
  COUNTRIES,
  HELD_OUT_SEEDS,
  HOUR,
  TRAINING_SEEDS,
  corporateOnboarding,
  dripAttack,
  floodAttack,
  legitimate,
  mulberry32,
  newCountryUsers,
  pacedAttack,
  sequentialAttack,
  spreadAttack,
} from '../../bench/guard/traffic';

const USED = [...new Set([...Object.keys(COUNTRIES), NEW_COUNTRY, ...SPREAD_INSIDE, ...SPREAD_OUTSIDE])];

const isMobileOf = (e164: string, country: string) => {
  const phone = parsePhone(e164);
  return phone?.country === country && (phone.type === 'MOBILE' || phone.type === 'FIXED_LINE_OR_MOBILE');
};

describe('guard bench generator', () => {
  jest.setTimeout(120_000);

  it('is deterministic for a seed, and differs between seeds', () => {
    const window = (seed: number) => legitimate(BASE_MODEL, seed, 10 * HOUR, 10.5 * HOUR);
    expect(window(101)).toEqual(window(101));
    expect(window(101).map((s) => s.to)).not.toEqual(window(102).map((s) => s.to));
    for (const scenario of SCENARIOS.filter((s) => s.kind === 'attack'))
      expect(scenario.traffic(7)).toEqual(scenario.traffic(7));
  });

  it('never throws for seeds 1 to 200 on every country used, and draws valid mobiles of that country', () => {
    const invalid: string[] = [];
    for (const country of USED) {
      const numbers = numbersOf(country);
      for (let seed = 1; seed <= 200; seed++) {
        const rand = mulberry32(seed);
        for (const e164 of [
          numbers.user(rand),
          numbers.anywhere(rand),
          numbers.inRange(rand, numbers.ranges[0]!),
        ])
          if (!isMobileOf(e164, country)) invalid.push(`${country} ${e164}`);
      }
    }
    expect(invalid).toEqual([]);
  });

  it("builds every scenario's own sends for seeds 1 to 200 (seed 21 crashed the old generator)", () => {
    const from = 10 * HOUR;
    const to = 11 * HOUR;
    for (let seed = 1; seed <= 200; seed++) {
      expect(() => [
        newCountryUsers(seed, NEW_COUNTRY, from, to, 400),
        corporateOnboarding(seed, 'US', from, to, 200),
        sequentialAttack(seed, 'PH', from, to, 2000),
        floodAttack(seed, 'ID', from, to, () => 600),
        dripAttack(seed, 'NG', from, to, () => 30, 0.25),
        spreadAttack(seed, SPREAD_INSIDE, SPREAD_OUTSIDE, from, to, 60),
        pacedAttack(seed, 'ID', from, to, 20, 3),
      ]).not.toThrow();
    }
    // Whole scenarios (their legitimate traffic included) on a few seeds.
    for (const seed of [1, 21, 101, 200])
      for (const scenario of SCENARIOS) expect(() => scenario.traffic(seed)).not.toThrow();
  });

  it("puts every send of a scenario on a valid mobile of the send's country", () => {
    const invalid: string[] = [];
    for (const scenario of SCENARIOS)
      for (const send of scenario.traffic(21)) if (!isMobileOf(send.to, send.country)) invalid.push(send.to);
    expect(invalid).toEqual([]);
  });

  it('spreads the US over at least 1000 ranges, IN too, with a heavy tail', () => {
    const us = numbersOf('US');
    expect(new Set(us.ranges.map((r) => r.prefix)).size).toBeGreaterThanOrEqual(1000);
    expect(numbersOf('IN').ranges.length).toBeGreaterThanOrEqual(1000);
    const rand = mulberry32(5);
    const drawn = new Set<string>();
    for (let i = 0; i < 3000; i++) drawn.add(us.user(rand).slice(2, 6));
    // 3000 users over the Zipf weights land in hundreds of distinct ranges.
    expect(drawn.size).toBeGreaterThan(500);
  });

  it('flood_then_campaign: the flood stops, and the campaign (its own users) comes 30 minutes after it', () => {
    const scenario = scenarioByName('flood_then_campaign');
    for (const seed of [1, 101]) {
      const sends = scenario.traffic(seed);
      const flood = sends.filter((s) => s.group === 'attack').map((s) => s.at);
      const campaign = sends.filter((s) => s.group === 'focus');
      expect(flood.length).toBeGreaterThan(50);
      expect(campaign.length).toBeGreaterThan(100);
      expect(campaign.every((s) => s.country === 'ID')).toBe(true);
      expect(Math.min(...campaign.map((s) => s.at)) - Math.max(...flood)).toBeGreaterThanOrEqual(29 * 60_000);
      expect(Math.max(...campaign.map((s) => s.at))).toBeLessThan(scenario.to);
    }
  });

  it('keeps the training and held-out seeds apart, with at least 10 held out', () => {
    expect(HELD_OUT_SEEDS.length).toBeGreaterThanOrEqual(10);
    expect(TRAINING_SEEDS.filter((seed) => HELD_OUT_SEEDS.includes(seed))).toEqual([]);
    // The warm-up seeds (seed + 10000) are neither.
    expect(HELD_OUT_SEEDS.map((s) => s + 10_000).filter((s) => TRAINING_SEEDS.includes(s))).toEqual([]);
  });
});
