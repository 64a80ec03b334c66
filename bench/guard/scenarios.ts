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
  /** What it is, in a line: the trace's header, and the scenario table of docs/guard-results.md. */
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
  legit('warm', 'A warm service, 1.5 hours', 1.5, base),
  legit('new_service', 'A service with no history, its first 2 hours', 2, base, { warm: false }),
  legit(
    'caller_codes',
    '`new_service`, the backend making its codes (`Code`) and checking them',
    2,
    (seed, from, to) => withCallerCodes(base(seed, from, to)),
    { warm: false },
  ),
  legit(
    'new_country',
    'A warm service opens KE: 400 users over 65 minutes, 75 % convert',
    1.25,
    (seed, from, to) => [
      ...base(seed, from, to),
      ...newCountryUsers(seed, NEW_COUNTRY, from + 10 * MINUTE, to, 400),
    ],
    { allowedCountries: served(BASE_MODEL, NEW_COUNTRY) },
  ),
  legit(
    'range_spread',
    'US/IN only, 12,000 and 10,000 a day over all ranges, 12:00, 1 hour',
    1,
    (seed, from, to) => legitimate(RANGE_SPREAD_MODEL, seed, from, to),
    {
      model: RANGE_SPREAD_MODEL,
      from: 12 * HOUR,
      to: 13 * HOUR,
      allowedCountries: served(RANGE_SPREAD_MODEL),
    },
  ),
  legit(
    'corporate_onboarding',
    '200 employees, one sequential US block (…0100 up), an hour, all check',
    1.25,
    (seed, from, to) => [
      ...base(seed, from, to),
      ...corporateOnboarding(seed, 'US', from + 5 * MINUTE, from + 65 * MINUTE, 200),
    ],
  ),
  legit(
    'carrier_outage',
    'BR, 2 h: codes and receipts 30 min late (expired), 60 % send again',
    2.25,
    (seed, from, to) =>
      carrierOutage(base(seed, from, to), seed, 'BR', from + 15 * MINUTE, from + 135 * MINUTE),
  ),
  legit(
    'daily_curves',
    "Each country's local curve (quiet nights, morning ramp), 06:00-07:30",
    1.5,
    (seed, from, to) => legitimate(DAILY_CURVES_MODEL, seed, from, to),
    {
      model: DAILY_CURVES_MODEL,
      from: 6 * HOUR,
      to: 7.5 * HOUR,
      allowedCountries: served(DAILY_CURVES_MODEL),
    },
  ),
  legit(
    'campaign',
    "A push campaign: ID's users at 10x its rate, 20 min, checking as usual",
    1,
    (seed, from, to) => [
      ...base(seed, from, to),
      ...campaignUsers(seed, 'ID', from + 10 * MINUTE, from + 30 * MINUTE, rateOf('ID', 9)(from)),
    ],
  ),
  legit(
    'mistype',
    '30 % of converting users type a wrong code first, then the right one',
    1,
    (seed, from, to) => mistypes(base(seed, from, to), seed, 0.3, from, to),
  ),
  // The launch (the rule a burst of new users meets first) with users slower than the guard assumes.
  legit(
    'slow_typists',
    '`new_country`, checks log-normal, median 60 s (1 in 7 after 3 min)',
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
  onAttack(
    'a_sequential',
    '(a) PH numbers +1 or +2, one every 2 s, 30 minutes, no checks',
    35 / 60,
    (seed, from, to) => sequentialAttack(seed, 'PH', from, to, 2000),
  ),
  onAttack(
    'b_flood',
    "(b) random numbers over ID's ranges at 10x its rate, 1 hour, no checks",
    65 / 60,
    (seed, from, to) => floodAttack(seed, 'ID', from, to, rateOf('ID', 10)),
  ),
  onAttack(
    'c_drip_5',
    "(c) one NG tail range, NG's rate, 55 min, codes checked at 5 %",
    1,
    (seed, from, to) => dripAttack(seed, 'NG', from, to, rateOf('NG', 1), 0.05),
  ),
  onAttack(
    'c_drip_25',
    "(c) one NG tail range, NG's rate, 55 min, codes checked at 25 %",
    1,
    (seed, from, to) => dripAttack(seed, 'NG', from, to, rateOf('NG', 1), 0.25),
  ),
  onAttack(
    'd_spread',
    '(d) 60 an hour, 24 countries, 55 min: 8 in the allow-list, 16 outside',
    1,
    (seed, from, to) => spreadAttack(seed, SPREAD_INSIDE, SPREAD_OUTSIDE, from, to, 60),
  ),
  onAttack('e1_paced', '(e1) 20 random ID ranges, 3 an hour each, unchecked, 55 min', 1, (seed, from, to) =>
    pacedAttack(seed, 'ID', from, to, 20, 3),
  ),
  // The same for 4 hours: a paced attacker's point is to go on; its ranges' history is what can tell it.
  onAttack('e1_long', '(e1) the same for 4 hours', 4 + 5 / 60, (seed, from, to) =>
    pacedAttack(seed, 'ID', from, to, 20, 3),
  ),
  onAttack(
    'e2_pausing',
    '(e2) the 10x ID flood, 55 min, sending nothing 30 min after a refusal',
    1,
    (seed, from, to) => floodAttack(seed, 'ID', from, to, rateOf('ID', 10)),
    { pauseOnBlockMs: 30 * MINUTE },
  ),
  // What a real crowd meets after a flood: at `strict`, the hour after a confirmed closure's hold, when the flood
  // rule closes again sooner (`NOVEL_FLOOD.returning`); `standard` has no such rule (its control).
  onAttack(
    'flood_then_campaign',
    "(b) for 10 minutes; 30 minutes after it, ID's campaign as above",
    70 / 60,
    (seed, from) => [
      ...floodAttack(seed, 'ID', from, from + 10 * MINUTE, rateOf('ID', 10)),
      ...campaignUsers(
        seed,
        'ID',
        from + 40 * MINUTE,
        from + 60 * MINUTE,
        rateOf('ID', 9)(from + 40 * MINUTE),
      ),
    ],
  ),
  // (b) where half of ID's users had checked a code in the warm-up, as people who sign in again: the guard's known
  // numbers pass its closure.
  onAttack(
    'b_flood_returning',
    "(b), half of ID's users returning (they checked a code in the warm-up)",
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
    'A new service: 600 random ID numbers an hour, 30 min; also after 20',
    35 / 60,
    (seed, from, to) => floodAttack(seed, 'ID', from, to, () => 600),
    { warm: false, afterFirst: 20 },
  ),
  onAttack(
    'new_sequential',
    'A new service: (a) for 30 minutes; also reported after its first 20',
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
