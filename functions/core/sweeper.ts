import { settlePendingDelivery, type DeliveryDeps, type DeliveryTaskOutput } from './delivery';
import { settleDeadline } from './delivery-time';
import type { Verification } from './model';
import type { Clock, DeliveryStore, DeliveryWorkflow, PendingDeliveryStore } from './ports';
import type { Settings } from './settings';

export interface SweeperDeps {
  store: PendingDeliveryStore & Pick<DeliveryStore, 'getVerification'>;
  workflow: DeliveryWorkflow;
  clock: Clock;
  settings: Settings;
}

/** A delivery not started this long after the send is taken as stalled; a healthy one starts within a second. */
export const STALL_SECONDS = 30;
/** Sends older than this are past any default code lifetime; delivering them would be useless. */
export const SWEEP_LOOKBACK_SECONDS = 15 * 60;

/** What one pass of the sweeper did; `failures`: the restarts and settlements that threw (the others went on). */
export interface SweepResult {
  restarted: string[];
  settled: DeliveryTaskOutput[];
  failures: unknown[];
  /** Index entries read (each verification once). */
  read: number;
}

/**
 * How far back the sweeper looks for unsettled deliveries past their deadline: a sweeper that did not run for
 * this long (an hour of missed schedules) leaves older ones PENDING. The index partitions it reads hold every
 * delivery not ended; those old enough to be read here are few unless something went wrong.
 */
export const SETTLE_LOOKBACK_SECONDS = 60 * 60;

export type SettleSweepDeps = Omit<DeliveryDeps, 'store'> & {
  store: DeliveryStore & PendingDeliveryStore;
};

/**
 * One pass of the sweeper (the Lambda's every minute): both halves below over one listing of the index and one
 * read of each entry's item. Their windows overlap (sends 6 to 15 minutes old are in both), so two listings would
 * query the same index partitions twice and read those items twice.
 */
export async function sweepDeliveries(deps: SweeperDeps & SettleSweepDeps): Promise<SweepResult> {
  return sweepPending(deps, { restart: deps.workflow, settle: deps });
}

/**
 * The outbox drain: restarts the delivery of accepted sends whose workflow did not start (StartExecution
 * failed after the charge, or the execution died before its first task). Restarting is safe because the
 * tasks are idempotent: a channel already tried is not sent again.
 */
export async function restartStalledDeliveries(deps: SweeperDeps): Promise<string[]> {
  const result = await sweepPending(deps, { restart: deps.workflow });
  if (result.failures.length > 0) {
    throw new AggregateError(
      result.failures,
      `${result.failures.length} of ${result.read} delivery restarts failed`,
    );
  }
  return result.restarted;
}

/**
 * Settles deliveries claimed but never ended by their deadline (the first claim + the Express limit + a
 * margin, core/delivery-time.ts): their executions died, ran out of time, or failed in the settling step
 * itself. SENT or FAILED by the same rule as the workflow's end. Found in the sparse index, never by a scan:
 * a delivery is claimed at most SWEEP_LOOKBACK_SECONDS after its send (a restart), so those due in the last
 * SETTLE_LOOKBACK_SECONDS were created in the window read here.
 */
export async function settleOverdueDeliveries(deps: SettleSweepDeps): Promise<DeliveryTaskOutput[]> {
  const result = await sweepPending(deps, { settle: deps });
  if (result.failures.length > 0) {
    throw new AggregateError(
      result.failures,
      `${result.failures.length} of ${result.read} delivery settlements failed`,
    );
  }
  return result.settled;
}

type Window = { from: number; to: number };
const within = (at: number, window: Window | undefined) => !!window && at >= window.from && at <= window.to;

/** The listing, the reads and the decisions of both halves; `parts`: what each half needs (absent: not run). */
async function sweepPending(
  deps: Pick<SweeperDeps, 'store' | 'clock' | 'settings'>,
  parts: { restart?: DeliveryWorkflow; settle?: SettleSweepDeps },
): Promise<SweepResult> {
  const now = deps.clock.now();
  const at = now.getTime();
  const lookback = Math.min(SWEEP_LOOKBACK_SECONDS, deps.settings.codeTtlSeconds);
  const deadlineSpan = settleDeadline(now).getTime() - at;
  // By creation time: a restart only for sends young enough to be worth delivering and old enough to be
  // stalled; a settlement for those created in the hour (and more) before a delivery could be overdue.
  const restartWindow = parts.restart
    ? { from: at - lookback * 1000, to: at - STALL_SECONDS * 1000 }
    : undefined;
  const settleWindow = parts.settle
    ? {
        from: at - (SETTLE_LOOKBACK_SECONDS + SWEEP_LOOKBACK_SECONDS) * 1000 - deadlineSpan,
        to: at - deadlineSpan,
      }
    : undefined;
  const windows = [restartWindow, settleWindow].filter((window): window is Window => !!window);
  const sids = await deps.store.listPendingDeliveries(
    new Date(Math.min(...windows.map((window) => window.from))),
    new Date(Math.max(...windows.map((window) => window.to))),
  );
  // One failed restart or settlement must not hold up the deliveries behind it: each is tried; the failed ones
  // stay in the index for the next run, and the run still fails (the function's error alarm).
  const result: SweepResult = { restarted: [], settled: [], failures: [], read: sids.length };
  for (const sid of sids) {
    try {
      // Read first: the index is eventually consistent, and a delivery that ended a moment ago is left alone
      // (and not reported twice). The index holds every delivery not yet ended, claimed or not (a claim does
      // not touch it: moving the entry cost 2 index write units per send).
      const verification = await deps.store.getVerification(sid);
      if (verification?.deliveryStatus !== 'PENDING') continue;
      const created = new Date(verification.dateCreated).getTime();
      const claimedAt = firstClaimAt(verification);
      if (!claimedAt) {
        // Never claimed: its workflow did not start or died before its first task. Restart it; one whose
        // workflow runs or died after a claim is left to the workflow or to the settlement.
        if (!parts.restart || !within(created, restartWindow)) continue;
        await parts.restart.start({ sid, waitSeconds: deps.settings.channelWaitSeconds, restart: true });
        result.restarted.push(sid);
      } else if (parts.settle && within(created, settleWindow) && settleDeadline(claimedAt) <= now) {
        const input = { sid, channelIndex: 0, waitSeconds: deps.settings.channelWaitSeconds };
        result.settled.push(await settlePendingDelivery(parts.settle, verification, input));
      }
    } catch (error) {
      result.failures.push(error);
    }
  }
  return result;
}

/** When the delivery's first channel was claimed (channels are tried from 0); none before the first task. */
const firstClaimAt = (verification: Verification): Date | undefined => {
  const first = verification.deliveries['0'];
  return first ? new Date(first.at) : undefined;
};
