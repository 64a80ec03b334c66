import { settlePendingDelivery, type DeliveryDeps, type DeliveryTaskOutput } from './delivery';
import type {
  Clock,
  DeliveryStore,
  DeliveryWorkflow,
  PendingDeliveryStore,
  UnsettledDeliveryStore,
} from './ports';
import type { Settings } from './settings';

export interface SweeperDeps {
  store: PendingDeliveryStore;
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
  const stalled = await deps.store.listPendingDeliveries(
    new Date(now - lookback * 1000),
    new Date(now - STALL_SECONDS * 1000),
  );
  // One failed start must not hold up the deliveries behind it: try each; the failed ones stay in the index
  // for the next run, and the run still fails (the function's error alarm) once the others were started.
  const failures: unknown[] = [];
  for (const sid of stalled) {
    try {
      await deps.workflow.start({ sid, waitSeconds: deps.settings.channelWaitSeconds, restart: true });
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) {
    throw new AggregateError(failures, `${failures.length} of ${stalled.length} delivery restarts failed`);
  }
  return stalled;
}

/**
 * How far back the sweeper looks for unsettled deliveries past their deadline: a sweeper that did not run for
 * this long (an hour of missed schedules) leaves older ones PENDING. One Query per minute of it, on an index
 * partition that is empty unless something went wrong.
 */
export const SETTLE_LOOKBACK_SECONDS = 60 * 60;

export type SettleSweepDeps = Omit<DeliveryDeps, 'store'> & {
  store: DeliveryStore & UnsettledDeliveryStore;
};

/**
 * Settles deliveries claimed but never ended by their deadline (the first claim + the Express limit + a
 * margin, core/delivery-time.ts): their executions died, ran out of time, or failed in the settling step
 * itself. SENT or FAILED by the same rule as the workflow's end. Found in the sparse index, never by a scan.
 */
export async function settleOverdueDeliveries(deps: SettleSweepDeps): Promise<DeliveryTaskOutput[]> {
  const now = deps.clock.now();
  const overdue = await deps.store.listUnsettledDeliveries(
    new Date(now.getTime() - SETTLE_LOOKBACK_SECONDS * 1000),
    now,
  );
  const settled: DeliveryTaskOutput[] = [];
  const failures: unknown[] = [];
  for (const sid of overdue) {
    try {
      // Read first: the index is eventually consistent, and a delivery that ended a moment ago is left alone
      // (and not reported as settled twice).
      const verification = await deps.store.getVerification(sid);
      if (verification?.deliveryStatus !== 'PENDING') continue;
      const input = { sid, channelIndex: 0, waitSeconds: deps.settings.channelWaitSeconds };
      settled.push(await settlePendingDelivery(deps, verification, input));
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) {
    throw new AggregateError(failures, `${failures.length} of ${overdue.length} delivery settlements failed`);
  }
  return settled;
}
