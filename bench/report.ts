/** Part 6: the targets of the issue against the figures, and the printed tables (text or Markdown). */
import { GUARD_BATCH_WINDOW_SECONDS } from '../functions/core/guard/consumer';
import type { BundleResult, BundleResults } from './bundles';
import type { CapacityResults } from './capacity';
import { CEILING_SHARE, PARTITION_LIMITS } from './capacity-model';
import { BASELINE_ENTRY, BUNDLE_LIMIT_BYTES, RUNTIME_SDK_VARIANT, deployedRun } from './bundles';
import { ASSUMPTIONS, edgeCost, monthlyVolumeOf, type CostResults } from './cost';
import type { CountResults, OperationCount, SweeperCount } from './counts';
import type { GuardConsumerCount } from './guard-consumer';
import type { LatencyResults } from './latency';
import { SETTLE_AGE_SECONDS, STALL_SECONDS } from '../functions/core/sweeper';
import { FUNCTIONS } from '../lib/functions';
import { fmt, markdownTable, round, table } from './stats';
import type { ThroughputResults } from './throughput';

export interface Machine {
  date: string;
  nproc: number;
  cpu: string;
  node: string;
  platform: string;
  memoryGb: number;
  loadAverageAtStart: number[];
  loadAverageAtEnd: number[];
  commit: string;
}

export interface Target {
  target: string;
  limit: string;
  measured: string;
  met: boolean;
  note: string;
  /** One of a family of targets (one per entry) that the results page states once, its figures on one line. */
  group?: TargetGroup;
}

interface TargetGroup {
  /** The family's target, stating its limit. */
  title: string;
  /** This target's member (an entry's file name) and its figure. */
  item: string;
  value: string;
  /** What to say of this member beside its figure, if anything (members with the same note share it). */
  note?: string;
}

export interface BenchResults {
  machine: Machine;
  runSeconds: number;
  /** Seconds each part took. */
  partSeconds: Record<string, number>;
  counts: CountResults;
  latency: LatencyResults;
  throughput?: ThroughputResults;
  bundles?: BundleResults;
  cost: CostResults;
  /** Absent from results of before the capacity model. */
  capacity?: CapacityResults;
  targets: Target[];
}

const ROUND_TRIP_TARGETS: { operation: string; max: number; label: string }[] = [
  { operation: 'send accepted', max: 3, label: 'accepted send: at most 3 round trips plus cache misses' },
  { operation: 'check, right code', max: 1, label: 'check with the right code: 1 round trip' },
  { operation: 'check, wrong code', max: 2, label: 'check with a wrong code: at most 2 round trips' },
  { operation: 'fetch', max: 1, label: 'fetch: 1 round trip' },
];

/**
 * A bundle's two AWS SDK choices as measured in the run (as deployed: bundled; beside it: the runtime's), and
 * whether the bundled one starts measurably faster (the runtime's at least 5 % slower).
 */
function sdkChoiceOf(bundle: BundleResult) {
  const deployed = deployedRun(bundle);
  const runtimeSdk = bundle.cold.find((run) => run !== deployed && run.variant === RUNTIME_SDK_VARIANT);
  const bundledMs = deployed?.spawnToResponseMs?.median;
  const runtimeMs = runtimeSdk?.spawnToResponseMs?.median;
  if (bundledMs === undefined || runtimeMs === undefined) return undefined;
  return { bundledMs, runtimeMs };
}

/** The target for the projected AWS bill of one million verifications (the cost model's "projected" column). */
const BILL_TARGET_USD = 20;

export function evaluateTargets(
  counts: CountResults,
  latency: LatencyResults,
  bundles: BundleResults | undefined,
  cost?: CostResults,
  capacity?: CapacityResults,
): Target[] {
  const targets: Target[] = [];
  if (cost) {
    const projected = cost.totalFourServices.projected;
    const onUrl = cost.totalWithReceiptsOnFunctionUrl?.projected;
    // Judged on the bill's definition; beside it, the same bill under the fee model's assumed receipts.
    const assumed = cost.assumedReceipts?.map((row) => row.total) ?? [];
    const range =
      assumed.length === 0
        ? ''
        : ` ($${Math.min(...assumed).toFixed(2)} to $${Math.max(...assumed).toFixed(2)} under the fee model's assumed receipts, ${cost.assumedReceipts!.map((row) => row.country).join(', ')})`;
    // At the volume the bill states (the guard consumer's rate); beside it, the bill at the other volumes measured.
    const monthly = cost.monthlyVerifications;
    const others = (cost.guardByVolume ?? []).filter(
      (row) => row.monthlyVerifications !== monthly && (row.services ?? 1) < 4,
    );
    const withGlobal = (cost.guardByVolume ?? []).find(
      (row) => row.monthlyVerifications === monthly && (row.services ?? 1) >= 4,
    );
    const byVolume = others
      .map(
        (row) =>
          `$${row.totalFourServices.toFixed(2)} at ${row.monthlyVerifications.toLocaleString('en-US')}`,
      )
      .join(', ');
    const consumer = cost.perVerification.guardConsumer;
    targets.push({
      target: `projected AWS bill per million verifications${monthly ? ` at ${monthly.toLocaleString('en-US')} a month` : ''} (delivered on the first channel, its receipt within 1 s of the hand-over), default deployment: at most $${BILL_TARGET_USD.toFixed(2)}`,
      limit: `<= $${BILL_TARGET_USD.toFixed(2)}`,
      measured: `$${projected.toFixed(2)}${range}`,
      met: projected <= BILL_TARGET_USD,
      note: [
        ...(consumer && byVolume
          ? [
              `$${consumer.usd.toFixed(2)} of it is the guard's stream consumer, which costs per ${GUARD_BATCH_WINDOW_SECONDS}-s batch, not per send; at other monthly volumes: ${byVolume}`,
            ]
          : []),
        ...(withGlobal
          ? [
              `$${withGlobal.totalFourServices.toFixed(2)} in a deployment of ${withGlobal.services} services or more, where the consumer keeps the global scope ($${withGlobal.usd.toFixed(2)})`,
            ]
          : []),
        ...(onUrl === undefined
          ? []
          : [
              `$${onUrl.toFixed(2)} with otp:receiptFunctionUrl (receipt callbacks on the function's own URL; needs otp:receiptReservedConcurrency, off by default)`,
            ]),
      ].join('. '),
    });
  }
  const op = (name: string): OperationCount | undefined =>
    counts.operations.find((entry) => entry.operation === name);
  for (const { operation, max, label } of ROUND_TRIP_TARGETS) {
    const count = op(operation);
    if (!count) continue;
    // Round trips: waits one after another. Results of before they were counted give requests, which the
    // requests sent together (a key write beside a read) overstate.
    const withAuth = count.roundTrips?.withAuth ?? count.withAuth.requests;
    const without = count.roundTrips?.withoutAuth ?? count.withoutAuth.requests;
    const metWith = withAuth <= max;
    const metWithout = without <= max;
    const requests = count.roundTrips ? ` (${fmt(count.withAuth.requests)} requests)` : '';
    targets.push({
      target: label,
      limit: `<= ${max}`,
      measured: `${fmt(withAuth)}${requests} with the per-key limit, ${fmt(without)} without`,
      met: metWith,
      note: metWith
        ? 'met with every request the handler makes'
        : metWithout
          ? count.roundTrips
            ? `met by the operation itself; the per-key request limit's UpdateItem, which every API request makes, adds ${fmt(withAuth - without)} before it`
            : `met by the operation itself; the per-key request limit adds ${fmt(withAuth - without)} UpdateItem to every API request`
          : `missed by ${fmt(without - max)} even without the per-key limit`,
    });
  }
  const coldSend = op('send accepted, cold function (first request of the key there)');
  if (coldSend) {
    targets.push({
      target: 'accepted send on a cold function (first request of the key there): at most 3 round trips',
      limit: '<= 3',
      measured: `${fmt(coldSend.roundTrips?.withAuth ?? coldSend.withAuth.requests)} (${coldSend.roundTrips ? `round trips; ${fmt(coldSend.withAuth.requests)} requests: ` : ''}${Object.entries(
        coldSend.withAuth.byKind,
      )
        .map(([kind, n]) => `${kind} ${fmt(n)}`)
        .join(', ')})`,
      met: (coldSend.roundTrips?.withAuth ?? coldSend.withAuth.requests) <= 3,
      note: "one write on the key's item whatever the state of its window: a function new to the key counts as a warm one does",
    });
  }
  for (const operation of latency.operations) {
    targets.push({
      target: `${operation.operation}: p50 handler <= 1.3 x its DynamoDB time`,
      limit: '<= 1.3',
      measured: `${fmt(operation.ratioP50)} (${fmt(operation.handler.p50)} ms / ${fmt(operation.dynamo.p50)} ms)`,
      met: operation.ratioP50 <= 1.3,
      // Its overhead and its ratio to raw round trips are in the latency table.
      note: '',
      group: {
        title: 'each operation: p50 handler <= 1.3 x its DynamoDB time',
        item: operation.operation,
        value: fmt(operation.ratioP50),
      },
    });
  }
  // The SDK choice is one setting for every function, so it is judged on all the measured functions together:
  // the sum of their cold-start medians each way. One function's medians differ by less than its runs' spread
  // (tens of ms here), so a per-function verdict flipped from run to run.
  const measuredSdk = (bundles?.results ?? [])
    .filter((bundle) => !bundle.error && bundle.entry !== BASELINE_ENTRY)
    .map(sdkChoiceOf)
    .filter((choice) => choice !== undefined);
  const sdkTotals = measuredSdk.reduce(
    (total, choice) => ({
      bundledMs: total.bundledMs + choice.bundledMs,
      runtimeMs: total.runtimeMs + choice.runtimeMs,
    }),
    { bundledMs: 0, runtimeMs: 0 },
  );
  // "Measurably faster": the runtime's SDK at least 5 % slower over them all.
  const bundledSdkWins = measuredSdk.length > 0 && sdkTotals.runtimeMs >= sdkTotals.bundledMs * 1.05;
  const overall = `all ${measuredSdk.length} measured: ${fmt(round(sdkTotals.bundledMs, 0))} vs ${fmt(round(sdkTotals.runtimeMs, 0))} ms (sums of medians)`;
  for (const bundle of bundles?.results ?? []) {
    if (bundle.error || bundle.entry === BASELINE_ENTRY) continue;
    // Target: a cold start near a bare function's (the baseline: a document client and one GetItem).
    const deployed = deployedRun(bundle);
    if (deployed?.spawnToResponseMs) {
      const max = bundle.entry === FUNCTIONS.send.entry ? 1.3 : 1.1;
      targets.push({
        target: `cold start of ${bundle.entry} <= ${max} x the baseline's`,
        limit: `<= ${max}`,
        measured:
          bundle.ratioToBaseline === undefined
            ? 'no baseline'
            : `${fmt(bundle.ratioToBaseline)} (${fmt(deployed.spawnToResponseMs.median)} ms / ${fmt(deployed.pairedBaselineMs ?? Number.NaN)} ms)`,
        met: bundle.ratioToBaseline !== undefined && bundle.ratioToBaseline <= max,
        // Its require and first invoke times are in the bundles table.
        note: '',
        group: {
          title: "cold start of each entry <= 1.1 x the baseline's (the send's <= 1.3)",
          item: entryName(bundle.entry),
          value: bundle.ratioToBaseline === undefined ? 'no baseline' : fmt(bundle.ratioToBaseline),
        },
      });
    }
    // Target: under 400 KB, unless bundling the AWS SDK (which takes a bundle past it) measurably starts faster
    // than the runtime's SDK: then the cold start wins. Judged over every measured function (above); the stream
    // and queue consumers, with no cold start here, take the same setting.
    const sdk = sdkChoiceOf(bundle);
    targets.push({
      target: `bundle ${bundle.entry} under 400 KB minified, or the bundled SDK starts faster`,
      limit: '< 400 KB',
      measured: `${fmt(bundle.kb)} KB`,
      met: bundle.bytes < BUNDLE_LIMIT_BYTES || bundledSdkWins,
      note: bundle.underLimit
        ? ''
        : `over by ${fmt(round((bundle.bytes - BUNDLE_LIMIT_BYTES) / 1024, 1))} KB; ${
            sdk
              ? `this one ${fmt(sdk.bundledMs)} ms bundled vs ${fmt(sdk.runtimeMs)} ms with the runtime's SDK; `
              : 'no cold start of its own; '
          }${overall}`,
      group: {
        title: 'each bundle under 400 KB minified, or the bundled SDK starts faster',
        item: entryName(bundle.entry),
        value: `${fmt(bundle.kb)} KB`,
        // Each one's own cold start either way is in the bundles table ("other SDK choice").
        ...(!bundle.underLimit && {
          note: `over 400 KB; the bundled SDK ${bundledSdkWins ? 'starts faster' : 'does not start faster'}, ${overall}`,
        }),
      },
    });
  }
  if (capacity) targets.push(...capacityTargets(capacity));
  return targets;
}

/** The rate one service must sustain (sends a second). */
const CAPACITY_TARGET_RATE = 1000;
/** Every capacity target's name starts so (`--capacity` replaces them alone in the saved results). */
export const CAPACITY_TARGET_PREFIX = 'capacity of one service';

/**
 * At the target rate no item, partition key or ledger tail above CEILING_SHARE of a partition's limits, and the
 * first of them to reach it at or above that rate. A run at another rate judges the first at its own rate, and a
 * rate below the target cannot meet it.
 */
export function capacityTargets(capacity: CapacityResults): Target[] {
  const share = capacity.hottest?.shareOfLimit ?? 0;
  // JSON keeps Infinity (no load that grows with the rate) as null.
  const ceiling: number | null = capacity.ceilingSendsPerSecond;
  const atRate = capacity.rate === CAPACITY_TARGET_RATE ? '' : ` (replayed at ${fmt(capacity.rate)} sends/s)`;
  return [
    {
      target: `${CAPACITY_TARGET_PREFIX} at ${fmt(CAPACITY_TARGET_RATE)} sends/s: no item, partition key or tail above ${CEILING_SHARE * 100} % of its limit`,
      limit: `<= ${CEILING_SHARE * 100} %`,
      // A family in backticks: `<VA>` would be an HTML tag in Markdown.
      measured: `${fmt(round(share * 100, 1))} %${capacity.hottest ? ` on \`${capacity.hottest.item}\`` : ''}${atRate}`,
      met: capacity.rate >= CAPACITY_TARGET_RATE && share <= CEILING_SHARE,
      note: '',
    },
    {
      target: `${CAPACITY_TARGET_PREFIX}: the first hot spot reaches ${CEILING_SHARE * 100} % at or above ${fmt(CAPACITY_TARGET_RATE)} sends/s`,
      limit: `>= ${fmt(CAPACITY_TARGET_RATE)}`,
      measured: `${rateText(ceiling)}${capacity.ceiling ? ` (\`${capacity.ceiling.family}\`, ${capacity.ceiling.scope})` : ''}`,
      met: ceiling === null || ceiling >= CAPACITY_TARGET_RATE,
      note: '',
    },
  ];
}

type Render = (header: string[], rows: (string | number)[][]) => string;

const kinds = (byKind: Record<string, number>) =>
  Object.entries(byKind)
    .map(([kind, n]) => (n === 1 ? kind : `${fmt(n)}x ${kind}`))
    .join(' + ');

/** The sweeper's rows of the operations table: per verification, and per run (absent from older results). */
const sweeperRows = (sweeper: SweeperCount | undefined): (string | number)[][] =>
  sweeper
    ? [
        [
          `sweeper, per verification (${sweeper.sends} sends, both halves)`,
          '-',
          '-',
          sweeper.perVerification.requests,
          '',
          `${fmt(sweeper.perVerification.requests)}: ${kinds(sweeper.perVerification.byKind)}`,
          sweeper.perVerification.rru,
          sweeper.perVerification.wru,
          sweeper.perVerification.reportedCapacity,
        ],
        [
          `sweeper, per run (a run a minute; nothing found, ${sweeper.services} services)`,
          '-',
          '-',
          sweeper.perRun.requests,
          '',
          `${fmt(sweeper.perRun.requests)}: ${kinds(sweeper.perRun.byKind)}`,
          sweeper.perRun.rru,
          sweeper.perRun.wru,
          sweeper.perRun.reportedCapacity,
        ],
      ]
    : [];

/** A monthly volume as the page writes it. */
const volume = (count: number) => count.toLocaleString('en-US');

/** What the guard consumer adds to the DynamoDB line, and the traffic it was measured on. */
export function guardConsumerLine(guard: GuardConsumerCount): string {
  return (
    `The guard's stream consumer in the DynamoDB line: ${fmt(guard.perSend.wru)} WRU + ${fmt(guard.perSend.rru)} RRU per send ` +
    `(${fmt(guard.perSend.wru * 1_000_000)} WRU + ${fmt(guard.perSend.rru * 1_000_000)} RRU per million sends), ` +
    `${guard.services === undefined ? 'one service' : `a deployment of ${guard.services === 1 ? 'one service' : `${guard.services} services, one sending`}`} at ${fmt(guard.sendsPerSecond)} sends/s (${volume(monthlyVolumeOf(guard.sendsPerSecond))} a month) over ${guard.countries.length} countries (${guard.checkedShare * 100} % checked, ${(guard.receiptShare ?? 0) * 100} % with a receipt), ` +
    `a batch every ${GUARD_BATCH_WINDOW_SECONDS} s, after ${guard.warmupSeconds >= 3600 ? `${fmt(guard.warmupSeconds / 3600)} h` : `${fmt(guard.warmupSeconds)} s`} of warm-up; largest guard item ${fmt(Math.round(guard.largestItemBytes / 1024))} KB. ` +
    'It rewrites the items a batch touches whole: per send it shrinks as the rate grows and grows with the item sizes.' +
    (guard.services !== undefined && guard.services < 4
      ? ' Below 4 services no global block can apply to anyone, and the consumer keeps no global scope.'
      : '')
  );
}

/** The guard consumer by monthly volume: its units per batch and per send, and the bill at each volume. */
function guardVolumeTable(cost: CostResults, render: Render, heading: (text: string) => string): string[] {
  const rows = cost.guardByVolume;
  if (!rows) return [];
  return [
    heading(
      `The guard's stream consumer by monthly volume (one service sending, 5 countries, a batch every ${GUARD_BATCH_WINDOW_SECONDS} s), projected, USD per 1,000,000`,
    ),
    render(
      [
        'verifications a month',
        'services',
        'sends/s',
        'WRU a batch',
        'RRU a batch',
        'WRU a send',
        'RRU a send',
        'largest item KB',
        'consumer',
        'total of the four',
      ],
      rows.map((row) => [
        volume(row.monthlyVerifications),
        row.services === undefined
          ? '-'
          : row.services >= 4
            ? `${row.services} or more`
            : String(row.services),
        round(row.sendsPerSecond, 2),
        row.wruPerBatch,
        row.rruPerBatch,
        row.wru,
        row.rru,
        round(row.largestItemBytes / 1024, 1),
        row.usd.toFixed(2),
        row.totalFourServices.toFixed(2),
      ]),
    ),
    `The consumer costs per batch, not per send: each batch reads the items of every (scope, country) record ` +
      `its stream records touch and rewrites each of those records whole. Per batch its units grow only with the ` +
      `items' sizes; per send they fall as the rate grows. The bill above prices it at ${volume(cost.monthlyVerifications ?? 0)} a month ` +
      `(sends evenly spread: every ${GUARD_BATCH_WINDOW_SECONDS}-s window has a batch); "total of the four" is that bill with the ` +
      `consumer as measured at each volume instead. Below 4 services the consumer keeps no global scope (a global ` +
      `block applies to a service only when 3 others showed its signal); from 4 it reads and writes it too.`,
  ];
}

/** A bundle's short name in the notes under its table and in the targets' lines: the entry's file name. */
const entryName = (entry: string) => entry.replace(/^.*\//, '');

/**
 * The bundles table (sizes, cold starts, each "what if" as a column) and, under it, each bundle's AWS clients
 * and largest parts as one list line: as cells they made the table the page's widest.
 */
function bundleTables(bundles: BundleResults, render: Render, heading: (text: string) => string): string[] {
  const runs = Math.max(0, ...bundles.results.map((bundle) => deployedRun(bundle)?.runs ?? 0));
  const out = [
    heading(
      `Lambda bundles (esbuild as CDK: minify, node22, cjs); cold start on Node ${bundles.node}, ms, median of ${runs} runs`,
    ),
  ];
  out.push(
    render(
      [
        'entry',
        'KB',
        'gzip KB',
        'spawn to answer',
        'ratio to baseline',
        'baseline beside it',
        'require',
        'first invoke',
        'other SDK choice',
        'answer',
        ...bundles.whatIf.map((_, n) => `what if ${n + 1}, KB`),
      ],
      bundles.results.map((bundle) => {
        const whatIf = bundles.whatIf.map((variant) => variant.kb[bundle.entry] ?? '-');
        if (bundle.error)
          return [bundle.entry, '-', '-', 'not bundled', ...Array<string>(6).fill('-'), ...whatIf];
        const deployed = deployedRun(bundle);
        const other = bundle.cold.find((run) => run !== deployed);
        const spawn = deployed?.spawnToResponseMs;
        const answer = deployed?.answer || '-';
        return [
          bundle.entry,
          bundle.kb,
          bundle.gzipKb,
          spawn
            ? `${fmt(spawn.median)}${deployed.runs === runs ? '' : ` (${deployed.runs} runs)`}`
            : deployed?.error
              ? 'failed'
              : 'size only',
          bundle.ratioToBaseline ?? '-',
          deployed?.pairedBaselineMs ?? '-',
          deployed?.requireMs ?? '-',
          deployed?.firstInvokeMs ?? '-',
          other?.spawnToResponseMs ? fmt(other.spawnToResponseMs.median) : '-',
          answer.length > 12 ? `${answer.slice(0, 11)}…` : answer,
          ...whatIf,
        ];
      }),
    ),
  );
  out.push('');
  const whatIfs = bundles.whatIf.map((variant, n) => `what if ${n + 1}: ${variant.variant}`);
  const failures = bundles.results.flatMap((bundle) => {
    const error = bundle.error ?? deployedRun(bundle)?.error;
    return error ? [`${entryName(bundle.entry)}: ${error.split('\n')[0]}`] : [];
  });
  out.push(
    [
      '"Size only": a stream or queue consumer. The other SDK choice: the baseline bundled, an entry with the runtime\'s SDK',
      ...whatIfs,
      ...failures,
    ].join('; ') + '. AWS clients, then the largest parts (KB):',
  );
  out.push('');
  for (const bundle of bundles.results) {
    const clients =
      // Older results have no client list.
      (bundle.awsClients ?? []).join(' ') + (bundle.clientsAsDeclared === false ? ' (not as declared)' : '');
    const parts = bundle.largest
      .slice(0, 3)
      .map((part) => `${part.source.replace(' (this project)', '').replace('@aws-sdk/', '')} ${fmt(part.kb)}`)
      .join(', ');
    out.push(`- ${entryName(bundle.entry)}: ${clients || '-'}; ${parts}`);
  }
  if (bundles.consoleAssets) {
    out.push('');
    out.push(
      `Account console page (console/ui, esbuild, minified): ${bundles.consoleAssets
        .map((asset) => `${asset.file} ${fmt(asset.kb)} KB (${fmt(asset.gzipKb)} gzipped)`)
        .join(', ')}`,
    );
  }
  return out;
}

export function renderReport(results: BenchResults, markdown = false): string {
  const render: Render = markdown ? markdownTable : table;
  const heading = (text: string) => (markdown ? `\n### ${text}\n` : `\n== ${text} ==\n`);
  const out: string[] = [];
  const m = results.machine;
  out.push(
    `${markdown ? '' : 'otp bench: '}${m.date}, ${m.nproc} CPUs (${m.cpu}), Node ${m.node}, ${m.platform}, ` +
      `load average ${m.loadAverageAtStart.map((n) => n.toFixed(2)).join(' ')} at start, ` +
      `${m.loadAverageAtEnd.map((n) => n.toFixed(2)).join(' ')} at end; commit ${m.commit}; ran ${Math.round(results.runSeconds)} s (` +
      Object.entries(results.partSeconds)
        .map(([part, seconds]) => `${part} ${Math.round(seconds)} s`)
        .join(', ') +
      ')',
  );

  out.push(heading('DynamoDB requests and capacity per operation (warm function unless said)'));
  out.push(
    render(
      [
        'operation',
        'answer',
        // Waits one after another: requests sent together (a send's key write and batch read) count once.
        'round trips (all / without auth)',
        'requests (all)',
        // The API-key middleware's: the per-key limit's write, the key lookup on a cache miss.
        'of which auth',
        'without them',
        'RRU',
        'WRU',
        'Local reported CU',
      ],
      [
        ...results.counts.operations.map((entry) => [
          entry.operation,
          entry.outcome,
          entry.roundTrips ? `${fmt(entry.roundTrips.withAuth)} / ${fmt(entry.roundTrips.withoutAuth)}` : '-',
          entry.withAuth.requests,
          kinds(
            Object.fromEntries(
              Object.entries(entry.withAuth.byKind).filter(([kind]) => kind.startsWith('auth:')),
            ),
          ),
          `${fmt(entry.withoutAuth.requests)}: ${kinds(entry.withoutAuth.byKind)}`,
          entry.withAuth.rru,
          entry.withAuth.wru,
          entry.withAuth.reportedCapacity,
        ]),
        ...sweeperRows(results.counts.sweeper),
      ],
    ),
  );
  if (results.counts.sweeper) {
    const sweeper = results.counts.sweeper;
    out.push(
      `Sweeper: ${sweeper.sends} sends delivered on the first channel, two runs of sweepDeliveries over them (the restart half at ${STALL_SECONDS} s, the settle half at ${SETTLE_AGE_SECONDS} s), ` +
        `less the same two runs over no send. Per verification: ${fmt(sweeper.perVerification.rru)} RRU, of it ${fmt(sweeper.ledgerRru)} the charge line's share of the ledger queries ` +
        `(within ${fmt(round(2 / sweeper.sends, 3))}: a query is rounded up to 4 KB); requests at this batch size (a run reads up to 100 sends in one BatchGetItem). ` +
        `Per run, whatever the volume: the cursor read and written, the directory query, and in each half one ledger query per service (${sweeper.services} here).`,
    );
  }

  out.push(heading('One delivery workflow by path (tasks + receipt callbacks)'));
  out.push(
    render(
      [
        'path',
        'ends',
        'task runs',
        'states entered',
        'receipts',
        'requests',
        'by kind',
        'RRU',
        'WRU',
        'wait s',
        'status reads',
        'ms here',
      ],
      results.counts.paths.map((entry) => [
        entry.path,
        entry.deliveryStatus,
        kinds(entry.tasks),
        entry.stateTransitions,
        entry.receipts,
        entry.total.requests,
        kinds(entry.total.byKind),
        entry.total.rru,
        entry.total.wru,
        entry.waitSeconds,
        entry.statusReads,
        entry.executionMs,
      ]),
    ),
  );

  const lat = results.latency;
  out.push(heading(`Latency in-process, ${lat.iterations} calls each after ${lat.warmup} warm-up (ms)`));
  out.push(
    render(
      [
        'operation',
        'p50',
        'p95',
        'p99',
        'DynamoDB p50',
        'overhead p50',
        'p50 ratio',
        'per-call ratio',
        'raw round trips p50',
        'ratio to raw',
      ],
      lat.operations.map((entry) => [
        entry.operation,
        entry.handler.p50,
        entry.handler.p95,
        entry.handler.p99,
        entry.dynamo.p50,
        entry.overhead.p50,
        entry.ratioP50,
        entry.ratioPerCallMedian,
        entry.rawDynamoP50,
        entry.ratioToRaw,
      ]),
    ),
  );
  out.push('');
  out.push(
    render(
      ['request kind', 'raw p50', 'raw p95', 'raw p99', 'in handlers p50', 'in handlers p95'],
      lat.raw.map((entry) => [
        entry.kind,
        entry.raw.p50,
        entry.raw.p95,
        entry.raw.p99,
        entry.inHandlers?.p50 ?? '-',
        entry.inHandlers?.p95 ?? '-',
      ]),
    ),
  );
  out.push('');
  out.push(
    render(
      ['delivery side', 'n', 'mean', 'p50', 'p95', 'DynamoDB p50', 'carrier call p50'],
      lat.tasks.map((entry) => [
        entry.task,
        entry.duration.n,
        entry.duration.mean,
        entry.duration.p50,
        entry.duration.p95,
        entry.dynamo.p50,
        entry.carrier?.p50 ?? '-',
      ]),
    ),
  );

  if (results.throughput) {
    out.push(
      heading(`Throughput over HTTP on the local stack, ${results.throughput.durationPerRunS} s per run`),
    );
    out.push(
      render(
        [
          'operation',
          'connections',
          'req/s',
          'p50 ms',
          'p97.5',
          'p99',
          'requests',
          's',
          'unexpected',
          'DynamoDB req/request',
        ],
        results.throughput.runs.map((run) => [
          run.operation,
          run.connections,
          run.requestsPerSecond,
          run.latencyMs.p50,
          run.latencyMs.p97_5,
          run.latencyMs.p99,
          run.completed,
          run.durationS,
          run.unexpected + run.errors,
          run.dynamoRequestsPerRequest,
        ]),
      ),
    );
  }

  if (results.bundles) out.push(...bundleTables(results.bundles, render, heading));

  const cost = results.cost;
  out.push(
    heading(
      `AWS bill per 1,000,000 verifications${cost.monthlyVerifications ? ` at ${volume(cost.monthlyVerifications)} a month` : ''} (send, check, 2 fetches, delivered on the first channel), USD, ${cost.prices.region}, ${cost.prices.takenFor}`,
    ),
  );
  out.push(
    render(
      ['service', 'measured here', 'projected to AWS', 'basis'],
      [
        ...cost.lines.map((line) => [
          line.service,
          line.measured.toFixed(2),
          line.projected.toFixed(2),
          line.basis,
        ]),
        [
          'total of the four',
          cost.totalFourServices.measured.toFixed(2),
          cost.totalFourServices.projected.toFixed(2),
          '',
        ],
        [
          'total with the estimates',
          cost.totalWithOther.measured.toFixed(2),
          cost.totalWithOther.projected.toFixed(2),
          '',
        ],
        ...(cost.totalWithReceiptsOnFunctionUrl
          ? [
              [
                'total of the four, receipts on the function URL',
                cost.totalWithReceiptsOnFunctionUrl.measured.toFixed(2),
                cost.totalWithReceiptsOnFunctionUrl.projected.toFixed(2),
                `otp:receiptFunctionUrl (with otp:receiptReservedConcurrency): ${cost.totalWithReceiptsOnFunctionUrl.callbacks} receipt callback(s) without their API Gateway request`,
              ],
            ]
          : []),
        edgeRow(cost),
      ],
    ),
  );

  if (results.counts.guardConsumer) out.push(guardConsumerLine(results.counts.guardConsumer));

  if (cost.sweeperPerRun) {
    const runs = cost.sweeperPerRun;
    out.push(
      `Not in the bill per million: the sweeper's runs, whatever the volume (${fmt(runs.runsPerMonth)} a month, one a minute; each as the run that found nothing, ${runs.services} services): ` +
        `${fmt(runs.requests)} requests, ${fmt(runs.rru)} RRU + ${fmt(runs.wru)} WRU a run, $${runs.dynamoUsdPerMonth.toFixed(2)} of DynamoDB and $${runs.lambdaRequestsUsdPerMonth.toFixed(2)} of Lambda requests a month (its duration not priced); each service adds a ledger query per half a run.`,
    );
  }

  out.push(...guardVolumeTable(cost, render, heading));

  out.push(
    heading(
      `The delivery workflow by receipt delay (${cost.assumptions.channelWaitSeconds} s wait, status reads at ${cost.assumptions.receiptDelaysSeconds.slice(0, -1).join(', ')} s), projected, USD per 1,000,000`,
    ),
  );
  out.push(
    render(
      [
        'receipt after',
        'status reads',
        'AfterWait task',
        'Express billed s',
        'Express',
        'reads RRU',
        'reads',
        'AfterWait',
        'total',
      ],
      cost.receiptDelays.map((row) => [
        row.receipt,
        row.statusReads,
        row.afterWaitTask ? 'yes' : 'no',
        row.billedSeconds,
        row.expressUsd.toFixed(2),
        row.readRru,
        row.readsUsd.toFixed(2),
        row.afterWaitUsd.toFixed(2),
        row.totalUsd.toFixed(2),
      ]),
    ),
  );

  if (cost.assumedReceipts) {
    out.push(
      heading(
        `The bill under the fee model's assumed receipts, projected, USD per 1,000,000 (the four services)`,
      ),
    );
    out.push(
      render(
        [
          'country',
          'channels',
          'P(2nd message)',
          'Step Functions',
          'Lambda',
          'DynamoDB',
          'API Gateway',
          'total',
        ],
        cost.assumedReceipts.map((row) => [
          row.country,
          row.channels.join(', '),
          `${(row.secondMessage * 100).toFixed(1)} %`,
          row.stepFunctions.toFixed(2),
          row.lambda.toFixed(2),
          row.dynamoDb.toFixed(2),
          row.apiGateway.toFixed(2),
          row.total.toFixed(2),
        ]),
      ),
    );
    out.push(
      `The bill above, its delivery priced as expected under the fee model's assumed receipts (\`ASSUMED_RECEIPTS\` ` +
        `in bench/fees.ts, \`expectedWorkflow\` in bench/cost.ts): each country's channels in order; a silent channel or ` +
        `a receipt after the ${cost.assumptions.channelWaitSeconds} s wait adds the whole wait, the AfterWait task and ` +
        `the next channel; a failure receipt moves on at the next status read; a code entered before the switch is ` +
        `not modelled (an upper bound).`,
    );
  }

  if (results.capacity) out.push(renderCapacity(results.capacity, markdown));

  out.push(heading('Targets'));
  out.push(
    render(
      ['target', 'limit', 'measured', 'met', 'note'],
      results.targets.map((target) => [
        target.target,
        target.limit,
        target.measured,
        target.met ? 'yes' : 'NO',
        target.note,
      ]),
    ),
  );
  return out.join('\n');
}

/** The optional edge's row: added to either total by a deployment with `otp:edge`, so in neither. */
function edgeRow(cost: CostResults): string[] {
  const edge = edgeCost(cost);
  const usd = edge.usdPerMillion.toFixed(2);
  return [
    'optional edge (otp:edge), add to a total',
    usd,
    usd,
    `${edge.requests} requests through CloudFront and AWS WAF, ${(edge.requests * ASSUMPTIONS.edgeAnswerBytes) / 1024} KB out; plus $${edge.usdPerMonth} a month (WebACL, ${ASSUMPTIONS.edgeWafRules} rules)`,
  ];
}

/** Rows of the capacity table shown: the hottest families. */
const CAPACITY_ROWS = 6;

const rateText = (rate: number | null) => (rate === null || !Number.isFinite(rate) ? '-' : fmt(rate));

const percent = (share: number) => `${fmt(round(share * 100, 2))} %`;

/**
 * The capacity model's section: the hottest families at the replayed rate, today's ceiling, the API keys the
 * sends come from, the send's conflicts and their retries.
 */
export function renderCapacity(capacity: CapacityResults, markdown = false): string {
  const render: Render = markdown ? markdownTable : table;
  // `<VA>` would be an HTML tag in Markdown.
  const name = (family: string) => (markdown ? `\`${family}\`` : family);
  const keys = capacity.apiKeys;
  const heading = `Capacity of one service at ${fmt(capacity.rate)} sends/s (model, ${capacity.seconds} virtual s, ${fmt(keys.keys)} API keys)`;
  const out = [markdown ? `\n### ${heading}\n` : `\n== ${heading} ==\n`];
  out.push(
    render(
      ['hottest', 'key family', 'WCU/s', 'RCU/s', 'of limit', `rate at ${CEILING_SHARE * 100} %`],
      capacity.hotSpots
        .slice(0, CAPACITY_ROWS)
        .map((spot) => [
          spot.scope,
          name(spot.family),
          spot.wcu,
          spot.rcu,
          percent(spot.share),
          rateText(spot.rateAtCeiling),
        ]),
    ),
  );
  // A line right under a table would be read as one of its rows.
  out.push('');
  const ceiling = capacity.ceiling;
  const conflicts = capacity.conflicts;
  const retries = capacity.retries;
  const families = Object.entries(conflicts.byFamily)
    .map(([family, n]) => `${name(family)} ${fmt(n)}`)
    .join(', ');
  const retriesText = (value: number | null) =>
    value === null || !Number.isFinite(value) ? 'unbounded' : fmt(value);
  out.push(
    (ceiling
      ? `Ceiling: ${rateText(capacity.ceilingSendsPerSecond)} sends/s, where ${name(ceiling.family)} (${ceiling.scope}) reaches ${CEILING_SHARE * 100} % of a partition's ${PARTITION_LIMITS.wcu} WCU / ${PARTITION_LIMITS.rcu} RCU a second. `
      : 'No load that grows with the rate. ') +
      `API keys: ${fmt(keys.keys)}, each at most ${fmt(keys.keyRequestsPerMinute)} requests/min (${fmt(keys.keyRequestsPerVerification)} a verification). ` +
      `Conflict rate p (sends whose transaction met another transaction's write on one of its items within ${conflicts.windowMs} ms): ${String(round(capacity.conflictRate, 4))}; ` +
      `retries a send ${retriesText(retries.retriesPerSend)}, +${retriesText(retries.extraWcuPerSend)} WCU a send (a cancelled transaction assumed to cost the applied one's ${fmt(retries.wcuPerTransaction)} WCU). ` +
      `Writes meeting a transaction: ${fmt(conflicts.conflicting)} (${fmt(conflicts.transactions)} transactions${families ? `; ${families}` : ''}); ` +
      `${conflicts.conflictFamily ? name(conflicts.conflictFamily) : 'no item'} gets writes closer than ${conflicts.windowMs} ms from ${rateText(conflicts.conflictFreeRate)} sends/s. ` +
      `Per verification: ${fmt(capacity.perVerification.requests)} requests, ${fmt(capacity.perVerification.wcu)} WCU, ${fmt(capacity.perVerification.rcu)} RCU (sample of ${capacity.sample}). ` +
      `Not included: ${capacity.notIncluded.join('; ')}.`,
  );
  return out.join('\n');
}
