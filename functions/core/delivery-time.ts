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
 * A conservative budget for one task run: a provider call's time-out (3 s for the HTTP carrier, 5 s for the
 * AWS messaging clients and Vonage: aws-errors.ts), a cold start that reads the
 * master key, a handful of DynamoDB round trips, and the first retry's 1 s pause with a fast second run.
 * A task slower than this (more retries, a 30 s Lambda time-out) may push the execution past the limit;
 * the sweeper then settles the delivery (see UNSETTLED_DEADLINE_SECONDS).
 */
export const TASK_RUN_BUDGET_SECONDS = 10;

/**
 * One status read of a receipt wait at its slowest: the state's own time-out (`TimeoutSeconds` of
 * ReadDeliveryStatus in statemachine/delivery.asl.json; a test holds the two equal). A read that times out
 * only means waiting on, so the wait's Wait states still run in full after it.
 */
export const STATUS_READ_BUDGET_SECONDS = 1;

export interface DeliveryTimeBudget {
  channels: number;
  waitSeconds: number;
  /** Task runs of the longest path: DeliverOverChannel and AfterWait per channel, and one settling run. */
  taskRuns: number;
  /** Status reads of the longest path: those of each channel's wait (`receiptWaitSteps`). */
  statusReads: number;
  totalSeconds: number;
  /** The longest channel wait that fits the limit with this many channels (negative: none does). */
  maxWaitSeconds: number;
}

const statusReadsOf = (waitSeconds: number) => receiptWaitSteps(waitSeconds).length - 1;

/**
 * The longest normal delivery over `channels` channels: every channel accepts and stays silent, so each gets
 * a deliver task, the full wait with its status reads (each at its time-out) and an after-wait task; a settling
 * task run is allowed for on top.
 */
export function deliveryTimeBudget(channels: number, waitSeconds: number): DeliveryTimeBudget {
  const taskRuns = 2 * channels + 1;
  const taskSeconds = taskRuns * TASK_RUN_BUDGET_SECONDS;
  const seconds = (wait: number) =>
    channels * (wait + statusReadsOf(wait) * STATUS_READ_BUDGET_SECONDS) + taskSeconds;
  // The reads grow with the wait (log2), so the longest wait that fits is found from the reads' lower bound down.
  let maxWaitSeconds = Math.floor((EXPRESS_EXECUTION_LIMIT_SECONDS - taskSeconds) / Math.max(channels, 1));
  while (maxWaitSeconds >= 0 && seconds(maxWaitSeconds) > EXPRESS_EXECUTION_LIMIT_SECONDS) maxWaitSeconds--;
  return {
    channels,
    waitSeconds,
    taskRuns,
    statusReads: channels * statusReadsOf(waitSeconds),
    totalSeconds: seconds(waitSeconds),
    maxWaitSeconds,
  };
}

/**
 * One channel's receipt wait as the state machine runs it (statemachine/delivery.asl.json): Wait states of these
 * lengths, in seconds, a read of the delivery status (Step Functions' own DynamoDB GetItem, no Lambda) after
 * each but the last, and the AfterWait task after the last. The reads come 1, 2, 4, ... seconds into the wait
 * and end the execution as soon as the delivery is settled (a receipt said DELIVERED), so Express bills
 * about the receipt's delay, not the whole wait; the steps add up to `waitSeconds`, so without a receipt the
 * AfterWait task (the next channel) runs when it did with one Wait state, later only by the reads' own latency.
 * The default 8 s: `[1, 1, 2, 4]`, reads at 1, 2 and 4 s (3 at most), AfterWait at 8 s.
 */
export function receiptWaitSteps(waitSeconds: number): number[] {
  const steps: number[] = [];
  let at = 0;
  for (let read = 1; read < waitSeconds; read *= 2) {
    steps.push(read - at);
    at = read;
  }
  steps.push(waitSeconds - at);
  return steps;
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

/**
 * The verification item's attribute that a failure receipt sets to its channel index (a string), and that the
 * state machine's status read projects with `delivery_status`: when it names the channel being waited on, the
 * wait ends at that read and the next channel is tried, rather than after the whole channel wait.
 */
export const RECEIPT_FAILED_ATTRIBUTE = 'receipt_failed';
