import type { Clock, DeliveryWorkflow, PendingDeliveryStore } from './ports';
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
