/**
 * The evidence behind every block (docs/guard.md, "Rules"): how unlikely the checked codes of some sends are if
 * real users had made them, given how long ago each code was sent. Pure statistics, no policy: the rules in
 * signals.ts and rules/ choose the conversion and the bar.
 */

/**
 * How long real users take to check a code: none before `TYPING_MIN_MS`, all who will by `TYPING_FULL_MS`,
 * evenly between (slower than most real users: the evidence against a send grows no faster than this).
 */
const TYPING_MIN_MS = 10_000;
const TYPING_FULL_MS = 180_000;

/** Sends made at one time (`at`), how many were accepted, how many of those were checked. */
export interface Cohort {
  at: number;
  sends: number;
  checked: number;
}

/** Share of the codes real users will ever check that they have checked `ageMs` after the send. */
const typedBy = (ageMs: number): number =>
  Math.min(1, Math.max(0, (ageMs - TYPING_MIN_MS) / (TYPING_FULL_MS - TYPING_MIN_MS)));

export interface Evidence {
  sends: number;
  checked: number;
  /** Checked codes real users converting at `conversion` would have by now. */
  expected: number;
  /** Checked codes they will have once every code has had its time to be typed. */
  eventual: number;
  /** Log of the chance of so few checked codes from such users (0: no evidence at all). */
  logChance: number;
}

/**
 * How unlikely the checked codes of these cohorts are if real users (checking `conversion` of their codes, at
 * the pace of `typedBy`) had sent them: the exact chance when none was checked, a Chernoff bound otherwise (it
 * overstates the chance, so the test errs towards real users).
 */
export function conversionEvidence(cohorts: Cohort[], conversion: number, now: number): Evidence {
  let expected = 0;
  let eventual = 0;
  let logNone = 0;
  let sends = 0;
  let checked = 0;
  for (const cohort of cohorts) {
    const q = conversion * typedBy(now - cohort.at);
    expected += cohort.sends * q;
    eventual += cohort.sends * conversion;
    logNone += cohort.sends * Math.log(1 - Math.min(q, 0.999));
    sends += cohort.sends;
    checked += cohort.checked;
  }
  let logChance = 0;
  if (checked === 0) logChance = logNone;
  else if (checked < expected) logChance = -expected + checked + checked * Math.log(expected / checked);
  return { sends, checked, expected, eventual, logChance };
}

/**
 * The same, exact: the chance of so few checked codes, each send checked independently with its own chance (a
 * Poisson binomial). For the few sends of a flood's first minutes or of one concentrated range, where the bound
 * above is loose by an order of magnitude; its cost grows with sends x checked codes.
 */
export function exactConversionEvidence(cohorts: Cohort[], conversion: number, now: number): Evidence {
  const evidence = conversionEvidence(cohorts, conversion, now);
  const { checked } = evidence;
  if (checked >= evidence.expected) return { ...evidence, logChance: 0 };
  // chances[j]: the chance that exactly j codes (0..checked) of the sends so far were checked.
  let chances = [1, ...new Array<number>(checked).fill(0)];
  for (const cohort of cohorts) {
    const q = Math.min(conversion * typedBy(now - cohort.at), 0.999);
    for (let i = 0; i < cohort.sends; i++)
      chances = chances.map((chance, j) => chance * (1 - q) + (j > 0 ? chances[j - 1]! * q : 0));
  }
  return { ...evidence, logChance: Math.log(sum(chances)) };
}

/**
 * Two independent tests of the same traffic joined (Fisher's method): the chance that both, on real users' traffic,
 * give chances whose product is this low. Each chance is given as its log.
 */
export function jointChance(logA: number, logB: number): number {
  const l = -(logA + logB);
  if (l === Infinity) return 0;
  return l <= 0 ? 1 : Math.exp(-l) * (1 + l);
}

/** Whether the evidence starts (or renews) a block: unlikely enough, and well below what real users check. */
export const damning = (evidence: Evidence, logAlpha: number): boolean =>
  evidence.logChance < logAlpha && evidence.checked <= 0.5 * evidence.expected;

/** The chance of at least `k` events of a Poisson count with mean `mean`. */
export function poissonAtLeast(k: number, mean: number): number {
  let term = Math.exp(-mean);
  let below = 0;
  for (let i = 0; i < k; i++) {
    below += term;
    term *= mean / (i + 1);
  }
  return Math.max(0, 1 - below);
}

/** The chance of at least `k` successes in `n` trials of chance `p` (binomial), summed in logs. */
export function binomialAtLeast(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n || p <= 0) return 0;
  if (p >= 1) return 1;
  let logTerm = n * Math.log(1 - p); // i = 0
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (i >= k) total += Math.exp(logTerm);
    logTerm += Math.log((n - i) / (i + 1)) + Math.log(p / (1 - p));
  }
  return Math.min(1, total + Math.exp(logTerm));
}

/** How unlikely probes' checked codes must be from fake checks before they lift a block. */
const VINDICATION_ALPHA = 1e-2;

/**
 * Whether a block's probes show real users behind it: their codes checked at least as often as the rules assume
 * real users check theirs, and more than fake checks at a quarter of that rate (a drip attack's, made at once,
 * not at a typing pace) would plausibly give. The second test keeps a couple of early checks among many young
 * probes from lifting a block. `beside`: the share of the sends under the block the country's usual users make (a
 * surge's closure): their checks, at the measured conversion (twice the rules'), join the fake checks in that test,
 * so that a few real users among a flood's probes do not pass for a crowd.
 */
export const vindicating = (evidence: Evidence, beside = 0): boolean =>
  evidence.checked >= 2 &&
  evidence.checked >= evidence.expected &&
  poissonAtLeast(evidence.checked, evidence.eventual / 4 + 2 * beside * evidence.eventual) <
    VINDICATION_ALPHA;

export const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
