/**
 * The bench's scenarios: each one is a separate run on its own fresh service and store, at guard level
 * `standard`. A warm service first folds two days of its own legitimate traffic (drawn from seed + 10000) into
 * the guard; then the measured window is replayed through the real send and check paths. Windows are a few
 * hours (what the scenario needs), at realistic volumes, so that the held-out matrix runs in minutes.
 */
import {
  BASE_MODEL,
  COUNTRIES,
  DAILY_CURVES_MODEL,
  HOUR,
  MINUTE,
  RANGE_SPREAD_MODEL,
  WARM_DAYS,
  WARM_SEED_OFFSET,
  campaignUsers,
  carrierOutage,
  corporateOnboarding,
  dripAttack,
  floodAttack,
  hourShare,
  legitimate,
  mistypes,
  newCountryUsers,
  pacedAttack,
  returningUsers,
  sequentialAttack,
  slowTypists,
  spreadAttack,
  withCallerCodes,
  type LegitModel,
  type PlannedSend,
} from './traffic';

export interface Scenario {
  name: string;
  kind: 'legit' | 'attack';
  /** A few words for the tables. */
  title: string;
  model: LegitModel;
  /** Two days of the model's legitimate traffic folded before `from` (false: a brand-new service). */
  warm: boolean;
  /** The measured window, ms from the day's midnight. */
  from: number;
  to: number;
  /** Every send of the window for a seed (legitimate ones included). */
  traffic(seed: number): PlannedSend[];
  /** The service's country allow-list (`rules.allowedCountries`); absent: every served country. */
  allowedCountries?: string[];
  /** The attacker stops for this long after each refusal, then resumes (e2). */
  pauseOnBlockMs?: number;
  /** Also report the attack's share refused after its first N sends (new-service attacks). */
  afterFirst?: number;
  /** What the `focus` sends of an attack scenario are, in the tables (default: a campaign's users). */
  focusLabel?: string;
}

/** Attack (d): countries the service serves (inside its allow-list) and ones it never sent to (outside). */
export const SPREAD_INSIDE = ['US', 'GB', 'IN', 'BR', 'MX', 'ID', 'TR', 'EG'];
export const SPREAD_OUTSIDE = [
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
export const NEW_COUNTRY = 'KE';

const T0 = 10 * HOUR;
const served = (model: LegitModel, ...more: string[]) => [...Object.keys(model.countries), ...more];
const base = (seed: number, from: number, to: number) => legitimate(BASE_MODEL, seed, from, to);
/** `factor` times a country's own legitimate rate of the hour. */
const rateOf = (country: string, factor: number) => (at: number) =>
  factor * COUNTRIES[country]!.daily * hourShare(BASE_MODEL, country, at);

const legit = (
  name: string,
  title: string,
  hours: number,
  traffic: (seed: number, from: number, to: number) => PlannedSend[],
  options: Partial<Scenario> = {},
): Scenario => ({
  name,
  kind: 'legit',
  title,
  model: BASE_MODEL,
  warm: true,
  from: T0,
  to: T0 + hours * HOUR,
  traffic: (seed) => {
    const from = options.from ?? T0;
    return traffic(seed, from, options.to ?? from + hours * HOUR);
  },
  allowedCountries: served(options.model ?? BASE_MODEL),
  ...options,
});

/** When an attack starts, into its window. */
export const ATTACK_START_MS = 5 * MINUTE;

const onAttack = (
  name: string,
  title: string,
  hours: number,
  attackSends: (seed: number, from: number, to: number) => PlannedSend[],
  options: Partial<Scenario> = {},
): Scenario => ({
  name,
  kind: 'attack',
  title,
  model: BASE_MODEL,
  warm: true,
  from: T0,
  to: T0 + hours * HOUR,
  // The attack starts 5 minutes into the window and lasts to its end.
  traffic: (seed) => [
    ...base(seed, T0, T0 + hours * HOUR),
    ...attackSends(seed, T0 + ATTACK_START_MS, T0 + hours * HOUR),
  ],
  allowedCountries: served(BASE_MODEL),
  ...options,
});

export const SCENARIOS: Scenario[] = [
  legit('warm', 'Warm service', 1.5, base),
  legit('new_service', 'New service, first hours', 2, base, { warm: false }),
  legit(
    'caller_codes',
    'New service, its own codes',
    2,
    (seed, from, to) => withCallerCodes(base(seed, from, to)),
    { warm: false },
  ),
  legit(
    'new_country',
    'New country (KE), 400 users',
    1.25,
    (seed, from, to) => [
      ...base(seed, from, to),
      ...newCountryUsers(seed, NEW_COUNTRY, from + 10 * MINUTE, to, 400),
    ],
    { allowedCountries: served(BASE_MODEL, NEW_COUNTRY) },
  ),
  legit(
    'range_spread',
    'US+IN at 4x, all ranges',
    1,
    (seed, from, to) => legitimate(RANGE_SPREAD_MODEL, seed, from, to),
    {
      model: RANGE_SPREAD_MODEL,
      from: 12 * HOUR,
      to: 13 * HOUR,
      allowedCountries: served(RANGE_SPREAD_MODEL),
    },
  ),
  legit('corporate_onboarding', '200 sequential, all checked', 1.25, (seed, from, to) => [
    ...base(seed, from, to),
    ...corporateOnboarding(seed, 'US', from + 5 * MINUTE, from + 65 * MINUTE, 200),
  ]),
  legit('carrier_outage', 'BR codes 30 min late, 2 h', 2.25, (seed, from, to) =>
    carrierOutage(base(seed, from, to), seed, 'BR', from + 15 * MINUTE, from + 135 * MINUTE),
  ),
  legit(
    'daily_curves',
    'Local-time curves',
    1.5,
    (seed, from, to) => legitimate(DAILY_CURVES_MODEL, seed, from, to),
    {
      model: DAILY_CURVES_MODEL,
      from: 6 * HOUR,
      to: 7.5 * HOUR,
      allowedCountries: served(DAILY_CURVES_MODEL),
    },
  ),
  legit('campaign', 'Push campaign, ID at 10x, 20 min', 1, (seed, from, to) => [
    ...base(seed, from, to),
    ...campaignUsers(seed, 'ID', from + 10 * MINUTE, from + 30 * MINUTE, rateOf('ID', 9)(from)),
  ]),
  legit('mistype', '30 % wrong code first', 1, (seed, from, to) =>
    mistypes(base(seed, from, to), seed, 0.3, from, to),
  ),
  // The launch (the rule a burst of new users meets first) with users slower than the guard assumes.
  legit(
    'slow_typists',
    'New country, checks median 60 s',
    1.25,
    (seed, from, to) =>
      slowTypists(
        [...base(seed, from, to), ...newCountryUsers(seed, NEW_COUNTRY, from + 10 * MINUTE, to, 400)],
        seed,
        from,
        to,
        60_000,
        1,
      ),
    { allowedCountries: served(BASE_MODEL, NEW_COUNTRY) },
  ),

  // Attacks start 5 minutes into the window and last to its end.
  onAttack('a_sequential', '(a) sequential, PH, 1 per 2 s', 35 / 60, (seed, from, to) =>
    sequentialAttack(seed, 'PH', from, to, 2000),
  ),
  onAttack('b_flood', '(b) 10x random flood, ID', 65 / 60, (seed, from, to) =>
    floodAttack(seed, 'ID', from, to, rateOf('ID', 10)),
  ),
  onAttack('c_drip_5', '(c) drip NG range, 5 % checked', 1, (seed, from, to) =>
    dripAttack(seed, 'NG', from, to, rateOf('NG', 1), 0.05),
  ),
  onAttack('c_drip_25', '(c) drip NG range, 25 % checked', 1, (seed, from, to) =>
    dripAttack(seed, 'NG', from, to, rateOf('NG', 1), 0.25),
  ),
  onAttack('d_spread', '(d) thin over 24 countries', 1, (seed, from, to) =>
    spreadAttack(seed, SPREAD_INSIDE, SPREAD_OUTSIDE, from, to, 60),
  ),
  onAttack('e1_paced', '(e1) paced, 20 ID ranges x 3/h', 1, (seed, from, to) =>
    pacedAttack(seed, 'ID', from, to, 20, 3),
  ),
  // The same for 4 hours: a paced attacker's point is to go on; its ranges' history is what can tell it.
  onAttack('e1_long', '(e1) paced, for 4 hours', 4 + 5 / 60, (seed, from, to) =>
    pacedAttack(seed, 'ID', from, to, 20, 3),
  ),
  onAttack(
    'e2_pausing',
    '(e2) 10x ID flood, 30 min pause per 403',
    1,
    (seed, from, to) => floodAttack(seed, 'ID', from, to, rateOf('ID', 10)),
    { pauseOnBlockMs: 30 * MINUTE },
  ),
  // What a real crowd meets after a flood: at `strict`, the hour after a confirmed closure's hold, when the flood
  // rule closes again sooner (`NOVEL_FLOOD.returning`); `standard` has no such rule (its control).
  onAttack('flood_then_campaign', '(b) for 10 min, then a campaign 40 min on', 70 / 60, (seed, from) => [
    ...floodAttack(seed, 'ID', from, from + 10 * MINUTE, rateOf('ID', 10)),
    ...campaignUsers(seed, 'ID', from + 40 * MINUTE, from + 60 * MINUTE, rateOf('ID', 9)(from + 40 * MINUTE)),
  ]),
  // (b) where half of ID's users had checked a code in the warm-up, as people who sign in again: the guard's known
  // numbers pass its closure.
  onAttack(
    'b_flood_returning',
    "(b), half of ID's users returning",
    65 / 60,
    (seed, from, to) => floodAttack(seed, 'ID', from, to, rateOf('ID', 10)),
    {
      focusLabel: 'returning users',
      traffic: (seed) =>
        returningUsers(
          [
            ...base(seed, T0, T0 + 65 * MINUTE),
            ...floodAttack(seed, 'ID', T0 + ATTACK_START_MS, T0 + 65 * MINUTE, rateOf('ID', 10)),
          ],
          legitimate(BASE_MODEL, seed + WARM_SEED_OFFSET, T0 - WARM_DAYS * 24 * HOUR, T0),
          seed,
          'ID',
          0.5,
        ),
    },
  ),
  onAttack(
    'new_flood',
    'New service: random flood, ID',
    35 / 60,
    (seed, from, to) => floodAttack(seed, 'ID', from, to, () => 600),
    { warm: false, afterFirst: 20 },
  ),
  onAttack(
    'new_sequential',
    'New service: sequential, PH',
    35 / 60,
    (seed, from, to) => sequentialAttack(seed, 'PH', from, to, 2000),
    { warm: false, afterFirst: 20 },
  ),
];

export const scenarioByName = (name: string): Scenario => {
  const scenario = SCENARIOS.find((s) => s.name === name);
  if (!scenario) throw new Error(`no scenario ${name} (${SCENARIOS.map((s) => s.name).join(', ')})`);
  return scenario;
};
