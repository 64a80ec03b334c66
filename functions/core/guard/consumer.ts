/**
 * The guard's stream consumer: folds a batch of events into the stored aggregates of each scope (the service,
 * and `GLOBAL` for all services) and country, evaluates the rules, and writes the state the send path reads.
 * Every write is conditioned on the version read; a conflict (another batch wrote first) reads and folds again.
 * Each aggregate remembers, per stream shard, the highest sequence number folded into it: a batch delivered again
 * (a retry after a failure, a bisected half, a duplicate delivery) counts only the records not folded yet.
 */
import type { Clock } from '../ports';
import type {
  CountryCaps,
  CountryGuardState,
  Figures,
  GuardDecision,
  GuardReason,
  ScopeGuardState,
} from './model';
import { evaluateCountry } from './signals';
import { foldCountryProbes, foldScopeProbes } from './rules/block-life';
import { GLOBAL_QUORUM, type StartedBlock } from './rules/judging';
import { evaluateScope } from './rules/scope';
import {
  applyCountryEvent,
  countTowardCaps,
  applyScopeEvent,
  currentCountryStats,
  currentScopeStats,
  emptyCountryState,
  emptyScopeState,
  pruneCountryStats,
  pruneScopeStats,
  serviceTag,
  type CountryStats,
  type GuardEvent,
  type ScopeStats,
} from './aggregates';

export const GLOBAL_SCOPE = 'GLOBAL';

/** Per mode, reason and prefix: sends decided, and what the blocked ones would have cost. */
interface GuardReportLine {
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

/** Where a stream record sits: its shard, and its sequence number (increasing strings of digits per shard). */
interface StreamPosition {
  shard: string;
  sequence: string;
}

/** An event with the stream record it came from; without a position it is always folded (no deduplication). */
export type PositionedGuardEvent = GuardEvent & { position?: StreamPosition };

/** Per shard: the highest sequence number folded into an aggregate, and when (to forget shards long ended). */
export type FoldedMarks = Record<string, { seq: string; at: number }>;

/**
 * How long a shard's mark is kept after its last fold: longer than a record can wait in the stream (the event
 * source's maximum record age is an hour), so a record delivered again always finds its shard's mark.
 */
export const FOLDED_KEEP_MS = 3 * 3_600_000;

/**
 * The stream consumer's batching window: the event source folds this long of traffic into one batch, so a block
 * starts up to this long after the sends that make it. The consumer's cost is per batch (it rewrites what a batch
 * touches), and the guard's evaluation (`npm run bench:guard`) folds batches of this same length.
 */
export const GUARD_BATCH_WINDOW_SECONDS = 30;

/**
 * The event source's tumbling window: Lambda names each batch's shard within it, and carries a state from batch to
 * batch, in which the consumer keeps the events whose aggregates it has not written yet (`DEFERRED_AGGREGATES`).
 */
export const GUARD_TUMBLING_WINDOW_SECONDS = 15 * 60;

export interface CountryRecord {
  stats: CountryStats;
  state: CountryGuardState;
  /** 0: not stored yet. */
  version: number;
  folded?: FoldedMarks;
}

export interface ScopeRecord {
  stats: ScopeStats;
  state: ScopeGuardState;
  report: GuardReport;
  version: number;
  folded?: FoldedMarks;
}

export interface CountryKey {
  scope: string;
  country: string;
}

export interface GuardBatch {
  /** By `${scope}/${country}`. */
  countries: Map<string, CountryRecord>;
  scopes: Map<string, ScopeRecord>;
  /** The caps each service's owner set, by service SID then country (`*`: every other country). */
  caps?: Map<string, Record<string, CountryCaps>>;
  /** The services whose level is `strict` (its rules that refuse real users too run for them alone). */
  strict?: Set<string>;
}

/** The caps that apply to a country: its own, else the service's `*` entry. */
const capsFor = (caps: Record<string, CountryCaps> | undefined, country: string): CountryCaps | undefined =>
  caps?.[country] ?? caps?.['*'];

export const countryKey = (scope: string, country: string): string => `${scope}/${country}`;

export interface GuardSignalStore {
  /** The records of these countries and scopes that exist (one read). */
  load(countries: CountryKey[], scopes: string[]): Promise<GuardBatch>;
  /**
   * Writes each record whose stored version is still the one read (`version`); says which were written
   * (`countryKey(scope, country)` for a country, the scope for a scope). A record left out changed meanwhile: the
   * batch is folded again, and the shard marks of the records written keep it from counting twice there.
   */
  save(batch: GuardBatch): Promise<SavedRecords>;
  /**
   * How many services the deployment has, counted up to `limit` (a count of `limit` means at least that many).
   * May be remembered a few minutes: the global scope starts from nothing when a service joins anyway.
   */
  servicesUpTo(limit: number): Promise<number>;
}

export interface SavedRecords {
  /** Every record of the batch was written. */
  complete: boolean;
  written: Set<string>;
}

export interface GuardConsumerDeps {
  store: GuardSignalStore;
  clock: Clock;
  /** Told of each block a rule started (not of renewals): a metric, a log line. */
  onBlockStarted?: (scope: string, country: string, block: StartedBlock) => void;
  /** Told of a country's conversion drop (conversion-watch.ts), once per country in its quiet time. */
  onConversionDrop?: (scope: string, country: string, figures: Figures) => void;
}

const MAX_REPORT_LINES = 300;
const MAX_RECENT = 50;
const MAX_ATTEMPTS = 5;

function recordDecision(report: GuardReport, decision: GuardDecision, e164: string): void {
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

/**
 * Orders two stream sequence numbers of one shard: strings of digits, compared as numbers (DynamoDB's are
 * longer than a double's precision); anything else by length, then lexically.
 */
export function compareSequence(a: string, b: string): number {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** Whether the record at `position` is not folded into the aggregate with these marks yet. */
const unfolded = (marks: FoldedMarks | undefined, position: StreamPosition | undefined): boolean => {
  const mark = position && marks?.[position.shard];
  return !mark || compareSequence(position.sequence, mark.seq) > 0;
};

/** The marks after folding records at `positions`: each shard's highest, old shards forgotten. */
function advanceMarks(
  marks: FoldedMarks | undefined,
  positions: StreamPosition[],
  now: number,
): FoldedMarks | undefined {
  if (positions.length === 0) return marks;
  const next: FoldedMarks = {};
  for (const [shard, mark] of Object.entries(marks ?? {}))
    if (mark.at >= now - FOLDED_KEEP_MS) next[shard] = mark;
  for (const { shard, sequence } of positions) {
    const mark = next[shard];
    if (!mark || compareSequence(sequence, mark.seq) > 0) next[shard] = { seq: sequence, at: now };
    else mark.at = now;
  }
  return next;
}

/**
 * Within a shard's tumbling window the consumer writes its aggregates every few minutes rather than at every
 * batch: the events folded since are carried from batch to batch (Lambda's window `state`), folded again each
 * batch over the stored aggregates for the rules, and written when a state changes (a block: the send path must
 * see it at once), when they are this many or this old, and at the window's end.
 */
export const DEFERRED_AGGREGATES = { maxEvents: 1_000, maxAgeMs: 5 * 60_000 } as const;

/**
 * One batch of a shard's tumbling window: `carried`, the events of its earlier batches not written yet; `final`,
 * the window's last batch (everything is written). Answers the blocks started and the events to carry on.
 */
export async function consumeGuardWindowBatch(
  deps: GuardConsumerDeps,
  carried: PositionedGuardEvent[],
  input: PositionedGuardEvent[],
  final: boolean,
): Promise<{ started: StartedBlock[]; carry: PositionedGuardEvent[] }> {
  const events = [...carried, ...input];
  const now = deps.clock.now().getTime();
  const oldest = events.reduce((at, event) => Math.min(at, event.at), now);
  const write =
    final || events.length >= DEFERRED_AGGREGATES.maxEvents || now - oldest >= DEFERRED_AGGREGATES.maxAgeMs;
  const folded = await foldEvents(deps, events, !write);
  return { started: folded.started, carry: folded.written ? [] : events };
}

/**
 * Folds `events` into every scope and country they touch and writes the new state (one read, one write). An
 * aggregate that already folded an event's stream record (its shard's mark is at or past it) skips it, and an
 * aggregate no event is new to is not written at all: the same batch twice counts once.
 */
export async function consumeGuardEvents(
  deps: GuardConsumerDeps,
  input: PositionedGuardEvent[],
): Promise<StartedBlock[]> {
  return (await foldEvents(deps, input, false)).started;
}

/** `consumeGuardEvents`; with `defer`, nothing is written unless a state changed (`written` says which). */
async function foldEvents(
  deps: GuardConsumerDeps,
  input: PositionedGuardEvent[],
  defer: boolean,
): Promise<{ started: StartedBlock[]; written: boolean }> {
  const events = [...input].sort((a, b) => a.at - b.at);
  if (events.length === 0) return { started: [], written: true };
  const now = Math.max(deps.clock.now().getTime(), events[events.length - 1]!.at);
  // A global block applies to a service only when GLOBAL_QUORUM other services showed its signal: below that many
  // services it can refuse no one, and the global scope is neither read nor written
  // (docs/adr/0020-global-scope-from-four-services.md).
  const withGlobal = (await deps.store.servicesUpTo(GLOBAL_QUORUM + 1)) > GLOBAL_QUORUM;
  const countries = new Map<string, CountryKey>();
  const scopes = new Set<string>();
  for (const event of events) {
    // A receipt's service too: its item says the service's level and caps, which every evaluation needs.
    scopes.add(event.serviceSid);
    for (const scope of withGlobal ? [event.serviceSid, GLOBAL_SCOPE] : [event.serviceSid])
      countries.set(countryKey(scope, event.country), { scope, country: event.country });
  }

  // Blocks started by records an earlier attempt wrote: told once, when written.
  const told: StartedBlock[] = [];
  for (let attempt = 0; ; attempt++) {
    const batch = await deps.store.load([...countries.values()], [...scopes]);
    // Each record's state as stored: with `defer`, nothing is written unless this batch changes one of them.
    const storedStates = new Map<CountryRecord | ScopeRecord, string>();
    for (const record of [...batch.countries.values(), ...batch.scopes.values()])
      storedStates.set(record, JSON.stringify(record.state));
    const started: { scope: string; country: string; block: StartedBlock }[] = [];
    const drops: { scope: string; country: string; figures: Figures }[] = [];
    const country = (scope: string, name: string): CountryRecord => {
      const key = countryKey(scope, name);
      let record = batch.countries.get(key);
      if (!record) {
        record = { stats: currentCountryStats(undefined), state: emptyCountryState(), version: 0 };
        batch.countries.set(key, record);
        storedStates.set(record, JSON.stringify(record.state));
      }
      record.stats = currentCountryStats(record.stats);
      return record;
    };
    const scope = (name: string): ScopeRecord => {
      let record = batch.scopes.get(name);
      if (!record) {
        record = {
          stats: currentScopeStats(undefined),
          state: emptyScopeState(),
          report: emptyReport(),
          version: 0,
        };
        batch.scopes.set(name, record);
        storedStates.set(record, JSON.stringify(record.state));
      }
      record.stats = currentScopeStats(record.stats);
      return record;
    };
    // Which records each aggregate has not folded yet, judged on the marks as read (events are in time order,
    // not stream order). The aggregates of one batch may be written in several transactions (over 100 items):
    // after one of them failed, some aggregates hold the batch and others not.
    const folding = new Map<CountryRecord | ScopeRecord, StreamPosition[]>();
    const fresh = (record: CountryRecord | ScopeRecord, event: PositionedGuardEvent): boolean => {
      if (!unfolded(record.folded, event.position)) return false;
      let positions = folding.get(record);
      if (!positions) folding.set(record, (positions = []));
      if (event.position) positions.push(event.position);
      return true;
    };
    // In time order: the scope-wide fold needs to know whether the send's range was established at the time.
    for (const event of events) {
      const ownCountry = country(event.serviceSid, event.country);
      const global = withGlobal ? country(GLOBAL_SCOPE, event.country) : undefined;
      if (event.kind === 'delivered') {
        // A receipt marks its send's range bucket, nothing else: no scope-wide count, no probe, no report.
        if (fresh(ownCountry, event)) applyCountryEvent(ownCountry.stats, event);
        if (global && fresh(global, event)) applyCountryEvent(global.stats, event);
        continue;
      }
      const own = scope(event.serviceSid);
      if (event.kind === 'send' && event.callerCode) {
        // A code the caller checks itself: its send counts toward the owner's caps, and no rule can judge it
        // (unchecked as far as the guard can see, its real users would look like a flood).
        if (event.accepted && fresh(ownCountry, event)) countTowardCaps(ownCountry.stats, event);
        if (event.decision && fresh(own, event)) recordDecision(own.report, event.decision, event.e164);
        continue;
      }
      const ownFresh = fresh(ownCountry, event);
      const scopeFresh = fresh(own, event);
      // The scope's fold needs the country fold's facts; if the country has it already (an earlier, partly
      // written attempt), they are found again on a copy (approximately: the copy holds the event already).
      const facts = ownFresh
        ? applyCountryEvent(ownCountry.stats, event)
        : scopeFresh
          ? applyCountryEvent(structuredClone(ownCountry.stats), event)
          : undefined;
      if (ownFresh && facts) foldCountryProbes(ownCountry.state, event, facts.novelRange);
      if (global && fresh(global, event))
        applyCountryEvent(global.stats, event, serviceTag(event.serviceSid));
      if (scopeFresh && facts) {
        const { novelCountry } = applyScopeEvent(own.stats, event, facts);
        foldScopeProbes(own.state, event, { ...facts, novelCountry });
        if (event.kind === 'send' && event.decision) recordDecision(own.report, event.decision, event.e164);
      }
    }
    for (const [key, record] of batch.countries) if (!folding.has(record)) batch.countries.delete(key);
    for (const [key, record] of batch.scopes) if (!folding.has(record)) batch.scopes.delete(key);
    for (const [record, positions] of folding) {
      const marks = advanceMarks(record.folded, positions, now);
      if (marks) record.folded = marks;
    }
    if (folding.size === 0) return { started: [], written: true };
    for (const { scope: name, country: code } of countries.values()) {
      const record = batch.countries.get(countryKey(name, code));
      if (!record) continue;
      pruneCountryStats(record.stats, now);
      const global = name === GLOBAL_SCOPE;
      const caps = global ? undefined : capsFor(batch.caps?.get(name), code);
      const evaluated = evaluateCountry(record.stats, record.state, {
        country: code,
        now,
        scope: global ? 'global' : 'service',
        ...(caps && { caps }),
        ...(batch.strict?.has(name) && { strict: true }),
      });
      record.state = evaluated.state;
      for (const block of evaluated.started) started.push({ scope: name, country: code, block });
      if (evaluated.drop) drops.push({ scope: name, country: code, figures: evaluated.drop.figures });
    }
    for (const name of scopes) {
      const record = batch.scopes.get(name);
      if (!record) continue;
      pruneScopeStats(record.stats, now);
      const evaluated = evaluateScope(record.stats, record.state, now);
      record.state = evaluated.state;
      for (const block of evaluated.started) started.push({ scope: name, country: '*', block });
    }
    // Deferred, the aggregates wait for a later batch (the caller carries the events) unless a state changed: the
    // send path must see it now, and then every record is written, so that they all hold the same events.
    const changed = [...batch.countries.values(), ...batch.scopes.values()].some(
      (record) => storedStates.get(record) !== JSON.stringify(record.state),
    );
    if (defer && !changed) return { started: told, written: false };
    const saved = await deps.store.save(batch);
    for (const { scope: name, country: code, block } of started) {
      if (!saved.written.has(code === '*' ? name : countryKey(name, code))) continue;
      deps.onBlockStarted?.(name, code, block);
      told.push(block);
    }
    for (const { scope: name, country: code, figures } of drops)
      if (saved.written.has(countryKey(name, code))) deps.onConversionDrop?.(name, code, figures);
    if (saved.complete) return { started: told, written: true };
    if (attempt + 1 >= MAX_ATTEMPTS) throw new Error('the guard state kept changing under this batch');
  }
}
