/**
 * The guard's stream consumer: folds a batch of events into the stored aggregates of each scope (the service,
 * and `GLOBAL` for all services) and country, evaluates the rules, and writes the state the send path reads.
 * Every write is conditioned on the version read; a conflict (another batch wrote first) reads and folds again.
 */
import type { Clock } from '../ports';
import type { CountryGuardState, GuardDecision, GuardReason, ScopeGuardState } from './model';
import {
  applyCountryEvent,
  applyScopeEvent,
  emptyCountryState,
  emptyCountryStats,
  emptyScopeState,
  emptyScopeStats,
  evaluateCountry,
  evaluateScope,
  pruneCountryStats,
  pruneScopeStats,
  type CountryStats,
  type GuardEvent,
  type ScopeStats,
  type StartedBlock,
} from './signals';

export const GLOBAL_SCOPE = 'GLOBAL';

/** Per mode, reason and prefix: sends decided, and what the blocked ones would have cost. */
export interface GuardReportLine {
  mode: GuardDecision['mode'];
  reason: GuardReason;
  prefix: string;
  sends: number;
  /** Units of 0.0001 USD. */
  saved: number;
  last: number;
}

export interface GuardReport {
  lines: GuardReportLine[];
  /** The latest decisions with their figures (newest last). */
  recent: (GuardDecision & { e164Prefix: string })[];
}

export const emptyReport = (): GuardReport => ({ lines: [], recent: [] });

export interface CountryRecord {
  stats: CountryStats;
  state: CountryGuardState;
  /** 0: not stored yet. */
  version: number;
}

export interface ScopeRecord {
  stats: ScopeStats;
  state: ScopeGuardState;
  report: GuardReport;
  version: number;
}

export interface CountryKey {
  scope: string;
  country: string;
}

export interface GuardBatch {
  /** By `${scope}/${country}`. */
  countries: Map<string, CountryRecord>;
  scopes: Map<string, ScopeRecord>;
}

export const countryKey = (scope: string, country: string): string => `${scope}/${country}`;

export interface GuardSignalStore {
  /** The records of these countries and scopes that exist (one read). */
  load(countries: CountryKey[], scopes: string[]): Promise<GuardBatch>;
  /**
   * Writes every record if each stored version is still the one read (`version`), all or none; false when one
   * changed meanwhile.
   */
  save(batch: GuardBatch): Promise<boolean>;
}

export interface GuardConsumerDeps {
  store: GuardSignalStore;
  clock: Clock;
  /** Told of each block a rule started (not of renewals): a metric, a log line. */
  onBlockStarted?: (scope: string, country: string, block: StartedBlock) => void;
}

const MAX_REPORT_LINES = 300;
const MAX_RECENT = 50;
const MAX_ATTEMPTS = 5;

export function recordDecision(report: GuardReport, decision: GuardDecision, e164: string): void {
  const line = report.lines.find(
    (l) => l.mode === decision.mode && l.reason === decision.reason && l.prefix === decision.prefix,
  );
  const saved = decision.mode === 'blocked' ? decision.price : 0;
  if (line) {
    line.sends += 1;
    line.saved += saved;
    line.last = Math.max(line.last, decision.at);
  } else {
    report.lines.push({
      mode: decision.mode,
      reason: decision.reason,
      prefix: decision.prefix,
      sends: 1,
      saved,
      last: decision.at,
    });
  }
  if (report.lines.length > MAX_REPORT_LINES) {
    report.lines.sort((a, b) => b.last - a.last);
    report.lines.length = MAX_REPORT_LINES;
  }
  // The number itself is not kept: its range is enough to read the report.
  report.recent.push({ ...decision, e164Prefix: e164.slice(0, Math.max(4, e164.length - 3)) });
  if (report.recent.length > MAX_RECENT) report.recent.splice(0, report.recent.length - MAX_RECENT);
}

/** Folds `events` into every scope and country they touch and writes the new state (one read, one write). */
export async function consumeGuardEvents(
  deps: GuardConsumerDeps,
  input: GuardEvent[],
): Promise<StartedBlock[]> {
  const events = [...input].sort((a, b) => a.at - b.at);
  if (events.length === 0) return [];
  const now = Math.max(deps.clock.now().getTime(), events[events.length - 1]!.at);
  const countries = new Map<string, CountryKey>();
  const scopes = new Set<string>();
  for (const event of events) {
    scopes.add(event.serviceSid);
    for (const scope of [event.serviceSid, GLOBAL_SCOPE])
      countries.set(countryKey(scope, event.country), { scope, country: event.country });
  }

  for (let attempt = 0; ; attempt++) {
    const batch = await deps.store.load([...countries.values()], [...scopes]);
    const started: { scope: string; country: string; block: StartedBlock }[] = [];
    const country = (scope: string, name: string): CountryRecord => {
      const key = countryKey(scope, name);
      let record = batch.countries.get(key);
      if (!record) {
        record = { stats: emptyCountryStats(), state: emptyCountryState(), version: 0 };
        batch.countries.set(key, record);
      }
      return record;
    };
    const scope = (name: string): ScopeRecord => {
      let record = batch.scopes.get(name);
      if (!record) {
        record = { stats: emptyScopeStats(), state: emptyScopeState(), report: emptyReport(), version: 0 };
        batch.scopes.set(name, record);
      }
      return record;
    };
    // In time order: the scope-wide fold needs to know whether the send's range was established at the time.
    for (const event of events) {
      const facts = applyCountryEvent(country(event.serviceSid, event.country).stats, event);
      applyCountryEvent(country(GLOBAL_SCOPE, event.country).stats, event);
      const own = scope(event.serviceSid);
      applyScopeEvent(own.stats, event, facts);
      if (event.kind === 'send' && event.decision) recordDecision(own.report, event.decision, event.e164);
    }
    for (const { scope: name, country: code } of countries.values()) {
      const record = country(name, code);
      pruneCountryStats(record.stats, now);
      const evaluated = evaluateCountry(
        record.stats,
        record.state,
        code,
        now,
        name === GLOBAL_SCOPE ? 'global' : 'service',
      );
      record.state = evaluated.state;
      for (const block of evaluated.started) started.push({ scope: name, country: code, block });
    }
    for (const name of scopes) {
      const record = scope(name);
      pruneScopeStats(record.stats, now);
      const evaluated = evaluateScope(record.stats, record.state, now);
      record.state = evaluated.state;
      for (const block of evaluated.started) started.push({ scope: name, country: '*', block });
    }
    if (await deps.store.save(batch)) {
      for (const { scope: name, country: code, block } of started) deps.onBlockStarted?.(name, code, block);
      return started.map(({ block }) => block);
    }
    if (attempt + 1 >= MAX_ATTEMPTS) throw new Error('the guard state kept changing under this batch');
  }
}
