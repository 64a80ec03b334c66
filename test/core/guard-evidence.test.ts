/**
 * The statistics behind every block (functions/core/guard/evidence.ts): the chance that real users, checking a
 * share of their codes at a typing pace, would have checked so few of these sends' codes by now.
 */
import {
  binomialAtLeast,
  conversionEvidence,
  damning,
  exactConversionEvidence,
  jointChance,
  poissonAtLeast,
  vindicating,
} from '../../functions/core/guard/evidence';

const NOW = 1_000_000_000;
const SECOND = 1000;
/** `sends` sent `ageMs` ago, `checked` of them checked. */
const cohort = (ageMs: number, sends: number, checked = 0) => ({ at: NOW - ageMs, sends, checked });

test('codes seconds old are no evidence: real users could not have typed them yet', () => {
  const evidence = conversionEvidence([cohort(8 * SECOND, 50)], 0.5, NOW);
  expect(evidence).toMatchObject({ sends: 50, checked: 0, expected: 0, logChance: 0 });
  expect(evidence.eventual).toBe(25);
});

test('a code counts for more as it ages, fully once real users have all had their time', () => {
  const young = conversionEvidence([cohort(60 * SECOND, 10)], 0.5, NOW);
  const old = conversionEvidence([cohort(5 * 60 * SECOND, 10)], 0.5, NOW);
  expect(young.expected).toBeGreaterThan(0);
  expect(young.expected).toBeLessThan(old.expected);
  // None checked of 10 codes real users check half of: exactly 0.5^10.
  expect(old.logChance).toBeCloseTo(10 * Math.log(0.5), 10);
  expect(old.expected).toBe(5);
});

test('with some checked, the bound overstates the chance and the exact count does not', () => {
  const cohorts = [cohort(5 * 60 * SECOND, 12, 1)];
  const bound = conversionEvidence(cohorts, 0.45, NOW);
  const exact = exactConversionEvidence(cohorts, 0.45, NOW);
  // P(at most 1 of 12 at 0.45) = 0.55^12 + 12 x 0.45 x 0.55^11.
  const chance = 0.55 ** 12 + 12 * 0.45 * 0.55 ** 11;
  expect(Math.exp(exact.logChance)).toBeCloseTo(chance, 12);
  expect(bound.logChance).toBeGreaterThan(exact.logChance);
  expect(exact).toMatchObject({ sends: 12, checked: 1, expected: bound.expected });
});

test('more checked than real users would have: no evidence at all', () => {
  const cohorts = [cohort(5 * 60 * SECOND, 10, 6)];
  expect(conversionEvidence(cohorts, 0.5, NOW).logChance).toBe(0);
  expect(exactConversionEvidence(cohorts, 0.5, NOW).logChance).toBe(0);
});

test('damning: unlikely enough and at most half of what real users would have checked', () => {
  const none = conversionEvidence([cohort(5 * 60 * SECOND, 20)], 0.5, NOW);
  expect(damning(none, Math.log(1e-5))).toBe(true);
  expect(damning(none, Math.log(1e-7))).toBe(false);
  // 5 of 30 checked where real users would have 15: a chance below 1e-2, but a third of the expected.
  const some = exactConversionEvidence([cohort(5 * 60 * SECOND, 30, 5)], 0.5, NOW);
  expect(some.logChance).toBeLessThan(Math.log(1e-2));
  expect(damning(some, Math.log(1e-2))).toBe(true);
  // 8 of 30: still unlikely for real users, but more than half of 15: never damning.
  const many = exactConversionEvidence([cohort(5 * 60 * SECOND, 30, 8)], 0.5, NOW);
  expect(many.logChance).toBeLessThan(Math.log(5e-2));
  expect(damning(many, Math.log(5e-2))).toBe(false);
});

test('poissonAtLeast', () => {
  expect(poissonAtLeast(0, 3)).toBe(1);
  expect(poissonAtLeast(1, 1)).toBeCloseTo(1 - Math.exp(-1), 12);
  expect(poissonAtLeast(6, 0.38)).toBeLessThan(1e-5);
  expect(poissonAtLeast(6, 0.38)).toBeGreaterThan(1e-6);
});

test('binomialAtLeast: the exact tail, in logs so that long windows stay exact', () => {
  expect(binomialAtLeast(0, 5, 0.3)).toBe(1);
  expect(binomialAtLeast(6, 5, 0.3)).toBe(0);
  // 10 or more of 13 at a half: (286 + 78 + 13 + 1) / 8192.
  expect(binomialAtLeast(10, 13, 0.5)).toBeCloseTo(378 / 8192, 12);
  expect(binomialAtLeast(3, 3, 0.2)).toBeCloseTo(0.008, 12);
  // 2,000 trials: the terms underflow in plain products, not in logs.
  expect(binomialAtLeast(1_000, 2_000, 0.5)).toBeCloseTo(0.5 + 0.0089, 3);
});

test('vindicating: probes checked as real users check, not a couple of early checks among many', () => {
  expect(vindicating(conversionEvidence([cohort(5 * 60 * SECOND, 6, 4)], 0.45, NOW))).toBe(true);
  expect(vindicating(conversionEvidence([cohort(5 * 60 * SECOND, 6, 1)], 0.45, NOW))).toBe(false);
  // 2 checked of 40 young probes: as many as real users would have by now, but fake checks at a quarter of
  // the eventual rate give as many easily.
  expect(vindicating(conversionEvidence([cohort(20 * SECOND, 40, 2)], 0.45, NOW))).toBe(false);
});

test('two tests joined: as often below a chance as real traffic would be, and never from one test alone', () => {
  // Pairs of independent chances, as two tests of real users' traffic give (a fixed grid of uniforms): the joined
  // chance falls below a bar as often as that bar says.
  const grid = Array.from({ length: 400 }, (_, i) => (i + 0.5) / 400);
  for (const bar of [0.2, 0.05, 0.01]) {
    let below = 0;
    for (const a of grid) for (const b of grid) if (jointChance(Math.log(a), Math.log(b)) < bar) below += 1;
    expect(below / grid.length ** 2).toBeCloseTo(bar, 2);
  }
  // One test with no evidence (chance 1) makes the other weaker, never stronger: joining is not a second look.
  expect(jointChance(Math.log(1e-3), 0)).toBeGreaterThan(1e-3);
  expect(jointChance(0, 0)).toBe(1);
  // Either certain: certain.
  expect(jointChance(-Infinity, Math.log(0.5))).toBe(0);
});
