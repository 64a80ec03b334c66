/**
 * Part 5: the AWS bill of one million verifications, from the figures this run counted and measured.
 *
 * A verification: one send (accepted), one check with the right code, two fetches, delivered on the first
 * channel (deliver task, the receipt callback, then the receipt wait's first status read sees DELIVERED and
 * the execution ends: no after-wait task, about 1 s of the 8-second wait billed). `receiptDelays` prices the
 * same delivery for receipts that come after 1, 2, 4 and 8 seconds, against one Wait state of 8 s. The
 * sweeper's look at the send (its charge line listed and its record read by both halves, counted on a batch:
 * bench/counts.ts) is in the DynamoDB line; what each of its runs costs whatever the volume (one a minute) is
 * not per verification, and is priced apart, per month (`sweeperPerRun`).
 *
 * That definition is the target's. Beside it, `assumedReceipts` prices the same bill with the delivery as
 * expected under the provider fee model's assumed receipts (bench/fees.ts): per sample country, its channels in
 * order, with their slower receipts, failures and silences (`expectedWorkflow`).
 *
 * Prices: public list prices for us-east-1, each with the AWS page it was checked against (docs/bench.md, "Cost
 * model", gives the date). They are NOT fetched when the bench runs; check them again before quoting a figure.
 */
import { receiptWaitSteps } from '../functions/core/delivery-time';
import { DEFAULT_SETTINGS } from '../functions/core/settings';
import type { Channel } from '../functions/core/routing';
import type { CountResults, OperationCount, PathCount } from './counts';
import { ASSUMED_RECEIPTS, lateShare, sampleFees, type ReceiptDelay, type ReceiptTiming } from './fees';
import type { LatencyResults } from './latency';
import { round } from './stats';

export const PRICES = {
  region: 'us-east-1',
  takenFor: 'public list prices checked on the AWS pages named in bench/cost.ts (not fetched at run time)',
  /**
   * HTTP API, first 300 million requests a month, per million (metered in 512 KB steps). AWS whitepaper "Best
   * Practices for Designing Amazon API Gateway Private APIs and Private Integration", Cost optimization, Table 4.
   */
  apiGatewayHttpPerMillion: 1.0,
  /** Lambda, per million requests: aws.amazon.com/lambda/pricing, example 1. */
  lambdaRequestsPerMillion: 0.2,
  /**
   * Lambda arm64, per GB-second, first 7.5 billion GB-s a month: x86's $0.0000166667 (the pricing page's
   * examples) less the 20 % the Graviton2 launch post gives Arm (AWS News Blog, 2021-09-29); the tiers from
   * "Introducing tiered pricing for AWS Lambda" (AWS Compute Blog).
   */
  lambdaArmPerGbSecond: 0.0000133334,
  /**
   * DynamoDB on-demand, Standard table class, per million write request units (after the November 2024 cut).
   * aws.amazon.com/dynamodb/pricing/on-demand renders its rates in the browser: this one and the next are
   * third-party transcriptions of it, not AWS's own text.
   */
  dynamoDbPerMillionWru: 0.625,
  /** DynamoDB on-demand, per million read request units (see above). */
  dynamoDbPerMillionRru: 0.125,
  /** Step Functions Express, per million requests: aws.amazon.com/step-functions/pricing, Express example. */
  stepFunctionsExpressPerMillionRequests: 1.0,
  /** Express duration, per GB-second: the same example's $0.06 per GB-hour for the first 1,000 GB-hours. */
  stepFunctionsExpressPerGbSecond: 0.00001667,
  /** The same page: duration "rounded up to the nearest 100ms", memory "billed in 64-MB chunks". */
  stepFunctionsExpressMemoryGb: 64 / 1024,
  stepFunctionsExpressDurationStepMs: 100,
  /**
   * CloudWatch Logs ingestion, Standard class, per GB (also the first tier of Lambda's tiered log pricing). No
   * AWS text of it was found: a third-party figure.
   */
  cloudWatchLogsIngestPerGb: 0.5,
  /** X-Ray, per million traces recorded: aws.amazon.com/xray/pricing ("48,800 traces * $0.000005"). */
  xRayPerMillionTraces: 5.0,
  // The optional edge (`otp:edge`), checked on the pricing pages (docs/deploy.md, "The edge").
  /** CloudFront, HTTPS requests from the US and Europe, per million ($0.0100 per 10,000). */
  cloudFrontHttpsPerMillion: 1.0,
  /** CloudFront data transfer out to the internet, US and Europe, first 10 TB, per GB. */
  cloudFrontOutPerGb: 0.085,
  /** AWS WAF, per million requests the WebACL inspects. */
  wafPerMillion: 0.6,
  /** AWS WAF, per WebACL and per rule (a managed rule group is one), per month. */
  wafWebAclPerMonth: 5.0,
  wafRulePerMonth: 1.0,
} as const;

/** Assumptions of the projection to AWS; each is a guess and is reported as such. */
export const ASSUMPTIONS = {
  lambdaMemoryMb: 256,
  /** Lambda gives a function CPU in proportion to memory: one vCPU at 1,769 MB. */
  lambdaCpuSlowdown: 1769 / 256,
  /** One DynamoDB request from a Lambda in the same region, SDK work included, ms. */
  dynamoDbRequestMs: { GetItem: 5, UpdateItem: 6, BatchGetItem: 6, TransactWriteItems: 12 } as Record<
    string,
    number
  >,
  /** StartExecution of an Express workflow, from the send function, ms. */
  startExecutionMs: 15,
  /**
   * One status read of the receipt wait (Step Functions' DynamoDB GetItem and the Pass and Choice states
   * around it), ms of execution time on top of the Wait states' own seconds.
   */
  statusReadMs: 20,
  /** The carrier's API answering a message, from the deliver task, ms. */
  carrierApiMs: 150,
  /** Lambda's own START, END and REPORT lines per invocation, bytes. */
  lambdaPlatformLogBytes: 350,
  /**
   * One Step Functions execution history event, bytes. The stack logs executions at level ERROR, so a
   * successful delivery logs none; kept to show what level ALL would add.
   */
  stepFunctionsLogEventBytes: 350,
  /** The state machine's log level in lib/otp-stack.ts. */
  stepFunctionsLogLevel: 'ERROR' as 'ERROR' | 'ALL',
  /**
   * Lambda's active tracing samples "1 request per second and 5 percent of additional requests" and cannot be
   * configured (Lambda developer guide, "Visualize Lambda function invocations using AWS X-Ray"). Below a few
   * traces a second the reservoir records most of them, not 5 %: `xRaySampledShare` takes the volume. One
   * reservoir for the whole account is taken, the fewest traces it can record.
   */
  xRayReservoirPerSecond: 1,
  xRayFixedRate: 0.05,
  /** The channel wait on AWS: the default. */
  channelWaitSeconds: DEFAULT_SETTINGS.channelWaitSeconds,
  /** Receipt delays the `receiptDelays` table prices, s after the deliver task handed the message over. */
  receiptDelaysSeconds: [1, 2, 4, 8],
  /**
   * The sweeper's runs a month (its schedule: one a minute, 30 days). Per run costs, not per verification: what
   * a run costs finding nothing (its cursor read and written, the directory listed once and, for each half, every
   * service's ledger: as many queries as services) is priced per month in `sweeperPerRun`, apart from the bill
   * per million. (The Lambda's duration per run is not measured here: only its invocations are priced.)
   */
  sweeperRunsPerMonth: 30 * 24 * 60,
  /**
   * The monthly volume the bill per million verifications is priced at. The guard's stream consumer costs per
   * batch (a batching window with stream records in it), not per send: per send it grows as the volume falls, so
   * the bill prices it as measured at this volume's rate (`countGuardConsumer`), a 30-day month's sends evenly
   * spread. A million a month is 0.39 sends a second.
   */
  billMonthlyVerifications: 1_000_000,
  /** The month the volumes are of: 30 days, as the sweeper's runs. */
  secondsPerMonth: 30 * 24 * 3600,
  /** One answer of the API through the edge (a verification's JSON and headers), bytes. */
  edgeAnswerBytes: 1024,
  /** The edge WebACL's rules (lib/constructs/edge.ts; its template test holds the two equal). */
  edgeWafRules: 6,
};

/**
 * The share of traces X-Ray records when they come at `tracesPerSecond`: the reservoir's one a second, then
 * `xRayFixedRate` of the rest (all of them while they come slower than the reservoir).
 */
export function xRaySampledShare(tracesPerSecond: number): number {
  const reservoir = ASSUMPTIONS.xRayReservoirPerSecond;
  if (tracesPerSecond <= reservoir) return 1;
  return (reservoir + ASSUMPTIONS.xRayFixedRate * (tracesPerSecond - reservoir)) / tracesPerSecond;
}

/**
 * The optional edge (`otp:edge`), priced apart from the totals: every API request of a verification passes
 * CloudFront and the WebACL (the receipt callbacks keep coming to the API or the function URL), plus the
 * WebACL's fixed monthly charge. From the counted requests, so it renders from any saved results.
 */
export function edgeCost(cost: Pick<CostResults, 'perVerification' | 'totalWithReceiptsOnFunctionUrl'>): {
  requests: number;
  usdPerMillion: number;
  usdPerMonth: number;
} {
  const callbacks = cost.totalWithReceiptsOnFunctionUrl?.callbacks ?? 1;
  const requests = cost.perVerification.apiGatewayRequests - callbacks;
  const perRequest = (PRICES.cloudFrontHttpsPerMillion + PRICES.wafPerMillion) / 1_000_000;
  const outGb = (requests * ASSUMPTIONS.edgeAnswerBytes) / 1024 ** 3;
  return {
    requests,
    usdPerMillion: round(perMillion(perRequest, requests) + perMillion(PRICES.cloudFrontOutPerGb, outGb), 2),
    usdPerMonth: PRICES.wafWebAclPerMonth + ASSUMPTIONS.edgeWafRules * PRICES.wafRulePerMonth,
  };
}

/**
 * Where one channel's receipt wait ends for a receipt that comes `receiptSeconds` into it: at the first status
 * read at or after it (the execution ends there), or, none being left, at the AfterWait task after the whole
 * wait (which reads the record itself and ends the delivery, or moves on).
 */
function receiptWaitEnd(
  waitSeconds: number,
  receiptSeconds: number,
): { endsAtSeconds: number; reads: number; afterWait: boolean } {
  const steps = receiptWaitSteps(waitSeconds);
  let at = 0;
  for (const [index, step] of steps.entries()) {
    at += step;
    if (index === steps.length - 1) return { endsAtSeconds: at, reads: index, afterWait: true };
    if (receiptSeconds <= at) return { endsAtSeconds: at, reads: index + 1, afterWait: false };
  }
  return { endsAtSeconds: at, reads: 0, afterWait: true };
}

/** One part of the delivery workflow, USD per million verifications, by line of the bill. */
interface PartUsd {
  lambda: number;
  dynamoDb: number;
  apiGateway: number;
}

/**
 * The delivery workflow's parts as the cost model prices them (projected to AWS), for `expectedWorkflow`: each
 * part's Express time (ms, on top of the Wait states' own seconds) and its price by line.
 */
export interface WorkflowUnits {
  waitSeconds: number;
  ms: { deliver: number; refusal: number; statusRead: number; afterWait: number; finish: number };
  usd: {
    /** The deliver task: Lambda request and duration (the carrier's API included), its claim's read and write. */
    deliver: PartUsd;
    /** What a refusal adds to its deliver task: the refusal written to the record at once. */
    refusal: PartUsd;
    /** One status read: Step Functions' own eventually consistent GetItem. */
    statusRead: PartUsd;
    /** The AfterWait task: Lambda, and its strongly consistent read. */
    afterWait: PartUsd;
    /** The end after the last channel (SENT or FAILED), in the task that finds no channel left: a read and a write. */
    finish: PartUsd;
    /** One receipt callback: API Gateway request, the receipt Lambda, its read and write. */
    callback: PartUsd;
  };
}

/** The delivery workflow of one verification, expected under a `ReceiptTiming` table. */
export interface WorkflowExpectation {
  channels: Channel[];
  /** Expected runs per verification of each part (`finish`: executions ending with no channel left). */
  runs: {
    deliver: number;
    refusal: number;
    statusRead: number;
    afterWait: number;
    finish: number;
    callback: number;
  };
  /** Express duration billed, expected per execution, s (each outcome's duration rounded up to 100 ms). */
  billedSeconds: number;
  /** USD per million verifications; `stepFunctions` holds the execution's request and its duration. */
  usd: { stepFunctions: number; lambda: number; dynamoDb: number; apiGateway: number };
  /** Of `usd`, the parts the `receiptDelays` rows price: Express, the status reads, the AfterWait task. */
  waitUsd: { express: number; statusReads: number; afterWait: number };
}

/** Points standing for a delay's tail beyond `afterMs`, each carrying an equal share of it (quantile midpoints). */
function tailPoints(delay: ReceiptDelay, afterMs: number, points: number): number[] {
  const tail = lateShare(delay, afterMs);
  if (tail <= 0) return [];
  if (delay.kind === 'fixed') return [delay.ms];
  return Array.from({ length: points }, (_, index) => {
    const target = tail * (1 - (index + 0.5) / points);
    // Bisection on the log of the delay: lateShare falls as the delay grows.
    let low = Math.log(afterMs);
    let high = Math.log(afterMs) + 20;
    for (let step = 0; step < 60; step++) {
      const middle = (low + high) / 2;
      if (lateShare(delay, Math.exp(middle)) > target) low = middle;
      else high = middle;
    }
    return Math.exp((low + high) / 2);
  });
}

/**
 * The delivery workflow's expected cost per verification over `channels`, tried in order, with the receipts
 * `timing` (the provider fee model's, bench/fees.ts), computed exactly over its outcomes (no sampling; a delay's
 * tail beyond the wait as `tailPoints` quantiles). Each channel tried runs its deliver task, then:
 *
 * - refused at the send (`refused`): the deliver task writes the refusal and the next channel is tried at once;
 * - a delivered receipt within the wait ends the execution at `receiptWaitEnd`: the first status read at or after
 *   it, or, in the wait's last step, the AfterWait task (which reads DELIVERED and ends);
 * - a failure receipt marks the record (`receipt_failed`, core/delivery.ts `acceptProviderReceipt`); the next
 *   status read sees the mark for the channel waited on and goes to the AfterWait task at once, which moves on
 *   (statemachine/delivery.asl.json `ReceiptFailed`). One in the wait's last step, after the last read, is seen
 *   by no read: the whole wait runs, as for silence. Failure receipts are taken to come with the delivered ones'
 *   delays (`ReceiptTiming` gives one delay);
 * - silence, a failure seen by no read, or a delivered receipt after the wait: the whole wait and the AfterWait
 *   task, then the next channel. After the last channel the same task ends the delivery (SENT: a read and a
 *   write); so does a refusal on the last channel, in its deliver task.
 *
 * A receipt after the wait still settles the delivery (PENDING to DELIVERED) when it comes: the next status read
 * of a later channel's wait, or its AfterWait task, sees it and the execution ends there. Every delivered or
 * failed message brings one receipt callback, whenever it comes, the delivery ended or not.
 *
 * Express bills each execution's duration in 100 ms steps: each outcome's parts are added, then rounded up. The
 * status reads' own latency adds to the duration but not to the moments receipts are compared with. Not
 * modelled, as in the fee model: a code entered before the switch (the next channel then sends nothing: this
 * is an upper bound); nor the task retries, nor the end's write of rejected channels on the number's item.
 */
export function expectedWorkflow(
  channels: readonly Channel[],
  units: WorkflowUnits,
  timing: Readonly<Record<Channel, ReceiptTiming>> = ASSUMED_RECEIPTS,
  points = 200,
): WorkflowExpectation {
  const wait = units.waitSeconds;
  // The ends of the wait's steps, s after the hand-over: a status read at each but the last, AfterWait at it.
  const bounds: number[] = [];
  for (const step of receiptWaitSteps(wait)) bounds.push((bounds.at(-1) ?? 0) + step);
  const lastStep = bounds.length - 1;
  const ms = units.ms;
  const wholeWaitMs = wait * 1000 + lastStep * ms.statusRead + ms.afterWait;
  const longestChannelMs = ms.deliver + ms.refusal + wholeWaitMs;
  const runs = { deliver: 0, refusal: 0, statusRead: 0, afterWait: 0, finish: 0, callback: 0 };
  const step = PRICES.stepFunctionsExpressDurationStepMs;
  let billedSeconds = 0;
  const end = (p: number, executionMs: number) => {
    billedSeconds += (p * Math.ceil(executionMs / step) * step) / 1000;
  };

  // Outcomes still going: probability, execution time so far (ms), and when an earlier channel's delivered
  // receipt comes (ms into the execution; Infinity: none to come, or none before the execution must end).
  interface Going {
    p: number;
    ms: number;
    receiptAt: number;
  }
  let going: Going[] = [{ p: 1, ms: 0, receiptAt: Infinity }];
  channels.forEach((channel, index) => {
    const t = timing[channel];
    const last = index === channels.length - 1;
    const delivered = 1 - t.failed - t.silent;
    // The delay's share in each step of the wait: (0, 1], (1, 2], (2, 4], (4, 8] s by default.
    const inStep = bounds.map(
      (bound, i) =>
        lateShare(t.delay, i === 0 ? 0 : bounds[i - 1]! * 1000) - lateShare(t.delay, bound * 1000),
    );
    const lateDelays = tailPoints(t.delay, wait * 1000, points);
    const lateEach = lateDelays.length > 0 ? lateShare(t.delay, wait * 1000) / lateDelays.length : 0;
    const next = new Map<string, Going>();
    const moveOn = (p: number, atMs: number, receiptAt: number) => {
      if (p <= 0) return;
      if (last) {
        runs.finish += p;
        end(p, atMs + ms.finish);
        return;
      }
      // A receipt no later channel's wait can reach is as good as none.
      const beyondReach = receiptAt - atMs > (channels.length - index - 1) * longestChannelMs;
      const at = beyondReach ? Infinity : Math.round(receiptAt);
      const key = `${atMs.toFixed(3)}|${at}`;
      const found = next.get(key);
      if (found) found.p += p;
      else next.set(key, { p, ms: atMs, receiptAt: at });
    };
    for (const from of going) {
      runs.deliver += from.p;
      const handedAt = from.ms + ms.deliver;
      if (t.refused > 0) {
        runs.refusal += from.p * t.refused;
        moveOn(from.p * t.refused, handedAt + ms.refusal, from.receiptAt);
      }
      const taken = from.p * (1 - t.refused);
      if (taken <= 0) continue;
      runs.callback += taken * (1 - t.silent);
      // The step at whose end an earlier channel's receipt is seen (a read, or AfterWait after the last step).
      const earlierIn = from.receiptAt - handedAt;
      const earlier =
        earlierIn <= wait * 1000 ? receiptWaitEnd(wait, Math.max(0, earlierIn) / 1000) : undefined;
      const earlierStep = !earlier ? Infinity : earlier.afterWait ? lastStep : earlier.reads - 1;
      // One outcome of this channel: the step a delivered receipt (its own or an earlier one) is seen at, the
      // step its own failure receipt is, and when its own receipt comes if after the wait.
      const outcome = (p: number, settledStep: number, failedStep: number, lateAt: number) => {
        if (p <= 0) return;
        if (settledStep < lastStep && settledStep <= failedStep) {
          // A read sees DELIVERED (with a failure mark too: the delivery is no longer PENDING): the end.
          runs.statusRead += p * (settledStep + 1);
          end(p, handedAt + bounds[settledStep]! * 1000 + (settledStep + 1) * ms.statusRead);
          return;
        }
        runs.afterWait += p;
        if (failedStep < lastStep) {
          // A read sees this channel's failure mark: AfterWait now, then the next channel.
          runs.statusRead += p * (failedStep + 1);
          const atMs =
            handedAt + bounds[failedStep]! * 1000 + (failedStep + 1) * ms.statusRead + ms.afterWait;
          moveOn(p, atMs, from.receiptAt);
          return;
        }
        runs.statusRead += p * lastStep;
        // The whole wait: AfterWait ends the delivery if a receipt came in the last step, else moves on.
        if (settledStep === lastStep) end(p, handedAt + wholeWaitMs);
        else moveOn(p, handedAt + wholeWaitMs, Math.min(from.receiptAt, lateAt));
      };
      inStep.forEach((share, i) => {
        outcome(taken * delivered * share, Math.min(i, earlierStep), Infinity, Infinity);
        outcome(taken * t.failed * share, earlierStep, i, Infinity);
      });
      const seenByNone = t.silent + t.failed * lateShare(t.delay, wait * 1000);
      outcome(taken * seenByNone, earlierStep, Infinity, Infinity);
      for (const delay of lateDelays)
        outcome(taken * delivered * lateEach, earlierStep, Infinity, handedAt + delay);
    }
    going = [...next.values()];
  });

  const sum = (line: keyof PartUsd) =>
    (Object.keys(runs) as (keyof typeof runs)[]).reduce(
      (total, part) => total + runs[part] * units.usd[part][line],
      0,
    );
  const express =
    PRICES.stepFunctionsExpressPerMillionRequests +
    perMillion(PRICES.stepFunctionsExpressPerGbSecond, billedSeconds * PRICES.stepFunctionsExpressMemoryGb);
  return {
    channels: [...channels],
    runs,
    billedSeconds,
    usd: {
      stepFunctions: express,
      lambda: sum('lambda'),
      dynamoDb: sum('dynamoDb'),
      apiGateway: sum('apiGateway'),
    },
    waitUsd: {
      express,
      statusReads: runs.statusRead * units.usd.statusRead.dynamoDb,
      afterWait: runs.afterWait * (units.usd.afterWait.lambda + units.usd.afterWait.dynamoDb),
    },
  };
}

/** The delivery workflow's bill for one receipt delay, projected to AWS, USD per million verifications. */
interface ReceiptDelayRow {
  /** `one Wait state` for the workflow before the status reads (any receipt within the wait). */
  receipt: string;
  statusReads: number;
  afterWaitTask: boolean;
  /** Express duration billed, s (64 MB, 100 ms steps). */
  billedSeconds: number;
  expressUsd: number;
  /** The status reads' read units (eventually consistent) and their cost. */
  readRru: number;
  readsUsd: number;
  /** The AfterWait task when it runs: Lambda request and duration, and its strongly consistent read. */
  afterWaitUsd: number;
  totalUsd: number;
}

interface CostLine {
  service: string;
  /** USD per million verifications with the durations measured on this machine. */
  measured: number;
  /** USD per million verifications with durations projected to AWS (see ASSUMPTIONS). */
  projected: number;
  basis: string;
}

export interface CostResults {
  prices: typeof PRICES;
  assumptions: typeof ASSUMPTIONS;
  perVerification: {
    apiGatewayRequests: number;
    lambdaInvocations: number;
    lambdaMs: { measured: number; projected: number };
    rru: number;
    wru: number;
    /** What DynamoDB Local reported (not DynamoDB's rules: see bench/meter.ts). */
    reportedCapacityByLocal: number;
    stepFunctions: {
      executions: number;
      /** Status reads of the receipt wait (Step Functions' own DynamoDB GetItem), as the path counted them. */
      statusReads: number;
      billedSeconds: { measured: number; projected: number };
    };
    logBytes: number;
    /** Of `rru` and `wru`: the sweeper's look at the send (absent from results of before it walked the ledger). */
    sweeper?: { rru: number; wru: number; requests: number };
    /** The guard consumer's share, per send at its measured rate, and its DynamoDB USD per million. */
    guardConsumer?: { rru: number; wru: number; requests: number; usd: number };
  };
  /**
   * The monthly volume the bill is priced at: the guard consumer's measured rate over a 30-day month (absent from
   * results of before it was stated, and when the consumer was not counted).
   */
  monthlyVerifications?: number;
  /**
   * The guard consumer measured at each rate, and the four services' projected total with it in place of the
   * bill's: what a million verifications cost at that monthly volume. Absent from results of one rate.
   */
  guardByVolume?: GuardVolumeBill[];
  lines: CostLine[];
  /**
   * What the sweeper's runs cost whatever the volume, USD a month (`ASSUMPTIONS.sweeperRunsPerMonth` runs, each as
   * the bench's run that found nothing, with the services the bench's table held: each adds a query per half).
   */
  sweeperPerRun?: {
    services: number;
    runsPerMonth: number;
    requests: number;
    rru: number;
    wru: number;
    dynamoUsdPerMonth: number;
    lambdaRequestsUsdPerMonth: number;
  };
  /** The delivery workflow's bill by receipt delay, projected (see `receiptWaitEnd`). */
  receiptDelays: ReceiptDelayRow[];
  /**
   * The four services, projected, with the delivery workflow as expected under the provider fee model's assumed
   * receipts (`expectedWorkflow`), per sample country of the fee model and its channel order. Absent from
   * results of before it.
   */
  assumedReceipts?: AssumedReceiptsBill[];
  /** The workflow's parts as priced for `assumedReceipts` (`expectedWorkflow` takes them). */
  workflowUnits?: WorkflowUnits;
  totalFourServices: { measured: number; projected: number };
  totalWithOther: { measured: number; projected: number };
  /**
   * The four services with the receipt callbacks on the receipt function's own URL (`otp:receiptFunctionUrl`): the
   * same invocations, no API Gateway request for them. Absent from results of before that setting.
   */
  totalWithReceiptsOnFunctionUrl?: { measured: number; projected: number; callbacks: number };
}

/** The guard consumer at one rate, and the bill per million verifications at that monthly volume. */
interface GuardVolumeBill {
  monthlyVerifications: number;
  sendsPerSecond: number;
  /** The deployment's services, one sending (below 4 no global scope is kept); absent from older results. */
  services?: number;
  /** Per send and per batch, by DynamoDB's rules from item sizes. */
  wru: number;
  rru: number;
  wruPerBatch: number;
  rruPerBatch: number;
  largestItemBytes: number;
  /** The consumer's DynamoDB USD per million verifications. */
  usd: number;
  /** The four services, projected, with this consumer in place of the bill's. */
  totalFourServices: number;
}

/** The monthly volume of a rate (sends a second, evenly spread over the 30-day month). */
export const monthlyVolumeOf = (sendsPerSecond: number): number =>
  Math.round(sendsPerSecond * ASSUMPTIONS.secondsPerMonth);

/** The bill of one sample country under the assumed receipts, USD per million verifications. */
interface AssumedReceiptsBill {
  country: string;
  channels: Channel[];
  /** The fee model's probability that a second message is handed over. */
  secondMessage: number;
  /** Express duration billed, expected per execution, s. */
  billedSeconds: number;
  /** Receipt callbacks, expected per verification. */
  callbacks: number;
  stepFunctions: number;
  lambda: number;
  dynamoDb: number;
  apiGateway: number;
  total: number;
}

const perMillion = (usdPerUnit: number, units: number) => usdPerUnit * units * 1_000_000;

export function costModel(
  counts: CountResults,
  latency: LatencyResults,
  receiptTiming: Readonly<Record<Channel, ReceiptTiming>> = ASSUMED_RECEIPTS,
): CostResults {
  const op = (name: string): OperationCount => {
    const found = counts.operations.find((entry) => entry.operation === name);
    if (!found) throw new Error(`No count for ${name}`);
    return found;
  };
  const path: PathCount | undefined = counts.paths.find((entry) => entry.path === 'first channel delivers');
  if (!path) throw new Error('No count for the first-channel path');
  const api = [
    {
      count: op('send accepted'),
      latency: 'send',
      calls: 1,
      // StartExecution runs beside the accepting transaction (core/send.ts): only what outlasts it adds. The
      // key's write runs beside the batch read (as long, 6 ms): it adds nothing either.
      extraMs:
        Math.max(0, ASSUMPTIONS.startExecutionMs - ASSUMPTIONS.dynamoDbRequestMs.TransactWriteItems!) -
        ASSUMPTIONS.dynamoDbRequestMs.UpdateItem!,
    },
    // The check's write waits for the key's (only an authorized caller spends an attempt): both count.
    { count: op('check, right code'), latency: 'check, right code', calls: 1, extraMs: 0 },
    // The fetch's GetItem runs beside the key's write, which is the longer by 1 ms: the read adds nothing.
    { count: op('fetch'), latency: 'fetch', calls: 2, extraMs: -ASSUMPTIONS.dynamoDbRequestMs.GetItem! },
  ];
  const timing = (name: string) => {
    const found = latency.operations.find((entry) => entry.operation === name);
    if (!found) throw new Error(`No latency for ${name}`);
    return found;
  };
  const taskTiming = (name: string) => {
    const found = latency.tasks.find((entry) => entry.task.startsWith(name));
    if (!found) throw new Error(`No timing for ${name}`);
    return found;
  };
  // Lambda bills each invocation rounded up to the next millisecond: on average about half a ms more.
  const billed = (ms: number) => ms + 0.5;
  const projectMs = (overheadMs: number, requests: Record<string, number>, extraMs: number) =>
    overheadMs * ASSUMPTIONS.lambdaCpuSlowdown +
    Object.entries(requests).reduce(
      (total, [kind, n]) => total + n * (ASSUMPTIONS.dynamoDbRequestMs[kind.replace('auth:', '')] ?? 6),
      0,
    ) +
    extraMs;

  let lambdaMsMeasured = 0;
  let lambdaMsProjected = 0;
  let invocations = 0;
  let rru = 0;
  let wru = 0;
  let reported = 0;
  let logBytes = 0;
  for (const entry of api) {
    const timed = timing(entry.latency);
    lambdaMsMeasured += entry.calls * billed(timed.handler.mean);
    lambdaMsProjected +=
      entry.calls * billed(projectMs(timed.overhead.mean, entry.count.withAuth.byKind, entry.extraMs));
    invocations += entry.calls;
    rru += entry.calls * entry.count.withAuth.rru;
    wru += entry.calls * entry.count.withAuth.wru;
    reported += entry.count.withAuth.reportedCapacity * entry.calls;
    logBytes += entry.calls * entry.count.logBytes;
  }
  const apiLambdaMs = lambdaMsProjected;
  const apiInvocations = invocations;

  // The delivery: its tasks and receipt callbacks, as counted on the path; durations from the task timings.
  const deliverRuns = path.tasks.DeliverOverChannel ?? 0;
  const afterWaitRuns = path.tasks.AfterWait ?? 0;
  const deliver = taskTiming('deliver');
  const receipt = taskTiming('receipt');
  const afterWait = taskTiming('after-wait');
  // What the function itself spends: less its DynamoDB requests and the carrier's API call (the simulated
  // carrier answers in this process; the projection prices the call as `carrierApiMs` instead).
  const overhead = (task: typeof deliver) =>
    Math.max(0, task.duration.mean - task.dynamo.mean - (task.carrier?.mean ?? 0));
  // Measured: the task timings. Projected: their CPU slowed to Lambda's share, plus the requests the path
  // counted at in-region round trips, plus the carrier's API for each message handed over.
  const taskMsMeasured = deliverRuns * deliver.duration.mean + afterWaitRuns * afterWait.duration.mean;
  const taskMsProjected =
    projectMs(
      deliverRuns * overhead(deliver) + afterWaitRuns * overhead(afterWait),
      path.taskRequests.byKind,
      0,
    ) +
    deliverRuns * ASSUMPTIONS.carrierApiMs;
  const receiptMsMeasured = path.receipts * receipt.duration.mean;
  const receiptMsProjected = projectMs(path.receipts * overhead(receipt), path.receiptRequests.byKind, 0);
  const deliveryInvocations = deliverRuns + afterWaitRuns + path.receipts;
  lambdaMsMeasured += taskMsMeasured + receiptMsMeasured + billed(0) * deliveryInvocations;
  lambdaMsProjected += taskMsProjected + receiptMsProjected + billed(0) * deliveryInvocations;
  invocations += deliveryInvocations;
  rru += path.total.rru;
  wru += path.total.wru;
  reported += path.total.reportedCapacity;
  logBytes += path.logBytes;

  // The sweeper's two reads of the send's record and its charge line's share of the ledger queries. (Its Lambda
  // time for them, a BatchGetItem per 100 sends a run, is a fraction of a ms per verification: not priced.)
  const sweeper = counts.sweeper?.perVerification;
  if (sweeper) {
    rru += sweeper.rru;
    wru += sweeper.wru;
    reported += sweeper.reportedCapacity;
  }

  // The pumping guard's stream consumer: its reads and rewrites of the aggregates, per send at the rate it was
  // measured (bench/guard-consumer.ts): the bill's volume. Its Lambda time (a batch a window) is not priced.
  const guard = counts.guardConsumer?.perSend;
  if (guard) {
    rru += guard.rru;
    wru += guard.wru;
    reported += guard.reportedCapacity;
  }

  const apiGatewayRequests = api.reduce((total, entry) => total + entry.calls, 0) + path.receipts;
  // Time in receipt waits: a wait followed by its AfterWait task lasted the whole wait; one that ended at a
  // status read (a receipt had settled the delivery), up to that read. The path ran with the default wait.
  const steps = receiptWaitSteps(path.waitSeconds);
  const readAt = (reads: number) => steps.slice(0, reads).reduce((total, seconds) => total + seconds, 0);
  const readsInEndedWait = path.statusReads - afterWaitRuns * (steps.length - 1);
  const endedOnRead = path.waits > afterWaitRuns;
  const waitMs =
    (afterWaitRuns * path.waitSeconds + (endedOnRead ? readAt(readsInEndedWait) : 0)) * 1000 +
    path.statusReads * ASSUMPTIONS.statusReadMs;
  const step = PRICES.stepFunctionsExpressDurationStepMs;
  const sfnSeconds = (taskMs: number) => (Math.ceil((waitMs + taskMs) / step) * step) / 1000;
  const readRru = path.readRequests.rru;
  const sfnEventsAtAll =
    deliverRuns * 5 + afterWaitRuns * 5 + (path.stateTransitions - deliverRuns - afterWaitRuns) * 2 + 2;
  // At level ERROR a successful execution logs nothing.
  const sfnEvents = ASSUMPTIONS.stepFunctionsLogLevel === 'ALL' ? sfnEventsAtAll : 0;
  const logTotal =
    logBytes +
    invocations * ASSUMPTIONS.lambdaPlatformLogBytes +
    sfnEvents * ASSUMPTIONS.stepFunctionsLogEventBytes;

  const lambda = (ms: number) =>
    perMillion(PRICES.lambdaRequestsPerMillion / 1_000_000, invocations) +
    perMillion(PRICES.lambdaArmPerGbSecond, (ms / 1000) * (ASSUMPTIONS.lambdaMemoryMb / 1024));
  const sfn = (seconds: number) =>
    perMillion(PRICES.stepFunctionsExpressPerMillionRequests / 1_000_000, 1) +
    perMillion(PRICES.stepFunctionsExpressPerGbSecond, seconds * PRICES.stepFunctionsExpressMemoryGb);
  const dynamoUsd = (writeUnits: number, readUnits: number) =>
    PRICES.dynamoDbPerMillionWru * (writeUnits / 1_000_000) +
    PRICES.dynamoDbPerMillionRru * (readUnits / 1_000_000);
  const dynamo = dynamoUsd(wru, rru) * 1_000_000;
  const apiGateway = perMillion(PRICES.apiGatewayHttpPerMillion / 1_000_000, apiGatewayRequests);
  // What the receipt callbacks' API Gateway requests cost: saved when they come to the function's own URL.
  const receiptRequestsUsd = perMillion(PRICES.apiGatewayHttpPerMillion / 1_000_000, path.receipts);
  const logs = perMillion(PRICES.cloudWatchLogsIngestPerGb / 1024 ** 3, logTotal);
  // Traces: every API request and the execution (whose tasks join its trace), sampled at the bill's volume.
  const traces = apiGatewayRequests + 1;
  const tracesPerSecond = (traces * ASSUMPTIONS.billMonthlyVerifications) / ASSUMPTIONS.secondsPerMonth;
  const sampledShare = xRaySampledShare(tracesPerSecond);
  const xray = perMillion((PRICES.xRayPerMillionTraces / 1_000_000) * sampledShare, traces);

  const lines: CostLine[] = [
    {
      service: 'API Gateway (HTTP API)',
      measured: apiGateway,
      projected: apiGateway,
      basis: `${apiGatewayRequests} requests (send, check, 2 fetches, ${path.receipts} receipt callback)`,
    },
    {
      service: 'Lambda (arm64, 256 MB)',
      measured: lambda(lambdaMsMeasured),
      projected: lambda(lambdaMsProjected),
      basis: `${invocations} invocations, ${round(lambdaMsMeasured, 1)} ms billed measured / ${round(lambdaMsProjected, 1)} ms projected`,
    },
    {
      service: 'DynamoDB on-demand',
      measured: dynamo,
      projected: dynamo,
      basis: `${round(wru, 2)} WRU + ${round(rru, 2)} RRU (DynamoDB's rules from item sizes; transactions x2; ${round(readRru, 2)} RRU of it the workflow's ${path.statusReads} status read(s)${sweeper ? `, ${round(sweeper.rru, 2)} RRU + ${round(sweeper.wru, 2)} WRU the sweeper's two reads and ledger share` : ''}${guard ? `, ${round(guard.wru, 2)} WRU + ${round(guard.rru, 2)} RRU the guard consumer's at ${round(counts.guardConsumer!.sendsPerSecond, 2)} sends/s, ${monthlyVolumeOf(counts.guardConsumer!.sendsPerSecond).toLocaleString('en-US')} a month` : ''})`,
    },
    {
      service: 'Step Functions Express',
      measured: sfn(sfnSeconds(taskMsMeasured)),
      projected: sfn(sfnSeconds(taskMsProjected)),
      basis: `1 execution, ${path.waits} receipt wait of ${path.waitSeconds} s ended ${endedOnRead ? `by status read ${readsInEndedWait} at ${readAt(readsInEndedWait)} s` : 'by the AfterWait task'}, ${sfnSeconds(taskMsMeasured)} s / ${sfnSeconds(taskMsProjected)} s at 64 MB`,
    },
    {
      service: 'other: CloudWatch Logs (estimate)',
      measured: logs,
      projected: logs,
      basis: `${Math.round(logTotal)} bytes: app lines measured, Lambda platform lines assumed; Step Functions at level ${ASSUMPTIONS.stepFunctionsLogLevel} (ALL would add ${sfnEventsAtAll * ASSUMPTIONS.stepFunctionsLogEventBytes} bytes)`,
    },
    {
      // Off by default (`otp:tracing`, ADR 0024): in neither total, like the optional edge.
      service: 'optional: X-Ray with otp:tracing (estimate), add to a total',
      measured: xray,
      projected: xray,
      basis: `${round(sampledShare * 100, 1)} % of ${traces} traces sampled (${round(tracesPerSecond, 2)} a second at ${ASSUMPTIONS.billMonthlyVerifications.toLocaleString('en-US')} a month: the reservoir of ${ASSUMPTIONS.xRayReservoirPerSecond} a second, then ${ASSUMPTIONS.xRayFixedRate * 100} %)`,
    },
  ];
  // By receipt delay, projected: the deliver task as on this path, the reads by the schedule, the AfterWait
  // task (Lambda, and its strongly consistent read: twice an eventually consistent one) when the wait ran out.
  const perRead = path.statusReads > 0 ? readRru / path.statusReads : 0.5;
  const deliverMs = deliverRuns > 0 ? taskMsProjected / deliverRuns : 0;
  const afterWaitMs = projectMs(overhead(afterWait), { GetItem: 1 }, 0);
  const afterWaitUsd =
    perMillion(PRICES.lambdaRequestsPerMillion / 1_000_000, 1) +
    perMillion(
      PRICES.lambdaArmPerGbSecond,
      (billed(afterWaitMs) / 1000) * (ASSUMPTIONS.lambdaMemoryMb / 1024),
    ) +
    perMillion(PRICES.dynamoDbPerMillionRru / 1_000_000, 2 * perRead);
  const delayRow = (receipt: string, endsAtSeconds: number, reads: number, runsAfterWait: boolean) => {
    const ms =
      deliverMs + endsAtSeconds * 1000 + reads * ASSUMPTIONS.statusReadMs + (runsAfterWait ? afterWaitMs : 0);
    const billedSeconds = (Math.ceil(ms / step) * step) / 1000;
    const readsUsd = perMillion(PRICES.dynamoDbPerMillionRru / 1_000_000, reads * perRead);
    const row: ReceiptDelayRow = {
      receipt,
      statusReads: reads,
      afterWaitTask: runsAfterWait,
      billedSeconds,
      expressUsd: round(sfn(billedSeconds), 2),
      readRru: round(reads * perRead, 3),
      readsUsd: round(readsUsd, 2),
      afterWaitUsd: round(runsAfterWait ? afterWaitUsd : 0, 2),
      totalUsd: round(sfn(billedSeconds) + readsUsd + (runsAfterWait ? afterWaitUsd : 0), 2),
    };
    return row;
  };
  const wait = ASSUMPTIONS.channelWaitSeconds;
  const receiptDelays = [
    delayRow(`one Wait state of ${wait} s (before)`, wait, 0, true),
    ...ASSUMPTIONS.receiptDelaysSeconds.map((seconds) => {
      const end = receiptWaitEnd(wait, seconds);
      return delayRow(`${seconds} s`, end.endsAtSeconds, end.reads, end.afterWait);
    }),
  ];

  // The workflow's parts priced as on the counted path, for the bill under the assumed receipts: a deliver task's
  // time and units are the path's per deliver task; a write (a refusal's, the end's) is one of its claim's size
  // and a read of the record one of its reads; the callback is the path's per receipt.
  const lambdaUsd = (ms: number, requests: number) =>
    perMillion(PRICES.lambdaRequestsPerMillion / 1_000_000, requests) +
    perMillion(PRICES.lambdaArmPerGbSecond, (ms / 1000) * (ASSUMPTIONS.lambdaMemoryMb / 1024));
  const dynamoPerMillion = (writeUnits: number, readUnits: number) =>
    dynamoUsd(writeUnits, readUnits) * 1_000_000;
  const tasks = path.taskRequests;
  const perWrite = tasks.wru / Math.max(1, tasks.byKind.UpdateItem ?? 0);
  const perRecordRead = tasks.rru / Math.max(1, tasks.byKind.GetItem ?? 0);
  const writeMs = ASSUMPTIONS.dynamoDbRequestMs.UpdateItem!;
  const finishMs = ASSUMPTIONS.dynamoDbRequestMs.GetItem! + writeMs;
  const receipts = Math.max(1, path.receipts);
  const units: WorkflowUnits = {
    waitSeconds: wait,
    ms: {
      deliver: deliverMs,
      refusal: writeMs,
      statusRead: ASSUMPTIONS.statusReadMs,
      afterWait: afterWaitMs,
      finish: finishMs,
    },
    usd: {
      deliver: {
        lambda: lambdaUsd(billed(deliverMs), 1),
        dynamoDb: dynamoPerMillion(
          tasks.wru / Math.max(1, deliverRuns),
          tasks.rru / Math.max(1, deliverRuns),
        ),
        apiGateway: 0,
      },
      refusal: { lambda: lambdaUsd(writeMs, 0), dynamoDb: dynamoPerMillion(perWrite, 0), apiGateway: 0 },
      statusRead: { lambda: 0, dynamoDb: dynamoPerMillion(0, perRead), apiGateway: 0 },
      afterWait: {
        lambda: lambdaUsd(billed(afterWaitMs), 1),
        dynamoDb: dynamoPerMillion(0, 2 * perRead),
        apiGateway: 0,
      },
      finish: {
        lambda: lambdaUsd(finishMs, 0),
        dynamoDb: dynamoPerMillion(perWrite, perRecordRead),
        apiGateway: 0,
      },
      callback: {
        lambda: lambdaUsd(receiptMsProjected / receipts + billed(0), 1),
        dynamoDb: dynamoPerMillion(path.receiptRequests.wru / receipts, path.receiptRequests.rru / receipts),
        apiGateway: PRICES.apiGatewayHttpPerMillion,
      },
    },
  };
  // Everything but the workflow, as in the lines above: the API requests, their Lambda time and their units,
  // the sweeper's and the guard consumer's.
  const apiRequests = api.reduce((total, entry) => total + entry.calls, 0);
  const apiOnly = {
    apiGateway: perMillion(PRICES.apiGatewayHttpPerMillion / 1_000_000, apiRequests),
    lambda: lambdaUsd(apiLambdaMs, apiInvocations),
    dynamoDb: dynamoPerMillion(wru - path.total.wru, rru - path.total.rru),
  };
  const assumedReceipts = sampleFees(receiptTiming, wait).map((country): AssumedReceiptsBill => {
    const workflow = expectedWorkflow(country.channels, units, receiptTiming);
    const lines = {
      stepFunctions: workflow.usd.stepFunctions,
      lambda: apiOnly.lambda + workflow.usd.lambda,
      dynamoDb: apiOnly.dynamoDb + workflow.usd.dynamoDb,
      apiGateway: apiOnly.apiGateway + workflow.usd.apiGateway,
    };
    return {
      country: country.country,
      channels: country.channels,
      secondMessage: round(country.secondMessage, 6),
      billedSeconds: round(workflow.billedSeconds, 2),
      callbacks: round(workflow.runs.callback, 3),
      stepFunctions: round(lines.stepFunctions, 2),
      lambda: round(lines.lambda, 2),
      dynamoDb: round(lines.dynamoDb, 2),
      apiGateway: round(lines.apiGateway, 2),
      total: round(lines.stepFunctions + lines.lambda + lines.dynamoDb + lines.apiGateway, 2),
    };
  });

  // The consumer at each rate measured: its own USD per million in place of the bill's.
  const guardUsd = (perSend: { wru: number; rru: number }) => dynamoUsd(perSend.wru, perSend.rru) * 1_000_000;
  const byRate = counts.guardConsumerByRate ?? [];
  const guardByVolume = byRate.map((count): GuardVolumeBill => {
    const perBatch = count.perBatch ?? { wru: 0, rru: 0 };
    return {
      monthlyVerifications: monthlyVolumeOf(count.sendsPerSecond),
      sendsPerSecond: count.sendsPerSecond,
      ...(count.services !== undefined && { services: count.services }),
      wru: count.perSend.wru,
      rru: count.perSend.rru,
      wruPerBatch: perBatch.wru,
      rruPerBatch: perBatch.rru,
      largestItemBytes: count.largestItemBytes,
      usd: round(guardUsd(count.perSend), 2),
      totalFourServices: 0,
    };
  });

  const sum = (field: 'measured' | 'projected', filter: (line: CostLine) => boolean) =>
    round(
      lines.filter(filter).reduce((total, line) => total + line[field], 0),
      2,
    );
  const four = (line: CostLine) => !line.service.startsWith('other') && !line.service.startsWith('optional');
  const withEstimates = (line: CostLine) => !line.service.startsWith('optional');
  const perRun = counts.sweeper?.perRun;
  const runs = ASSUMPTIONS.sweeperRunsPerMonth;
  const projectedFour = sum('projected', four);
  for (const row of guardByVolume)
    row.totalFourServices = round(projectedFour - (guard ? guardUsd(guard) : 0) + guardUsd(row), 2);
  return {
    prices: PRICES,
    assumptions: ASSUMPTIONS,
    perVerification: {
      apiGatewayRequests,
      lambdaInvocations: invocations,
      lambdaMs: { measured: round(lambdaMsMeasured, 2), projected: round(lambdaMsProjected, 2) },
      rru: round(rru, 3),
      wru: round(wru, 3),
      reportedCapacityByLocal: round(reported, 3),
      stepFunctions: {
        executions: 1,
        statusReads: path.statusReads,
        billedSeconds: { measured: sfnSeconds(taskMsMeasured), projected: sfnSeconds(taskMsProjected) },
      },
      logBytes: Math.round(logTotal),
      ...(sweeper && {
        sweeper: { rru: sweeper.rru, wru: sweeper.wru, requests: sweeper.requests },
      }),
      ...(guard && {
        guardConsumer: {
          rru: guard.rru,
          wru: guard.wru,
          requests: guard.requests,
          usd: round(dynamoUsd(guard.wru, guard.rru) * 1_000_000, 2),
        },
      }),
    },
    ...(guard && { monthlyVerifications: monthlyVolumeOf(counts.guardConsumer!.sendsPerSecond) }),
    ...(guardByVolume.length > 1 && { guardByVolume }),
    lines: lines.map((line) => ({
      ...line,
      measured: round(line.measured, 2),
      projected: round(line.projected, 2),
    })),
    receiptDelays,
    assumedReceipts,
    workflowUnits: units,
    ...(perRun &&
      counts.sweeper && {
        sweeperPerRun: {
          services: counts.sweeper.services,
          runsPerMonth: runs,
          requests: perRun.requests,
          rru: perRun.rru,
          wru: perRun.wru,
          dynamoUsdPerMonth: round(runs * dynamoUsd(perRun.wru, perRun.rru), 4),
          lambdaRequestsUsdPerMonth: round((runs * PRICES.lambdaRequestsPerMillion) / 1_000_000, 4),
        },
      }),
    totalFourServices: { measured: sum('measured', four), projected: sum('projected', four) },
    totalWithOther: { measured: sum('measured', withEstimates), projected: sum('projected', withEstimates) },
    totalWithReceiptsOnFunctionUrl: {
      measured: round(sum('measured', four) - receiptRequestsUsd, 2),
      projected: round(sum('projected', four) - receiptRequestsUsd, 2),
      callbacks: path.receipts,
    },
  };
}
