/**
 * The pumping guard's vocabulary: levels, reason codes, blocks, the state the send path reads, the decision it
 * records. Pure types and constants; nothing here knows DynamoDB or HTTP.
 */

/**
 * `off`: no verdict. `shadow`: decides as `standard` and records the decision, never refuses. `standard`: refuses
 * on strong signals. `strict`: also on weaker ones (lower thresholds, cross-country novelty).
 */
export const GUARD_LEVELS = ['off', 'shadow', 'standard', 'strict'] as const;
export type GuardLevel = (typeof GUARD_LEVELS)[number];
const DEFAULT_GUARD_LEVEL: GuardLevel = 'standard';
export const isGuardLevel = (text: string): text is GuardLevel =>
  (GUARD_LEVELS as readonly string[]).includes(text);

/** The levels at which a block applies: a `strict` block only at strict, a `standard` one at both. */
export type BlockLevel = 'standard' | 'strict';

/** Why the guard refused (or would refuse) a send. */
export type GuardReason =
  /** The number is in a shipped high-risk range (premium, satellite, ...). */
  | 'high_risk_range'
  /** A run of near-sequential numbers in one range, recently. */
  | 'sequential_numbers'
  /** A range's share of the country's recent traffic far above its own baseline, with few codes checked. */
  | 'prefix_surge'
  /** Ranges sent to lately whose codes of the last hours were not checked, far more than real users leave so. */
  | 'unchecked_range'
  /** Many sends to ranges never established for the service in one country, with few codes checked. */
  | 'novel_prefix_surge'
  /** Sends to several countries never established for the service, with few codes checked. */
  | 'novel_country_surge'
  /** Sends to never-established ranges across countries, with few codes checked (strict only). */
  | 'novel_prefix_spread'
  /**
   * A country's traffic far above its usual volume with its codes checked far less than usual: the country is
   * closed but for the ranges whose codes were checked lately.
   */
  | 'country_surge'
  /**
   * A country the service has no baseline in yet (learning): its codes checked far less than real users check
   * theirs, or a burst of sends with none checked. Closed like `country_surge`.
   */
  | 'low_conversion'
  /** A send cap the service's owner set for the country was reached (hourly or daily, sends or spend). */
  | 'country_cap';

/** The rule families the refusal's message names (never a threshold). */
const REASON_FAMILY: Record<GuardReason, string> = {
  high_risk_range: 'a known high-risk number range',
  sequential_numbers: 'unusual traffic to this number range',
  prefix_surge: 'unusual traffic to this number range',
  unchecked_range: 'unusual traffic to this number range',
  novel_prefix_surge: 'unusual traffic to new destinations',
  novel_country_surge: 'unusual traffic to new destinations',
  novel_prefix_spread: 'unusual traffic to new destinations',
  country_surge: 'unusual traffic to this country',
  low_conversion: 'unusual traffic to this country',
  country_cap: 'the send limit set for this country is reached',
};

export const blockedMessage = (reason: GuardReason): string =>
  `The pumping guard blocks this destination for now: ${REASON_FAMILY[reason]}.`;

/** The figures that made a rule fire: small counts and ratios, recorded with the decision. */
export type Figures = Record<string, number>;

/**
 * Sends let through a block as probes and how many of their codes were checked, per minute the send was made
 * (minute index → [sends, checked]): what renews a block (probes not checked) or lifts it early (probes checked).
 */
export type ProbeCohorts = Record<string, [number, number]>;

/** A temporary block of every number starting with `prefix` (an E.164 prefix, or `+<cc>` for a country). */
export interface GuardBlock {
  prefix: string;
  reason: GuardReason;
  level: BlockLevel;
  /** Epoch ms; the consumer extends it while the signal lasts. */
  since: number;
  until: number;
  figures: Figures;
  /**
   * Global blocks only: short tags of the services whose traffic showed the signal. The block applies to a
   * service only when at least `GLOBAL_QUORUM` other services are among them; to the others it is shadow only.
   */
  services?: string[];
  /** Probes let through this block and their checked codes (absent: none yet; caps take no probes). */
  probes?: ProbeCohorts;
}

/**
 * A "novelty" block: while `until` is ahead, a number whose range (or country) is not in `established` is
 * refused. Established ranges and countries are those the service's users have checked codes in.
 */
export interface NoveltyBlock {
  reason: GuardReason;
  level: BlockLevel;
  since: number;
  until: number;
  figures: Figures;
  probes?: ProbeCohorts;
  /**
   * Started (at `strict`) on a flood's volume before its codes could be judged: it lapses at its near `until`
   * unless the codes of the sends that started it go unchecked.
   */
  provisional?: true;
  /**
   * A block of ranges not established (`novelty`): the first batch that found the sends there over (epoch ms). It
   * ends a while after (`NOVELTY_QUIET_MS`) unless they go on again.
   */
  quiet?: number;
}

/**
 * A country closed (`country_surge`, `low_conversion`): a number is refused unless its range is `open`, one whose
 * codes were checked lately (real users are there), or it is a probe.
 */
export interface CountryBlock extends NoveltyBlock {
  open: string[];
  /**
   * A surge's closure: the last batch that found its surge over (epoch ms). Probes from before it never renew
   * the closure for a surge that comes after: a crowd of real users after the flood is a surge of its own.
   */
  calm?: number;
}

/** What the send path reads for one scope (a service, or all services) and one country. */
export interface CountryGuardState {
  blocks: GuardBlock[];
  /** Ranges (`+447400`) established for this scope in this country. */
  established: string[];
  /** Refuse numbers in ranges not established, in this country. */
  novelty?: NoveltyBlock;
  /** Refuse numbers of this country outside the open ranges. */
  closed?: CountryBlock;
  /** Prefixes an operator lifted by hand, until (epoch ms): no block of them applies, none is made. */
  lifted: Record<string, number>;
  /**
   * Prefixes whose block the probes vindicated, until (epoch ms): the rules make no block of exactly that prefix
   * again (its evidence is spent). Unlike `lifted`, blocks of other prefixes under it still apply. Two keys are
   * timers: `flood`, a flood's provisional closure lapsed unconfirmed, and that rule leaves the country alone
   * until then; `flood_confirmed`, one was confirmed, and that rule closes again on fewer sends until then.
   */
  vindicated?: Record<string, number>;
  /** The conversion drop the owner was last told of (conversion-watch.ts), kept until they may be told again. */
  drop?: ConversionDrop;
}

/**
 * A country's codes of the last hour checked far below its usual conversion: nothing is refused, the owner is told
 * (a metric, a log line, the `guard.conversion_drop` webhook, the console).
 */
export interface ConversionDrop {
  /** When it was found (epoch ms): a new `since` is a new notice. */
  since: number;
  /** Not told again before (epoch ms). */
  until: number;
  figures: Figures;
}

/** What the send path reads for one scope across countries. */
export interface ScopeGuardState {
  /** Countries established for this scope. */
  establishedCountries: string[];
  /** Refuse numbers of countries not established. */
  novelCountries?: NoveltyBlock;
  /** Refuse numbers in ranges not established, in any country (strict). */
  novelRanges?: NoveltyBlock;
  lifted: Record<string, number>;
  /** As the country state's: the scope's novelty blocks vindicated by their probes (`*`). */
  vindicated?: Record<string, number>;
}

/** The guard's state for one destination, read with the send's own BatchGetItem. */
export interface GuardView {
  service: { country?: CountryGuardState; all?: ScopeGuardState };
  global: { country?: CountryGuardState };
  /** The number checked a code of this service lately (`KNOWN_NUMBER`). */
  known?: KnownNumber;
}

/**
 * The number checked the code of one of the service's last sends to it (`KNOWN_NUMBER.recent`): that send's time.
 * Found only when a block would refuse the send (the read that confirms a refusal reads those sends too).
 */
export interface KnownNumber {
  at: number;
}

/**
 * A known number passes the blocks the guard learnt (not the high-risk list, not a cap): a returning user is no
 * pumped number. It is known while one of the service's last `recent` sends to it was checked, that send at most
 * `forMs` old (a verification is kept 7 days past its expiry): a user who asks for a code again before typing the
 * first still gets it; a number whose codes then go unchecked is judged as any other.
 */
export const KNOWN_NUMBER = { forMs: 7 * 24 * 3_600_000, recent: 2 } as const;

/** Whether `known` lets a send at `now` pass a learnt block. */
export const knownPasses = (known: KnownNumber | undefined, now: number): boolean =>
  known !== undefined && now - known.at < KNOWN_NUMBER.forMs;

/** Caps an owner sets for a country (or `*`, every country without its own): sends, or spend in 0.0001 USD. */
export interface CountryCaps {
  hourlySends?: number;
  dailySends?: number;
  hourlySpend?: number;
  dailySpend?: number;
}

/** A service's guard settings, kept on the service item. */
export interface GuardSettings {
  level: GuardLevel;
  /** E.164 numbers or prefixes never blocked. */
  safeList: string[];
  /** Per-country caps (`*`: the default for countries without their own). */
  caps?: Record<string, CountryCaps>;
}

export const DEFAULT_GUARD_SETTINGS: GuardSettings = { level: DEFAULT_GUARD_LEVEL, safeList: [] };

/**
 * A decision that refused a send (`blocked`), or would have: `shadow` (the level only records), `known` (the number
 * checked a code of the service lately: `KNOWN_NUMBER`). Recorded with the send.
 */
export interface GuardDecision {
  mode: 'blocked' | 'shadow' | 'known';
  reason: GuardReason;
  /** The prefix the rule matched (a range, a country prefix, or the number's range for novelty). */
  prefix: string;
  /** `service` or `global`: whose signals made it. */
  scope: 'service' | 'global' | 'list';
  figures: Figures;
  /** The send's price in units of 0.0001 USD (what it saved when blocked); 0 when it had none. */
  price: number;
  at: number;
}
