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

/**
 * The outbox drain: restarts the delivery of accepted sends whose workflow did not start (StartExecution
 * failed after the charge, or the execution died before its first task). Restarting is safe because the
 * tasks are idempotent: a channel already tried is not sent again.
 */
export async function restartStalledDeliveries(deps: SweeperDeps): Promise<string[]> {
  const now = deps.clock.now().getTime();
  const lookback = Math.min(SWEEP_LOOKBACK_SECONDS, deps.settings.codeTtlSeconds);
  const waiting = await deps.store.listPendingDeliveries(
    new Date(now - lookback * 1000),
    new Date(now - STALL_SECONDS * 1000),
  );
  // One failed start must not hold up the deliveries behind it: try each; the failed ones stay in the index
  // for the next run, and the run still fails (the function's error alarm) once the others were started.
  const failures: unknown[] = [];
  const stalled: string[] = [];
  for (const sid of waiting) {
    try {
      // The index holds every delivery not yet ended, claimed or not (a claim does not touch it: moving the
      // entry cost 2 index write units per send). Only a delivery no task ever claimed is restarted; one whose
      // workflow is running or died after a claim is left to the workflow or to settleOverdueDeliveries.
      const verification = await deps.store.getVerification(sid);
      if (verification?.deliveryStatus !== 'PENDING' || firstClaimAt(verification)) continue;
      await deps.workflow.start({ sid, waitSeconds: deps.settings.channelWaitSeconds, restart: true });
      stalled.push(sid);
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) {
    throw new AggregateError(failures, `${failures.length} of ${waiting.length} delivery restarts failed`);
  }
  return stalled;
}

/** When the delivery's first channel was claimed (channels are tried from 0); none before the first task. */
const firstClaimAt = (verification: Verification): Date | undefined => {
  const first = verification.deliveries['0'];
  return first ? new Date(first.at) : undefined;
};

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
 * Settles deliveries claimed but never ended by their deadline (the first claim + the Express limit + a
 * margin, core/delivery-time.ts): their executions died, ran out of time, or failed in the settling step
 * itself. SENT or FAILED by the same rule as the workflow's end. Found in the sparse index, never by a scan:
 * a delivery is claimed at most SWEEP_LOOKBACK_SECONDS after its send (a restart), so those due in the last
 * SETTLE_LOOKBACK_SECONDS were created in the window read here.
 */
export async function settleOverdueDeliveries(deps: SettleSweepDeps): Promise<DeliveryTaskOutput[]> {
  const now = deps.clock.now();
  const deadlineSpan = (settleDeadline(now).getTime() - now.getTime()) / 1000;
  const candidates = await deps.store.listPendingDeliveries(
    new Date(now.getTime() - (SETTLE_LOOKBACK_SECONDS + SWEEP_LOOKBACK_SECONDS + deadlineSpan) * 1000),
    new Date(now.getTime() - deadlineSpan * 1000),
  );
  const settled: DeliveryTaskOutput[] = [];
  const failures: unknown[] = [];
  for (const sid of candidates) {
    try {
      // Read first: the index is eventually consistent, and a delivery that ended a moment ago is left alone
      // (and not reported as settled twice). Never claimed: the restart's business, not this.
      const verification = await deps.store.getVerification(sid);
      const claimedAt = verification && firstClaimAt(verification);
      if (verification?.deliveryStatus !== 'PENDING' || !claimedAt) continue;
      if (settleDeadline(claimedAt) > now) continue;
      const input = { sid, channelIndex: 0, waitSeconds: deps.settings.channelWaitSeconds };
      settled.push(await settlePendingDelivery(deps, verification, input));
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) {
    throw new AggregateError(
      failures,
      `${failures.length} of ${candidates.length} delivery settlements failed`,
    );
  }
  return settled;
}
