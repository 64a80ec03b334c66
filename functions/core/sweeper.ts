import { settlePendingDelivery, type DeliveryDeps, type DeliveryTaskOutput } from './delivery';
import { UNSETTLED_DEADLINE_SECONDS, settleDeadline } from './delivery-time';
import type { Verification } from './model';
import type {
  AcceptedSend,
  Clock,
  DeliveryStore,
  DeliverySweepStore,
  DeliveryWorkflow,
  SweepCursor,
  TimeSpan,
} from './ports';
import type { Settings } from './settings';

/**
 * The sweeper (a Lambda every minute) walks the ledger: every accepted send writes a charge line in its
 * transaction, so the charge lines in time order are an outbox that costs no write of its own. Each send is
 * looked at twice, by two halves with a cursor each: the restart half when it is STALL_SECONDS old (a delivery
 * no task claimed is started again), the settle half when it is SETTLE_AGE_SECONDS old (a delivery claimed but
 * not ended by its deadline is ended from the record). What must be looked at again later (a delivery restarted
 * by the settle half, or claimed too late to be due yet) is kept in the cursor's `deferred`, a short list.
 *
 * Why not an index of pending deliveries: putting a verification in a sparse index and taking it out when its
 * delivery ends cost 2 write units per send, these two eventually consistent reads 1 read unit, and the ledger
 * already holds what the index held (docs/adr/0002-ledger-as-outbox.md).
 */
export interface SweeperDeps {
  store: DeliverySweepStore & Pick<DeliveryStore, 'getVerification'>;
  workflow: DeliveryWorkflow;
  clock: Clock;
  settings: Settings;
}

/** A delivery not started this long after the send is taken as stalled; a healthy one starts within a second. */
export const STALL_SECONDS = 30;
/** Sends older than this are past any default code lifetime; delivering them would be useless. */
const SWEEP_LOOKBACK_SECONDS = 15 * 60;
/**
 * The settle half looks at a send this long after it was accepted: a delivery claimed within a second of its
 * send is past its deadline by then (core/delivery-time.ts); one claimed later (restarted) is deferred to it.
 */
export const SETTLE_AGE_SECONDS = UNSETTLED_DEADLINE_SECONDS;
/**
 * How far back a half looks when its cursor is older (or absent: the first run): a sweeper that did not run for
 * longer leaves the sends before that unlooked-at (their deliveries may stay PENDING).
 */
const SETTLE_LOOKBACK_SECONDS = 60 * 60;
/** The deferred list's bound (the cursor is one item): beyond it the latest due are dropped, and counted. */
const MAX_DEFERRED = 2000;
/**
 * The most sends a half reads in one run: a run must end within its time-out, so a sweeper catching up after an
 * outage (or on its first run, an hour back) gets there over several runs (about 2 s of reads each).
 */
export const MAX_SENDS_PER_HALF = 20_000;
/** Verifications read per request (BatchGetItem's limit). */
const READ_BATCH = 100;

/** What one pass of the sweeper did; `failures`: the restarts and settlements that threw (the others went on). */
export interface SweepResult {
  restarted: string[];
  settled: DeliveryTaskOutput[];
  failures: unknown[];
  /** Verifications read in the pass (each once). */
  read: number;
  /** Deferred deliveries dropped because the list was full (a warning: they stay as they are). */
  dropped: number;
}

export type SettleSweepDeps = Omit<DeliveryDeps, 'store'> & {
  store: DeliveryStore & DeliverySweepStore;
  /** Restarts, in the settle half, a delivery still never claimed; without it such a delivery is left. */
  workflow?: DeliveryWorkflow;
};

/** One pass of the sweeper (the Lambda's every minute): both halves, their sends read in one batch. */
export async function sweepDeliveries(deps: SweeperDeps & SettleSweepDeps): Promise<SweepResult> {
  return sweep(deps, { restart: deps.workflow, settle: deps });
}

/**
 * The restart half alone: starts the delivery again of accepted sends whose workflow did not start
 * (StartExecution failed after the charge, or the execution died before its first task). Safe because the tasks
 * are idempotent: a channel already tried is not sent again.
 */
export async function restartStalledDeliveries(deps: SweeperDeps): Promise<string[]> {
  const result = await sweep(deps, { restart: deps.workflow });
  if (result.failures.length > 0) {
    throw new AggregateError(
      result.failures,
      `${result.failures.length} of ${result.read} delivery restarts failed`,
    );
  }
  return result.restarted;
}

/**
 * The settle half alone: ends deliveries claimed but not ended by their deadline (the first claim + the Express
 * limit + a margin, core/delivery-time.ts): their executions died, ran out of time, or failed in the settling
 * step itself. SENT or FAILED by the same rule as the workflow's end.
 */
export async function settleOverdueDeliveries(deps: SettleSweepDeps): Promise<DeliveryTaskOutput[]> {
  const result = await sweep(deps, { settle: deps });
  if (result.failures.length > 0) {
    throw new AggregateError(
      result.failures,
      `${result.failures.length} of ${result.read} delivery settlements failed`,
    );
  }
  return result.settled;
}

type Half = 'restart' | 'settle';

const later = (a: Date, b: Date) => (a > b ? a : b);
const justAfter = (iso: string) => new Date(new Date(iso).getTime() + 1);

/**
 * The span a half looks at in this run: from where its cursor stopped (or its lookback, if further back) to
 * `age` seconds ago. Undefined when there is nothing new.
 */
function spanOf(now: Date, through: string | undefined, ageSeconds: number, lookbackSeconds: number) {
  const to = new Date(now.getTime() - ageSeconds * 1000);
  const floor = new Date(to.getTime() - lookbackSeconds * 1000);
  const from = through ? later(justAfter(through), floor) : floor;
  return from <= to ? { from, to } : undefined;
}

/**
 * At most MAX_SENDS_PER_HALF of a span's sends, cut between two acceptance times (the cursor is a time, so the
 * sends of one millisecond are taken together); `through`: where the half's cursor goes if all goes well.
 */
function bounded(sends: AcceptedSend[], span: TimeSpan): { sends: AcceptedSend[]; through: Date } {
  if (sends.length <= MAX_SENDS_PER_HALF) return { sends, through: span.to };
  let cut = MAX_SENDS_PER_HALF;
  while (cut > 0 && sends[cut]!.at === sends[cut - 1]!.at) cut--;
  if (cut === 0) cut = sends.findIndex((send) => send.at !== sends[0]!.at);
  return { sends: sends.slice(0, cut), through: new Date(sends[cut - 1]!.at) };
}

/** The listing, the reads and the decisions of the halves in `parts` (absent: not run; its cursor kept). */
async function sweep(
  deps: Pick<SweeperDeps, 'store' | 'clock' | 'settings'>,
  parts: { restart?: DeliveryWorkflow; settle?: SettleSweepDeps },
): Promise<SweepResult> {
  const now = deps.clock.now();
  const cursor = await deps.store.getSweepCursor();
  // Sends older than the code lifetime (or 15 minutes) are not worth delivering.
  const restartLookback = Math.min(SWEEP_LOOKBACK_SECONDS, deps.settings.codeTtlSeconds);
  const spans: Partial<Record<Half, TimeSpan>> = {
    ...(parts.restart && {
      restart: spanOf(now, cursor?.restartedThrough, STALL_SECONDS, restartLookback - STALL_SECONDS),
    }),
    ...(parts.settle && {
      settle: spanOf(now, cursor?.settledThrough, SETTLE_AGE_SECONDS, SETTLE_LOOKBACK_SECONDS),
    }),
  };
  const listed: Partial<Record<Half, { sends: AcceptedSend[]; through: Date }>> = {};
  const toList = (Object.entries(spans) as [Half, TimeSpan | undefined][]).filter(
    (entry): entry is [Half, TimeSpan] => entry[1] !== undefined,
  );
  const sends = toList.length > 0 ? await deps.store.listAcceptedSends(toList.map(([, span]) => span)) : [];
  toList.forEach(([half, span], i) => (listed[half] = bounded(sends[i]!, span)));
  const inHalf = (half: Half) => new Set((listed[half]?.sends ?? []).map((send) => send.sid));
  const [inRestart, inSettle] = [inHalf('restart'), inHalf('settle')];
  const deferredDue = new Set(
    parts.settle
      ? Object.entries(cursor?.deferred ?? {})
          .filter(([, due]) => new Date(due) <= now)
          .map(([sid]) => sid)
      : [],
  );
  const wanted = [...new Set([...inRestart, ...inSettle, ...deferredDue])];

  const result: SweepResult = { restarted: [], settled: [], failures: [], read: wanted.length, dropped: 0 };
  // Still deferred: the cursor's entries not due yet (or whose half did not run) and those deferred now.
  const deferred: Record<string, string> = Object.fromEntries(
    Object.entries(cursor?.deferred ?? {}).filter(([sid]) => !deferredDue.has(sid)),
  );
  // The acceptance time of the oldest send each half failed on: its cursor stops just before it, so the next run
  // tries it again (and reads the sends after it again, harmlessly: every action is idempotent).
  const failedAt: Partial<Record<Half, Date>> = {};
  const fail = (sid: string, verification: Verification, error: unknown) => {
    result.failures.push(error);
    const half: Half | undefined = inSettle.has(sid) ? 'settle' : inRestart.has(sid) ? 'restart' : undefined;
    const created = new Date(verification.dateCreated);
    if (half && (!failedAt[half] || created < failedAt[half])) failedAt[half] = created;
    if (!half) deferred[sid] = now.toISOString();
  };

  /** Starts the delivery again if its record, read up to date (the batch read may be stale), is still unclaimed. */
  const startAgain = async (sid: string, workflow: DeliveryWorkflow): Promise<boolean> => {
    const latest = await deps.store.getVerification(sid);
    if (latest?.deliveryStatus !== 'PENDING' || firstClaimAt(latest)) return false;
    await workflow.start({ sid, waitSeconds: deps.settings.channelWaitSeconds, restart: true });
    result.restarted.push(sid);
    return true;
  };

  const settle = async (verification: Verification, settleDeps: SettleSweepDeps) => {
    const claimedAt = firstClaimAt(verification);
    if (!claimedAt) {
      // Never claimed, even after the restart half's restart: start it again while it is worth delivering, and
      // look again once that claim could be due. Without a workflow (the settle half alone), it is left.
      const created = new Date(verification.dateCreated).getTime();
      if (!settleDeps.workflow || created < now.getTime() - restartLookback * 1000) return;
      if (await startAgain(verification.sid, settleDeps.workflow)) {
        deferred[verification.sid] = settleDeadline(now).toISOString();
      }
      return;
    }
    const deadline = settleDeadline(claimedAt);
    if (deadline > now) {
      deferred[verification.sid] = deadline.toISOString();
      return;
    }
    const latest = await settleDeps.store.getVerification(verification.sid);
    if (latest?.deliveryStatus !== 'PENDING') return;
    const input = { sid: verification.sid, channelIndex: 0, waitSeconds: deps.settings.channelWaitSeconds };
    result.settled.push(await settlePendingDelivery(settleDeps, latest, input));
  };

  // In batches: a run catching up may read many thousands, and holds one batch of records at a time.
  for (let i = 0; i < wanted.length; i += READ_BATCH) {
    for (const verification of await deps.store.readVerifications(wanted.slice(i, i + READ_BATCH))) {
      const sid = verification.sid;
      if (verification.deliveryStatus !== 'PENDING') continue;
      try {
        if ((inSettle.has(sid) || deferredDue.has(sid)) && parts.settle)
          await settle(verification, parts.settle);
        else if (!firstClaimAt(verification) && parts.restart) await startAgain(sid, parts.restart);
      } catch (error) {
        fail(sid, verification, error);
      }
    }
  }

  const entries = Object.entries(deferred).sort(([, a], [, b]) => a.localeCompare(b));
  result.dropped = Math.max(0, entries.length - MAX_DEFERRED);
  // A half that ran moves its cursor to the end of its span, or to just before the oldest send it failed on.
  const through = (half: Half, kept: string | undefined, lookbackSeconds: number): string => {
    const span = spans[half];
    if (!span) return kept ?? spanFloor(now, lookbackSeconds);
    return (failedAt[half] ? new Date(failedAt[half].getTime() - 1) : listed[half]!.through).toISOString();
  };
  const next: SweepCursor = {
    restartedThrough: through('restart', cursor?.restartedThrough, restartLookback),
    settledThrough: through('settle', cursor?.settledThrough, SETTLE_AGE_SECONDS + SETTLE_LOOKBACK_SECONDS),
    deferred: Object.fromEntries(entries.slice(0, MAX_DEFERRED)),
    version: (cursor?.version ?? 0) + 1,
  };
  // Lost to a run that saved first: this run's work stands (every action is idempotent); its cursor does not.
  await deps.store.saveSweepCursor(next, cursor);
  return result;
}

/** The cursor of a half that has never run: as if it had looked up to its lookback before now. */
const spanFloor = (now: Date, seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();

/** When the delivery's first channel was claimed (channels are tried from 0); none before the first task. */
const firstClaimAt = (verification: Verification): Date | undefined => {
  const first = verification.deliveries['0'];
  return first ? new Date(first.at) : undefined;
};
