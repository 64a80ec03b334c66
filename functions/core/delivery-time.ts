/**
 * How long a delivery may take, and when one is taken as abandoned. The delivery workflow is a Step Functions
 * Express state machine: AWS stops an Express execution after five minutes, whatever state it is in, without
 * running any `Catch`. So the longest normal delivery must fit in that limit (refused at synth time,
 * lib/config.ts), and a delivery still unsettled well after it can have no live execution left: the sweeper
 * finishes it from the record.
 */

/** Step Functions Express ends an execution after five minutes (AWS quota, not adjustable). */
export const EXPRESS_EXECUTION_LIMIT_SECONDS = 300;

/**
 * A conservative budget for one task run: the carrier call's 3 s time-out, a cold start that reads the
 * master key, a handful of DynamoDB round trips, and the first retry's 1 s pause with a fast second run.
 * A task slower than this (more retries, a 30 s Lambda time-out) may push the execution past the limit;
 * the sweeper then settles the delivery (see UNSETTLED_DEADLINE_SECONDS).
 */
export const TASK_RUN_BUDGET_SECONDS = 10;

export interface DeliveryTimeBudget {
  channels: number;
  waitSeconds: number;
  /** Task runs of the longest path: DeliverOverChannel and AfterWait per channel, and one settling run. */
  taskRuns: number;
  totalSeconds: number;
  /** The longest channel wait that fits the limit with this many channels (negative: none does). */
  maxWaitSeconds: number;
}

/**
 * The longest normal delivery over `channels` channels: every channel accepts and stays silent, so each gets
 * a deliver task, the full wait and an after-wait task; a settling task run is allowed for on top.
 */
export function deliveryTimeBudget(channels: number, waitSeconds: number): DeliveryTimeBudget {
  const taskRuns = 2 * channels + 1;
  const taskSeconds = taskRuns * TASK_RUN_BUDGET_SECONDS;
  return {
    channels,
    waitSeconds,
    taskRuns,
    totalSeconds: channels * waitSeconds + taskSeconds,
    maxWaitSeconds: Math.floor((EXPRESS_EXECUTION_LIMIT_SECONDS - taskSeconds) / Math.max(channels, 1)),
  };
}

/**
 * A delivery whose first channel was claimed this long ago and that is still PENDING is settled by the sweeper.
 * The execution that made the claim ended by then (the Express limit); the margin covers a restart the sweeper
 * started from a not yet updated index entry just after the claim (a sweeper run lasts under 50 s).
 */
export const UNSETTLED_DEADLINE_SECONDS = EXPRESS_EXECUTION_LIMIT_SECONDS + 60;

/** When a delivery whose first channel was claimed at `claimedAt` must have been settled. */
export const settleDeadline = (claimedAt: Date): Date =>
  new Date(claimedAt.getTime() + UNSETTLED_DEADLINE_SECONDS * 1000);
