/**
 * Part 1: DynamoDB requests and capacity of each operation, of one delivery workflow by path, and of the
 * sweeper's look at each accepted send, counted by the meters on the real clients (one handler call or sweeper
 * run at a time, nothing else running, so the difference of two snapshots is exactly that call's requests).
 */
import { randomUUID } from 'node:crypto';
import type { HttpResponse } from '../functions/http/response';
import { keys } from '../functions/adapters/dynamodb/keys';
import { parsePhone } from '../functions/core/phone';
import { CHANNELS, planRoute, type Channel } from '../functions/core/routing';
import { DEFAULT_SETTINGS } from '../functions/core/settings';
import type { GuardConsumerCount } from './guard-consumer';
import { SETTLE_AGE_SECONDS, STALL_SECONDS, type SweepResult } from '../functions/core/sweeper';
import type { ChannelBehaviour } from '../local/carrier';
import { checkEvent, fetchEvent, lambdaContext, sendEvent, type Caller } from './events';
import { AUTH, diffTotals, summarize, sumTotals, type RequestSummary, type Totals } from './meter';
import type { BenchService } from './service';
import { NumberSource } from './setup';
import { round } from './stats';

export interface OperationCount {
  operation: string;
  /** HTTP status and error code seen (every run must see the same). */
  outcome: string;
  runs: number;
  /** Per call, averaged over the runs: every request, the API-key middleware's included. */
  withAuth: RequestSummary;
  /** Per call: the operation's own requests, without the per-key limit and key lookup. */
  withoutAuth: RequestSummary;
  /**
   * Per call, averaged: the handler's waits on DynamoDB one after another (requests sent together count once),
   * with and without the API-key middleware's. Absent from results of before they were counted.
   */
  roundTrips?: { withAuth: number; withoutAuth: number };
  /** Bytes of log lines the handler wrote per call (CloudWatch Logs ingestion). */
  logBytes: number;
}

export interface PathCount {
  path: string;
  runs: number;
  deliveryStatus: string;
  /** Task runs (Lambda invocations by Step Functions) per execution. */
  tasks: Record<string, number>;
  /** States entered per execution (what Standard workflows would bill). */
  stateTransitions: number;
  /** Receipt waits per execution (one per channel that accepted; each cut in steps, see receiptWaitSteps). */
  waits: number;
  /** The channel wait these executions ran with, s. */
  waitSeconds: number;
  /** Status reads per execution: the state machine's own DynamoDB GetItem during the waits (no Lambda). */
  statusReads: number;
  /** Receipt callbacks per execution (each an API Gateway request and a Lambda invocation). */
  receipts: number;
  /** From the send's answer to the end of the execution, on this machine (receipt wait shortened). */
  executionMs: number;
  taskRequests: RequestSummary;
  receiptRequests: RequestSummary;
  /** The status reads' requests (Step Functions' DynamoDB integration: no Lambda time). */
  readRequests: RequestSummary;
  /** Tasks, receipts and status reads. */
  total: RequestSummary;
  /** Bytes of log lines the tasks and the receipt handler wrote per execution. */
  logBytes: number;
}

/**
 * The sweeper (core/sweeper.ts, a run a minute) over a batch of accepted sends delivered on the first channel:
 * each send is listed from the ledger and read twice, by the restart half at 30 s and the settle half at 6 min.
 * Measured as two runs of the real `sweepDeliveries` (clock at the batch's end + 31 s, then + 6 min 1 s) from a
 * cursor just before the batch, less the same two runs over a span with no send in it (the control): what is
 * left grows with the sends; the control's second run (both halves listing, nothing found) is what every run
 * costs whatever the volume.
 */
export interface SweeperCount {
  /** Accepted sends in the batch. */
  sends: number;
  /** Services in the table (the directory's entries): each half queries each one's charge lines, every run. */
  services: number;
  /**
   * Per verification: (the batch's two runs - the control's two runs) / sends. Requests: the eventually
   * consistent BatchGetItem of 100 keys, per send at this batch size (one a run covers both halves' sends).
   * RRU: the two reads of the verification (0.5 each), and its charge line's share of the ledger queries.
   * No WRU: the cursor write is per run.
   */
  perVerification: RequestSummary;
  /**
   * Of `perVerification.rru`: the charge line's share of the two ledger queries (strongly consistent, the items
   * summed then rounded up to 4 KB a query, so within 2 / sends of the exact share).
   */
  ledgerRru: number;
  /** One run with nothing to look at (the control's second run): cursor read and write, the listing of both halves. */
  perRun: RequestSummary;
  /** The raw figures: the batch's two runs, and the control's two. */
  batchRuns: RequestSummary;
  controlRuns: RequestSummary;
}

export interface CountResults {
  operations: OperationCount[];
  paths: PathCount[];
  /** Absent from results of before the sweeper walked the ledger. */
  sweeper?: SweeperCount;
  /** The pumping guard's stream consumer (bench/guard-consumer.ts); absent from results of before it was counted. */
  guardConsumer?: GuardConsumerCount;
  /** The consumer at each rate measured (`guardConsumer` is the one the bill prices); absent before. */
  guardConsumerByRate?: GuardConsumerCount[];
}

type Api = BenchService['quietApi'];

const ofResponse = (response: HttpResponse): string => {
  if (response.statusCode < 400) return String(response.statusCode);
  try {
    return `${response.statusCode} ${(JSON.parse(response.body) as { code?: string }).code ?? ''}`.trim();
  } catch {
    return String(response.statusCode);
  }
};

const sidOf = (response: HttpResponse): string => (JSON.parse(response.body) as { sid: string }).sid;

/** Divides every figure of a per-run total by the number of runs. */
function perRun(summary: RequestSummary, runs: number): RequestSummary {
  return {
    byKind: Object.fromEntries(Object.entries(summary.byKind).map(([kind, n]) => [kind, round(n / runs)])),
    requests: round(summary.requests / runs),
    conditionFailures: round(summary.conditionFailures / runs),
    reportedCapacity: round(summary.reportedCapacity / runs),
    rru: round(summary.rru / runs),
    wru: round(summary.wru / runs),
  };
}

/** `a - b`, figure by figure (a request kind kept while any of its figures differs). */
function minus(a: RequestSummary, b: RequestSummary): RequestSummary {
  const kinds = new Set([...Object.keys(a.byKind), ...Object.keys(b.byKind)]);
  return {
    byKind: Object.fromEntries(
      [...kinds]
        .map((kind) => [kind, round((a.byKind[kind] ?? 0) - (b.byKind[kind] ?? 0))] as const)
        .filter(([, n]) => n !== 0),
    ),
    requests: round(a.requests - b.requests),
    conditionFailures: round(a.conditionFailures - b.conditionFailures),
    reportedCapacity: round(a.reportedCapacity - b.reportedCapacity),
    rru: round(a.rru - b.rru),
    wru: round(a.wru - b.wru),
  };
}

export async function countOperations(
  service: BenchService,
  caller: Caller,
  brokeCaller: Caller,
  numbers: NumberSource,
  runs: number,
): Promise<CountResults> {
  const meter = service.meters.api;
  const api = service.quietApi;
  const send = (using: Api, to: string, key?: string) =>
    using.send(sendEvent(caller, to, key), lambdaContext('send'));
  const newVerification = async () => {
    const response = await send(api, numbers.take());
    if (response.statusCode !== 201) throw new Error(`setup send answered ${ofResponse(response)}`);
    const sid = sidOf(response);
    return { sid, code: service.random.codeOf(sid) };
  };
  const wrongCode = (code: string) => (code === '000000' ? '111111' : '000000');

  const operations: OperationCount[] = [];
  async function measure<T>(
    operation: string,
    expected: string,
    prepare: () => Promise<T>,
    act: (prepared: T) => Promise<HttpResponse>,
  ): Promise<void> {
    const all: Totals[] = [];
    let logBytes = 0;
    let roundTrips = 0;
    let ownRoundTrips = 0;
    for (let run = 0; run < runs; run++) {
      const prepared = await prepare();
      const before = meter.snapshot();
      const [tripsBefore, ownTripsBefore] = [meter.roundTrips, meter.ownRoundTrips];
      const logged = service.logger.bytes;
      const response = await act(prepared);
      all.push(diffTotals(meter.snapshot(), before));
      roundTrips += meter.roundTrips - tripsBefore;
      ownRoundTrips += meter.ownRoundTrips - ownTripsBefore;
      logBytes += service.logger.bytes - logged;
      const outcome = ofResponse(response);
      if (outcome !== expected) throw new Error(`${operation}: expected ${expected}, got ${outcome}`);
    }
    const totals = sumTotals(...all);
    operations.push({
      operation,
      outcome: expected,
      runs,
      withAuth: perRun(summarize(totals), runs),
      withoutAuth: perRun(
        summarize(totals, (kind) => !kind.startsWith(AUTH)),
        runs,
      ),
      roundTrips: { withAuth: round(roundTrips / runs), withoutAuth: round(ownRoundTrips / runs) },
      logBytes: round(logBytes / runs, 1),
    });
  }

  // Warm the handlers for both keys (their API-key guard knows them); the cold rows show a function new to the
  // key, whose first request is still one write on the key's item (counted in its window whatever its state).
  await newVerification();
  await api.send(sendEvent(brokeCaller, numbers.take()), lambdaContext('send'));

  await measure(
    'send accepted',
    '201',
    async () => numbers.take(),
    (to) => send(api, to),
  );
  await measure(
    'send accepted, with Idempotency-Key',
    '201',
    async () => numbers.take(),
    (to) => send(api, to, randomUUID()),
  );
  await measure(
    'send replayed by Idempotency-Key',
    '201',
    async () => {
      const to = numbers.take();
      const key = randomUUID();
      await send(api, to, key);
      return { to, key };
    },
    ({ to, key }) => send(api, to, key),
  );
  await measure(
    'send refused: burst',
    '429 burst',
    async () => {
      const to = numbers.take();
      const burstLimit = service.taskDeps.settings.burstLimit;
      for (let i = 0; i < burstLimit; i++) await send(api, to);
      return to;
    },
    (to) => send(api, to),
  );
  await measure(
    'send refused: insufficient_funds',
    '402 insufficient_funds',
    async () => numbers.take(),
    (to) => api.send(sendEvent(brokeCaller, to), lambdaContext('send')),
  );
  await measure('check, right code', '200', newVerification, ({ sid, code }) =>
    api.check(checkEvent(caller, sid, code), lambdaContext('check')),
  );
  await measure('check, wrong code', '422', newVerification, ({ sid, code }) =>
    api.check(checkEvent(caller, sid, wrongCode(code)), lambdaContext('check')),
  );
  await measure('fetch', '200', newVerification, ({ sid }) =>
    api.fetch(fetchEvent(caller, sid), lambdaContext('fetch')),
  );
  await measure(
    'send accepted, cold function (first request of the key there)',
    '201',
    async () => ({ to: numbers.take(), cold: service.coldQuietApi() }),
    ({ to, cold }) => send(cold, to),
  );
  await measure(
    'fetch, cold function (first request of the key there)',
    '200',
    async () => ({ ...(await newVerification()), cold: service.coldQuietApi() }),
    ({ sid, cold }) => cold.fetch(fetchEvent(caller, sid), lambdaContext('fetch')),
  );

  const paths = await countPaths(service, caller);
  const sweeper = await countSweeper(service, caller);
  return { operations, paths, sweeper };
}

interface PathSpec {
  path: string;
  runs: number;
  numbers: NumberSource;
  prefix: string;
  behaviour: (channels: Channel[]) => Partial<Record<Channel, ChannelBehaviour>>;
  /**
   * The channel wait to start the execution with, instead of the bench's short one: the default 8 s, cut in
   * its real steps (1, 1, 2, 4 s), for a path whose receipt ends it at the first status read.
   */
  waitSeconds?: number;
}

/** Channels a number is tried on, cheapest first, with every channel enabled. */
export function channelsFor(number: string): Channel[] {
  const phone = parsePhone(number);
  if (!phone) throw new Error(`Not a valid number: ${number}`);
  const plan = planRoute(phone, { enabledChannels: [...CHANNELS], prices: {} });
  if (!plan.ok) throw new Error(`No route for ${number}`);
  return plan.channels;
}

/** Each path gets its own range of numbers (+44 74N…), so a carrier rule by prefix gives it its behaviour. */
const PATHS: PathSpec[] = [
  {
    path: 'first channel delivers',
    runs: 3,
    numbers: new NumberSource(90_000_000),
    prefix: '+44749',
    behaviour: (channels) => ({ [channels[0]!]: { deliver: 200 } }),
    waitSeconds: DEFAULT_SETTINGS.channelWaitSeconds,
  },
  {
    path: 'first channel silent, second delivers',
    runs: 2,
    numbers: new NumberSource(80_000_000),
    prefix: '+44748',
    behaviour: (channels) => ({ [channels[0]!]: 'silent', [channels[1]!]: { deliver: 100 } }),
  },
  {
    path: 'every channel rejects (FAILED, unreachable)',
    runs: 2,
    numbers: new NumberSource(70_000_000),
    prefix: '+44747',
    behaviour: (channels) => Object.fromEntries(channels.map((channel) => [channel, 'reject'])),
  },
  {
    path: 'every channel silent (SENT)',
    runs: 1,
    numbers: new NumberSource(60_000_000),
    prefix: '+44746',
    behaviour: (channels) => Object.fromEntries(channels.map((channel) => [channel, 'silent'])),
  },
];

async function countPaths(service: BenchService, caller: Caller): Promise<PathCount[]> {
  const results: PathCount[] = [];
  for (const spec of PATHS) {
    const tasks: Record<string, number> = {};
    let transitions = 0;
    let waits = 0;
    let reads = 0;
    let receipts = 0;
    let executionMs = 0;
    let logBytes = 0;
    const taskTotals: Totals[] = [];
    const receiptTotals: Totals[] = [];
    const readTotals: Totals[] = [];
    let deliveryStatus = '';
    const waitSeconds = spec.waitSeconds ?? service.taskDeps.settings.channelWaitSeconds;
    for (let run = 0; run < spec.runs; run++) {
      const to = spec.numbers.take();
      service.carrier.setRule({ prefix: spec.prefix, channels: spec.behaviour(channelsFor(to)) });
      const tasksBefore = service.meters.tasks.snapshot();
      const receiptsBefore = service.meters.receipts.snapshot();
      const readsBefore = service.meters.polls.snapshot();
      const receiptCalls = service.receiptDurations.length;
      const logStart = service.workflow.taskLog.length;
      const readStart = service.workflow.readLog.length;
      // With a wait of its own: the quiet handlers (no execution), then the execution started here.
      const response = await (spec.waitSeconds === undefined ? service.api : service.quietApi).send(
        sendEvent(caller, to),
        lambdaContext('send'),
      );
      if (response.statusCode !== 201) throw new Error(`${spec.path}: send answered ${ofResponse(response)}`);
      if (spec.waitSeconds !== undefined)
        await service.workflow.start({ sid: sidOf(response), waitSeconds: spec.waitSeconds });
      const started = performance.now();
      const logged = service.logger.bytes;
      await service.workflow.idle();
      executionMs += performance.now() - started;
      // A receipt posted just before the execution ended may still be in flight: give it a moment.
      await new Promise((resolve) => setTimeout(resolve, 50));
      taskTotals.push(diffTotals(service.meters.tasks.snapshot(), tasksBefore));
      receiptTotals.push(diffTotals(service.meters.receipts.snapshot(), receiptsBefore));
      readTotals.push(diffTotals(service.meters.polls.snapshot(), readsBefore));
      receipts += service.receiptDurations.length - receiptCalls;
      logBytes += service.logger.bytes - logged;
      const sid = sidOf(response);
      const log = service.workflow.taskLog.slice(logStart).filter((entry) => entry.input.sid === sid);
      const pk = keys.verification(sid).pk;
      const readLog = service.workflow.readLog.slice(readStart).filter((read) => read.pk === pk);
      for (const entry of log) {
        tasks[entry.state] = (tasks[entry.state] ?? 0) + 1;
        // The task, then the Choice after it; the start of a receipt wait when it said so; Done when it ended.
        transitions += 2;
        if (entry.output.next === 'wait') {
          transitions++;
          waits++;
        }
        if (entry.output.next === 'end') transitions++;
        // The wait's last step before AfterWait: the Pass taking the step, the Wait, the Choice after it.
        if (entry.state === 'AfterWait') transitions += 3;
      }
      // Each status read: the Pass taking the step, the Wait, the Choice, the read, the Choice on its answer.
      transitions += 5 * readLog.length;
      reads += readLog.length;
      // Ended by a status read (no task after the last wait): Done, with the status the read saw.
      const endedOnRead = log.at(-1)?.output.next === 'wait' && readLog.length > 0;
      if (endedOnRead) transitions++;
      deliveryStatus =
        (endedOnRead ? readLog.at(-1)?.deliveryStatus : log.at(-1)?.output.deliveryStatus) ?? 'unknown';
    }
    const taskSummary = perRun(summarize(sumTotals(...taskTotals)), spec.runs);
    const receiptSummary = perRun(summarize(sumTotals(...receiptTotals)), spec.runs);
    const readSummary = perRun(summarize(sumTotals(...readTotals)), spec.runs);
    results.push({
      path: spec.path,
      runs: spec.runs,
      deliveryStatus,
      tasks: Object.fromEntries(Object.entries(tasks).map(([state, n]) => [state, round(n / spec.runs)])),
      stateTransitions: round(transitions / spec.runs),
      waits: round(waits / spec.runs),
      waitSeconds,
      statusReads: round(reads / spec.runs),
      receipts: round(receipts / spec.runs),
      executionMs: round(executionMs / spec.runs, 1),
      taskRequests: taskSummary,
      receiptRequests: receiptSummary,
      readRequests: readSummary,
      total: perRun(summarize(sumTotals(...taskTotals, ...receiptTotals, ...readTotals)), spec.runs),
      logBytes: round(logBytes / spec.runs, 1),
    });
  }
  service.carrier.clearRules();
  return results;
}

/** Sends in the sweeper's batch: one BatchGetItem reads them all (100 keys). */
const SWEEP_BATCH = 50;

async function countSweeper(service: BenchService, caller: Caller): Promise<SweeperCount> {
  const meter = service.meters.sweeper;
  const numbers = new NumberSource(40_000_000);
  const prefix = '+44744';
  // Delivered on the first channel, as the verification the cost model prices is: the sweeper reads each
  // send's record and, its delivery ended, leaves it.
  const recipients = Array.from({ length: SWEEP_BATCH }, () => numbers.take());
  service.carrier.setRule({ prefix, channels: { [channelsFor(recipients[0]!)[0]!]: { deliver: 100 } } });
  const sids: string[] = [];
  const first = new Date();
  for (const to of recipients) {
    const response = await service.api.send(sendEvent(caller, to), lambdaContext('send'));
    if (response.statusCode !== 201) throw new Error(`sweeper batch: send answered ${ofResponse(response)}`);
    sids.push(sidOf(response));
  }
  const last = new Date();
  await service.workflow.idle();
  await new Promise((resolve) => setTimeout(resolve, 50));
  service.carrier.clearRules();
  for (const sid of sids) {
    const status = (await service.taskDeps.store.getVerification(sid))?.deliveryStatus;
    if (status !== 'DELIVERED') throw new Error(`sweeper batch: ${sid} ended ${status ?? 'missing'}`);
  }

  // Two runs from a cursor just before `from`: the restart half's over the sends of `from`..`to` (30 s old), then
  // the settle half's over them (6 min old; its restart half finds nothing new). The sends are the only charge
  // lines after `first`: nothing else sends while this runs.
  const pair = async (from: Date, to: Date) => {
    await service.setSweepCursor(new Date(from.getTime() - 1));
    const before = meter.snapshot();
    const runs: SweepResult[] = [];
    let lastRun: Totals = {};
    for (const ageSeconds of [STALL_SECONDS, SETTLE_AGE_SECONDS]) {
      const runBefore = meter.snapshot();
      runs.push(await service.sweep(new Date(to.getTime() + (ageSeconds + 1) * 1000)));
      lastRun = diffTotals(meter.snapshot(), runBefore);
    }
    return { runs, totals: diffTotals(meter.snapshot(), before), lastRun };
  };
  const batch = await pair(first, last);
  // The control: the same two runs over a span as long, after the batch, with no send in it.
  const controlFrom = new Date(last.getTime() + 60_000);
  const control = await pair(
    controlFrom,
    new Date(controlFrom.getTime() + (last.getTime() - first.getTime())),
  );
  for (const [name, { runs }, expected] of [
    ['batch', batch, SWEEP_BATCH],
    ['control', control, 0],
  ] as const) {
    for (const run of runs) {
      const acted = run.restarted.length + run.settled.length + run.failures.length + run.dropped;
      if (run.read !== expected || acted > 0) {
        throw new Error(
          `sweeper ${name} run read ${run.read} sends (expected ${expected}) and acted on ${acted}: the span is not the batch's`,
        );
      }
    }
  }

  const isLedger = (kind: string) => kind === 'Query';
  const batchRuns = summarize(batch.totals);
  const controlRuns = summarize(control.totals);
  return {
    sends: SWEEP_BATCH,
    services: await service.countServices(),
    perVerification: perRun(minus(batchRuns, controlRuns), SWEEP_BATCH),
    ledgerRru: round(
      (summarize(batch.totals, isLedger).rru - summarize(control.totals, isLedger).rru) / SWEEP_BATCH,
    ),
    perRun: summarize(control.lastRun),
    batchRuns,
    controlRuns,
  };
}
