/**
 * `npm run bench`: DynamoDB requests and capacity per operation and per delivery path, latency against the
 * DynamoDB time, throughput over HTTP, Lambda bundle sizes and cold starts, and the AWS bill per million
 * verifications, against DynamoDB Local. Writes bench/results.json and prints the tables (docs/bench.md).
 *
 *   npm run bench                 the full run (within 10 minutes on 2 cores)
 *   npm run bench -- --quick      fewer iterations, to try the bench itself
 *   npm run bench -- --markdown   print the tables as Markdown and write them to docs/bench-results.md
 *   npm run bench -- --markdown --from-results   the same from the last run's results (targets judged again),
 *                                                without running
 *   npm run bench -- --fees [--markdown]         the provider fees per verification alone (bench/fees.ts)
 *   npm run bench -- --capacity [--capacity-rate N] [--capacity-window-ms MS] [--capacity-shards N] [--markdown]
 *                                                the capacity model alone, added to the last run's results
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { GUARD_TUMBLING_WINDOW_SECONDS } from '../functions/core/guard/consumer';
import { DEFAULT_SETTINGS } from '../functions/core/settings';
import { measureBundles } from './bundles';
import { DEFAULT_TRANSACTION_WINDOW_MS, measureCapacity, type CapacityPlan } from './capacity';
import { ASSUMPTIONS, costModel } from './cost';
import { renderFees } from './fees';
import { countOperations } from './counts';
import { countGuardConsumer } from './guard-consumer';
import { measureLatency } from './latency';
import { benchSection, writeSection } from './markdown';
import {
  CAPACITY_TARGET_PREFIX,
  capacityTargets,
  evaluateTargets,
  renderCapacity,
  renderReport,
  type BenchResults,
  type Machine,
} from './report';
import { startBenchService } from './service';
import { NumberSource, createAccount, startBenchDb } from './setup';
import { measureThroughput } from './throughput';

const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');

/** The number after `--name` on the command line, or `fallback`. */
function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} needs a positive number`);
  return value;
}

/**
 * The guard consumer's rates, as monthly volumes (a 30-day month's sends evenly spread): the bill's volume first
 * (the one it prices), then 2.6, 10 and 26 million a month (1, 3.9 and 10 sends a second).
 */
const GUARD_VOLUMES = [ASSUMPTIONS.billMonthlyVerifications, 2_592_000, 10_000_000, 25_920_000];
/**
 * Two hours of traffic folded first: the longest any aggregate keeps by time (the scope's minutes). At each rate
 * above, the items stop growing by then (the ranges reach their bounds): the metered batches rewrite them at their
 * working size.
 */
const GUARD_WARMUP_SECONDS = 2 * 3600;

/** The whole run must end within 10 minutes; the parts shorten themselves past their share. */
const HARD_LIMIT_MS = 10 * 60_000;
const PLAN = quick
  ? {
      countRuns: 2,
      iterations: 200,
      warmup: 50,
      taskIterations: 50,
      levels: [1, 8],
      durationS: 2,
      coldRuns: 3,
      guard: { warmupSeconds: 120, measuredSeconds: 60 },
      capacity: { sample: 20, seconds: 5 },
    }
  : {
      countRuns: 5,
      iterations: 2000,
      warmup: 200,
      taskIterations: 200,
      levels: [1, 8, 32],
      durationS: 5,
      coldRuns: 20,
      // One tumbling window metered: its batches carry the events and write them as deployed.
      guard: { warmupSeconds: GUARD_WARMUP_SECONDS, measuredSeconds: GUARD_TUMBLING_WINDOW_SECONDS },
      capacity: { sample: 100, seconds: 10 },
    };

const CAPACITY: CapacityPlan = {
  ...PLAN.capacity,
  rate: numberArg('--capacity-rate', 1000),
  windowMs: numberArg('--capacity-window-ms', DEFAULT_TRANSACTION_WINDOW_MS),
  // The bench service runs without the limit (it would refuse the load); the model spreads keys by its default.
  keyRequestsPerMinute: DEFAULT_SETTINGS.keyRequestsPerMinute,
  // A service this busy spreads its balance (docs/adr/0014-sharded-balance.md); `--capacity-shards 1` shows why.
  balanceShards: numberArg('--capacity-shards', 64),
};

/** The bench service as every part that counts requests runs it. */
const SERVICE_OPTIONS = {
  // The default limits (burst 3 per number...), a 1 s receipt wait, and no per-key limit for the load.
  settings: { channelWaitSeconds: 1, keyRequestsPerMinute: 1_000_000_000 },
  modelCapacity: true,
};

const RESULTS_FILE = join(__dirname, 'results.json');

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

function machine(): Omit<Machine, 'loadAverageAtEnd'> {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
    }).trim();
    if (dirty) commit += ' (with uncommitted changes)';
  } catch {
    // Not a git checkout.
  }
  return {
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    loadAverageAtStart: loadavg(),
    commit,
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const at = (fraction: number) => started + fraction * HARD_LIMIT_MS;
  const host = machine();
  log(`${quick ? 'quick run' : 'full run'} on ${host.nproc} CPUs (${host.cpu}), Node ${host.node}`);

  const parts: Record<string, number> = {};
  let partStarted = Date.now();
  const partDone = (name: string) => {
    parts[name] = Math.round((Date.now() - partStarted) / 100) / 10;
    partStarted = Date.now();
  };
  const db = await startBenchDb();
  // If anything ends the process early, DynamoDB Local (a Java child) must not outlive it.
  const killDynamo = () => db.dynamo.process.kill('SIGKILL');
  process.once('exit', killDynamo);
  const watchdog = setTimeout(() => {
    log('over 10 minutes: stopping');
    process.exit(2);
  }, HARD_LIMIT_MS);
  watchdog.unref();

  let results: BenchResults;
  try {
    partDone('DynamoDB Local');
    const numbers = new NumberSource();
    const service = await startBenchService(db, SERVICE_OPTIONS);
    let counts;
    let latency;
    let capacity;
    try {
      const caller = await createAccount(db, 1_000_000);
      const broke = await createAccount(db, 0);
      log('counting DynamoDB requests per operation and per delivery path');
      counts = await countOperations(service, caller, broke, numbers, PLAN.countRuns);
      partDone('counts');
      log(
        `the guard's stream consumer at ${GUARD_VOLUMES.map((volume) => volume.toLocaleString('en-US')).join(', ')} sends a month: ${PLAN.guard.warmupSeconds} s warm-up, ${PLAN.guard.measuredSeconds} s metered each`,
      );
      counts.guardConsumerByRate = [];
      for (const volume of GUARD_VOLUMES)
        counts.guardConsumerByRate.push(
          await countGuardConsumer(db, {
            ...PLAN.guard,
            sendsPerSecond: volume / ASSUMPTIONS.secondsPerMonth,
          }),
        );
      // The bill prices the consumer at its own volume's rate, for a deployment of one service; beside it, the same
      // volume in a deployment of 4 services, where the consumer keeps the global scope.
      counts.guardConsumer = counts.guardConsumerByRate[0];
      counts.guardConsumerByRate.push(
        await countGuardConsumer(db, {
          ...PLAN.guard,
          sendsPerSecond: GUARD_VOLUMES[0]! / ASSUMPTIONS.secondsPerMonth,
          services: 4,
        }),
      );
      partDone('guard consumer');
      log(`capacity: ${CAPACITY.sample} verifications replayed at ${CAPACITY.rate} a second`);
      capacity = await measureCapacity(
        service,
        await createAccount(db, 1_000_000, CAPACITY.balanceShards),
        CAPACITY,
      );
      partDone('capacity');

      // Latency runs without the capacity probes (they read items around every write).
      for (const meter of Object.values(service.meters)) meter.probe = undefined;
      log(`latency: ${PLAN.iterations} calls of each operation`);
      latency = await measureLatency(db, service, caller, numbers, {
        iterations: PLAN.iterations,
        warmup: PLAN.warmup,
        taskIterations: PLAN.taskIterations,
        deadline: at(0.55),
      });
      partDone('latency');
    } finally {
      await service.close();
    }

    log(`throughput over HTTP at ${PLAN.levels.join(', ')} connections`);
    const throughput = await measureThroughput(db, numbers, {
      levels: PLAN.levels,
      durationS: PLAN.durationS,
      deadline: at(0.75),
    });
    partDone('throughput');

    log(`bundles and cold starts (${PLAN.coldRuns} runs each)`);
    // On a DynamoDB Local of its own: after the latency and throughput parts, the shared one answered a cold
    // function's first requests several times slower (a cold send 763 ms there, 256 ms on a fresh one), which
    // measured the emulator's state, not the function.
    const coldDb = await startBenchDb();
    let bundles: Awaited<ReturnType<typeof measureBundles>>;
    try {
      bundles = await measureBundles(coldDb, numbers, { runs: PLAN.coldRuns, deadline: at(0.92) });
    } finally {
      await coldDb.dynamo.stop();
    }
    partDone('bundles');

    const cost = costModel(counts, latency);
    results = {
      machine: { ...host, loadAverageAtEnd: loadavg() },
      runSeconds: (Date.now() - started) / 1000,
      partSeconds: parts,
      counts,
      latency,
      throughput,
      bundles,
      cost,
      capacity,
      targets: evaluateTargets(counts, latency, bundles, cost, capacity),
    };
  } finally {
    clearTimeout(watchdog);
    await db.stop();
    process.off('exit', killDynamo);
  }

  const file = RESULTS_FILE;
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${renderReport(results, args.has('--markdown'))}\n`);
  process.stdout.write(`\n${renderFees(args.has('--markdown'))}`);
  if (args.has('--markdown')) {
    await writeSection('bench', benchSection(results));
    await writeSection('fees', renderFees(true));
    if (results.capacity) await writeSection('capacity', renderCapacity(results.capacity, true));
  }
  log(
    `wrote ${file}; ${results.targets.filter((target) => !target.met).length} of ${results.targets.length} targets missed (see docs/bench.md)`,
  );
}

/** The capacity model alone, on a DynamoDB Local of its own; added to the last run's results when there are any. */
async function capacityOnly(): Promise<void> {
  const db = await startBenchDb();
  const killDynamo = () => db.dynamo.process.kill('SIGKILL');
  process.once('exit', killDynamo);
  try {
    const service = await startBenchService(db, SERVICE_OPTIONS);
    let capacity;
    try {
      log(`capacity: ${CAPACITY.sample} verifications replayed at ${CAPACITY.rate} a second`);
      capacity = await measureCapacity(
        service,
        await createAccount(db, 1_000_000, CAPACITY.balanceShards),
        CAPACITY,
      );
    } finally {
      await service.close();
    }
    process.stdout.write(`${renderCapacity(capacity, args.has('--markdown'))}\n`);
    if (args.has('--markdown')) await writeSection('capacity', renderCapacity(capacity, true));
    if (!existsSync(RESULTS_FILE)) {
      log(`no ${RESULTS_FILE} to add the figures to: run the bench first`);
      return;
    }
    const saved = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
    const results = {
      ...saved,
      capacity,
      targets: [
        ...saved.targets.filter((target) => !target.target.startsWith(CAPACITY_TARGET_PREFIX)),
        ...capacityTargets(capacity),
      ],
    };
    writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
    log(`added the capacity figures to ${RESULTS_FILE}`);
  } finally {
    await db.stop();
    process.off('exit', killDynamo);
  }
}

if (args.has('--capacity')) {
  capacityOnly().catch((error: unknown) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
} else if (args.has('--fees')) {
  // A model over the routing table's prices, no run: seconds, and nothing else on the page changes.
  process.stdout.write(renderFees(args.has('--markdown')));
  if (args.has('--markdown')) void writeSection('fees', renderFees(true));
} else if (args.has('--from-results')) {
  const read = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
  // Capacity figures of before the API keys and retries were modelled: `--capacity` measures them again.
  const capacity = read.capacity && 'apiKeys' in read.capacity ? read.capacity : undefined;
  if (read.capacity && !capacity) log('the saved capacity figures are of an older model: left out');
  // Results of before the bill under the assumed receipts: it is priced from their own counts and timings.
  const modelled = read.cost.assumedReceipts ? undefined : costModel(read.counts, read.latency);
  const cost = modelled
    ? { ...read.cost, assumedReceipts: modelled.assumedReceipts, workflowUnits: modelled.workflowUnits }
    : read.cost;
  // The targets as judged now, from the saved figures.
  const saved: BenchResults = {
    ...read,
    cost,
    capacity,
    targets: evaluateTargets(read.counts, read.latency, read.bundles, cost, capacity),
  };
  process.stdout.write(`${renderReport(saved, args.has('--markdown'))}\n`);
  process.stdout.write(`\n${renderFees(args.has('--markdown'))}`);
  if (args.has('--markdown'))
    void writeSection('bench', benchSection(saved))
      .then(() => writeSection('fees', renderFees(true)))
      .then(() => saved.capacity && writeSection('capacity', renderCapacity(saved.capacity, true)));
} else {
  main().catch((error: unknown) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
