/**
 * `npm run bench:guard`: the pumping guard's evaluation matrix (docs/bench.md, "Pumping guard"). Every scenario
 * of bench/guard/scenarios.ts runs on every seed of a set, each on its own fresh service and store, at guard level
 * `standard`, in memory, over two child processes (one per core). It reports per scenario the worst seed and the
 * mean: for legitimate scenarios the share of legitimate sends refused (`blocked_by_policy`), for attacks the
 * share of attack sends refused and what the accepted ones cost the owner (route prices, USD).
 *
 *   --train             the training seeds (for tuning); default: the held-out seeds
 *   --seeds 1,2,3       these seeds
 *   --scenarios a,b     these scenarios only
 *   --jobs N            child processes (default 2)
 *   --markdown          print a markdown section (commit, seed split, run time, tables) and write it to
 *                       docs/guard-results.md
 *   --level strict      the guard level the services run at (default `standard`, the level that is reported)
 *   --receipts none     no delivery receipts (default `prompt`: every accepted send's, 3 s after it)
 *   --dynamodb          one confirmation run over DynamoDB Local with its stream: seed 101, `warm` and (b)
 *   --report            print the tables of the last run again (with --markdown, of the published run)
 *   --trace             one scenario on one seed (--scenarios, --seeds): its attack send by send (trace.ts)
 * Every run writes its raw figures to bench/guard/last-run.json (git-ignored); a `--markdown` run also to
 * bench/guard/results.json (results-strict.json at strict, results-no-receipts.json without receipts, each
 * shown in one table), the committed figures behind the published tables, so tuning runs leave them alone.
 */
import { execSync, fork, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { formatFile, writeSection, type Section } from '../markdown';
import { startBenchDb } from '../setup';
import { dynamoBench, memoryBench, type GuardSnapshot } from './backend';
import { ATTACK_START_MS, SCENARIOS, scenarioByName, type Scenario } from './scenarios';
import { RECEIPT_MODES, runScenario, type ReceiptMode, type RunResult, type Tally } from './simulate';
import { formatTrace, traceRun } from './trace';
import { HELD_OUT_SEEDS, MINUTE, TRAINING_SEEDS } from './traffic';

type BenchLevel = 'standard' | 'strict';
const LEVELS: readonly BenchLevel[] = ['standard', 'strict'];
/** The runs docs/guard-results.md publishes: the reported one in full, the others each in one table. */
const PUBLISHED = {
  'standard/prompt': { file: 'bench/guard/results.json', section: 'guard' },
  'strict/prompt': { file: 'bench/guard/results-strict.json', section: 'guardStrict' },
  'standard/none': { file: 'bench/guard/results-no-receipts.json', section: 'guardNoReceipts' },
} satisfies Record<string, { file: string; section: Section }>;
type Published = keyof typeof PUBLISHED;
function published(level: BenchLevel, receipts: ReceiptMode): (typeof PUBLISHED)[Published] {
  const key = `${level}/${receipts}`;
  if (!(key in PUBLISHED))
    throw new Error(`--markdown: no published table for --level ${level} --receipts ${receipts}`);
  return PUBLISHED[key as Published];
}
const LAST_RUN_FILE = 'bench/guard/last-run.json';

interface Job {
  seed: number;
  level: BenchLevel;
  receipts: ReceiptMode;
  scenarios: string[];
}

type ChildMessage =
  { type: 'result'; result: RunResult } | { type: 'done' } | { type: 'error'; error: string };

const memoryFactory = (level: BenchLevel) => (scenario: Scenario, guardState?: GuardSnapshot) =>
  Promise.resolve(
    memoryBench({
      level,
      ...(scenario.allowedCountries && { allowedCountries: scenario.allowedCountries }),
      ...(guardState && { guardState }),
    }),
  );

/** A child: runs the jobs it is sent (all scenarios of one seed share its warm-ups), reports each result. */
function child(): void {
  process.on('message', (message: { type: 'job'; job: Job } | { type: 'exit' }) => {
    if (message.type === 'exit') {
      process.exit(0);
    }
    void (async () => {
      try {
        const cache = new Map<string, GuardSnapshot>();
        for (const name of message.job.scenarios) {
          const result = await runScenario(
            scenarioByName(name),
            message.job.seed,
            memoryFactory(message.job.level),
            cache,
            message.job.receipts,
          );
          process.send!({ type: 'result', result } satisfies ChildMessage);
        }
        process.send!({ type: 'done' } satisfies ChildMessage);
      } catch (error) {
        process.send!({
          type: 'error',
          error: String((error as Error).stack ?? error),
        } satisfies ChildMessage);
      }
    })();
  });
}

async function matrix(
  seeds: number[],
  scenarios: Scenario[],
  level: BenchLevel,
  receipts: ReceiptMode,
  jobs: number,
  onResult: (results: RunResult[]) => void,
): Promise<RunResult[]> {
  // The costliest scenarios first within a seed; seeds handed out one at a time to whichever child is free.
  const queue: Job[] = seeds.map((seed) => ({
    seed,
    level,
    receipts,
    scenarios: scenarios.map((s) => s.name),
  }));
  const total = seeds.length * scenarios.length;
  const results: RunResult[] = [];
  const started = performance.now();
  const workers: Promise<void>[] = [];
  const procs: ChildProcess[] = [];
  const children = Math.min(jobs, queue.length);
  for (let w = 0; w < children; w++) {
    workers.push(
      new Promise<void>((resolve, reject) => {
        const proc: ChildProcess = fork(process.argv[1]!, ['--child'], { execArgv: process.execArgv });
        procs.push(proc);
        const next = () => {
          const job = queue.shift();
          if (job) proc.send({ type: 'job', job });
          else {
            proc.send({ type: 'exit' });
            resolve();
          }
        };
        proc.on('message', (message: ChildMessage) => {
          if (message.type === 'result') {
            results.push(message.result);
            onResult(results);
            const r = message.result;
            const elapsed = (performance.now() - started) / 1000;
            process.stderr.write(
              `[${results.length}/${total} ${elapsed.toFixed(0)} s] ${r.scenario} seed ${r.seed}: legit ${pct(r.legit.blocked, r.legit.sends)} of ${r.legit.sends}` +
                (r.attack.sends > 0
                  ? `, attack ${pct(r.attack.blocked + r.attack.refusedOther, r.attack.sends)} of ${r.attack.sends}, $${r.attack.charged.toFixed(2)}`
                  : '') +
                ` (${r.seconds.toFixed(1)} s, warm-up ${r.warmSeconds.toFixed(1)} s)\n`,
            );
          } else if (message.type === 'done') next();
          else reject(new Error(message.error));
        });
        proc.on('exit', (code) => {
          if (code !== 0) reject(new Error(`bench child exited with ${code}`));
        });
        next();
      }),
    );
  }
  try {
    await Promise.all(workers);
  } catch (error) {
    // One child failed: the others would keep the run waiting on them.
    for (const proc of procs) proc.kill();
    throw error;
  }
  return results;
}

// --- Summary -----------------------------------------------------------------------------------------------

const share = (t: Tally | undefined) =>
  t && t.sends > 0 ? (t.blocked + t.refusedOther) / t.sends : undefined;
const blockedShare = (t: Tally | undefined) => (t && t.sends > 0 ? t.blocked / t.sends : undefined);

interface Stat {
  worst: number;
  mean: number;
}
function stat(values: (number | undefined)[], worst: 'max' | 'min'): Stat | undefined {
  const v = values.filter((x): x is number => x !== undefined);
  if (v.length === 0) return undefined;
  return {
    worst: worst === 'max' ? Math.max(...v) : Math.min(...v),
    mean: v.reduce((a, b) => a + b, 0) / v.length,
  };
}

export interface ScenarioSummary {
  name: string;
  kind: 'legit' | 'attack';
  title: string;
  seeds: number;
  sendsMean: number;
  /** Legit: share of legitimate sends refused (blocked_by_policy): worst = max. */
  legitRefused?: Stat;
  /** The scenario's own users (focus group). */
  focusRefused?: Stat;
  /** Attack: share refused (any refusal): worst = min. */
  attackRefused?: Stat;
  /** USD charged for attack sends: worst = max. */
  attackCost?: Stat;
  /**
   * Share of the attack's unguarded cost (every planned send charged) not charged: worst = min. Where the attacker
   * stops sending at a refusal (e2), the sends it never made count as averted, which refused sends cannot show.
   */
  attackAverted?: Stat;
  attackSendsMean?: number;
  insideRefused?: Stat;
  outsideRefused?: Stat;
  afterFirstRefused?: Stat;
  /** What the focus group of an attack is (`Scenario.focusLabel`). */
  focusLabel: string;
  /**
   * Seeds whose owner was told of a conversion drop (conversion-watch.ts); for an attack, the median minute of the
   * first notice after the attack started. Absent from summaries stored before the watch.
   */
  told?: { seeds: number; minute?: number };
}

/** How many runs told of a conversion drop, and the median minute (from `start`) of their first notices. */
function toldOf(runs: RunResult[], start: number): ScenarioSummary['told'] {
  // Runs stored before the conversion watch have no `drops`.
  const firsts = runs
    .flatMap((r) => (r.drops?.length ? [Math.min(...r.drops.map((d) => d.minute)) - start] : []))
    .sort((a, b) => a - b);
  const middle = firsts.length / 2;
  return {
    seeds: firsts.length,
    ...(firsts.length > 0 && {
      minute: firsts.length % 2 ? firsts[Math.floor(middle)]! : (firsts[middle - 1]! + firsts[middle]!) / 2,
    }),
  };
}
const toldText = ({ told, seeds, kind }: ScenarioSummary) =>
  told === undefined
    ? '-'
    : `${told.seeds}/${seeds}` +
      (kind === 'attack' && told.minute !== undefined ? `, ${told.minute} min` : '');

function summarise(scenarios: Scenario[], results: RunResult[]): ScenarioSummary[] {
  return scenarios.map((scenario) => {
    const runs = results.filter((r) => r.scenario === scenario.name);
    const mean = (f: (r: RunResult) => number) =>
      runs.reduce((a, r) => a + f(r), 0) / Math.max(1, runs.length);
    const summary: ScenarioSummary = {
      name: scenario.name,
      kind: scenario.kind,
      title: scenario.title,
      seeds: runs.length,
      sendsMean: mean((r) => r.legit.sends + r.attack.sends),
      focusLabel: scenario.focusLabel ?? 'campaign users',
      told: toldOf(runs, scenario.kind === 'attack' ? ATTACK_START_MS / MINUTE : 0),
    };
    const legit = stat(
      runs.map((r) => blockedShare(r.legit)),
      'max',
    );
    if (legit) summary.legitRefused = legit;
    const focus = stat(
      runs.map((r) => blockedShare(r.focus)),
      'max',
    );
    if (focus) summary.focusRefused = focus;
    if (scenario.kind === 'attack') {
      const attack = stat(
        runs.map((r) => share(r.attack)),
        'min',
      );
      if (attack) summary.attackRefused = attack;
      const cost = stat(
        runs.map((r) => r.attack.charged),
        'max',
      );
      if (cost) summary.attackCost = cost;
      // Runs stored before the plan was counted have no unguarded cost.
      const averted = stat(
        runs.flatMap((r) => (r.attackPlanned?.cost ? [1 - r.attack.charged / r.attackPlanned.cost] : [])),
        'min',
      );
      if (averted) summary.attackAverted = averted;
      summary.attackSendsMean = mean((r) => r.attack.sends);
      const inside = stat(
        runs.map((r) => share(r.tags.inside)),
        'min',
      );
      if (inside) summary.insideRefused = inside;
      const outside = stat(
        runs.map((r) => share(r.tags.outside)),
        'min',
      );
      if (outside) summary.outsideRefused = outside;
      const after = stat(
        runs.map((r) => share(r.attackAfterFirst)),
        'min',
      );
      if (after) summary.afterFirstRefused = after;
    }
    return summary;
  });
}

const pct = (part: number, whole: number) => (whole === 0 ? '-' : `${((100 * part) / whole).toFixed(2)} %`);
const p = (x: number | undefined, digits = 2) => (x === undefined ? '-' : `${(100 * x).toFixed(digits)} %`);
const usd = (x: number | undefined) => (x === undefined ? '-' : `$${x.toFixed(2)}`);

interface Meta {
  commit: string;
  level: BenchLevel;
  receipts: ReceiptMode;
  seeds: number[];
  split: string;
  seconds: number;
  jobs: number;
}

/** Seeds as runs of consecutive ones: `1-20`, `101-110`, `7, 9-11`. */
function seedRuns(seeds: number[]): string {
  const runs: string[] = [];
  for (let i = 0; i < seeds.length;) {
    let j = i;
    while (j + 1 < seeds.length && seeds[j + 1] === seeds[j]! + 1) j++;
    runs.push(j > i ? `${seeds[i]}-${seeds[j]}` : String(seeds[i]));
    i = j + 1;
  }
  return runs.join(', ');
}

/** What each scenario is, from its definition: the one list of them (docs/bench.md links here). */
function scenarioList(): string[] {
  return [
    '### Scenarios',
    '',
    'Defined in `bench/guard/scenarios.ts`. Windows start 10:00 UTC unless said. Attacks start 5 minutes in, on a',
    "warm service beside its real users; a service's allow-list is the countries of its legitimate traffic.",
    '',
    // A list: as a table's cells, the lines would go to notes (`moveLongCells`).
    ...SCENARIOS.map((scenario) => `- \`${scenario.name}\`: ${scenario.title}.`),
  ];
}

/** How a part of the row above is set off in the first column. */
const PART_INDENT = '↳ ';

function markdown(summaries: ScenarioSummary[], meta: Meta): string {
  const lines: string[] = [];
  lines.push(`### Pumping guard matrix, commit \`${meta.commit}\``);
  lines.push('');
  lines.push(
    `Seeds run: ${meta.split}, ${seedRuns(meta.seeds)}. Training seeds (tuning only): ${seedRuns(TRAINING_SEEDS)}; held-out seeds (reported): ${seedRuns(HELD_OUT_SEEDS)}. Warm-ups from seed + 10000.`,
  );
  lines.push('');
  lines.push(
    `Level \`${meta.level}\`, in memory, ${meta.jobs} processes, run time ${meta.seconds.toFixed(0)} s.`,
  );
  lines.push('');
  // Every scenario ran on every seed of the run: the count is said once, not in a column.
  const seeds = new Set(summaries.map((x) => x.seeds));
  lines.push(
    `Each scenario on ${[...seeds].join(' or ')} seeds. Legitimate sends refused (\`blocked_by_policy\`); worst = the highest seed.`,
  );
  lines.push('');
  lines.push('| Scenario | Sends (mean) | Worst | Mean | Own users worst | Own users mean | Told |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of summaries.filter((x) => x.kind === 'legit'))
    lines.push(
      `| ${s.name} | ${s.sendsMean.toFixed(0)} | ${p(s.legitRefused?.worst)} | ${p(s.legitRefused?.mean)} | ${p(s.focusRefused?.worst)} | ${p(s.focusRefused?.mean)} | ${toldText(s)} |`,
    );
  lines.push('');
  lines.push(
    "Attack sends refused (worst = the lowest seed), what the accepted ones cost (worst = the highest), the share of the unguarded cost averted (worst = the lowest) and the legitimate sends refused beside the attack (worst = the highest). Rows marked ↳: part of the attack above (inside or outside the allow-list, after its first 20 sends, the scenario's own users).",
  );
  lines.push('');
  lines.push(
    '| Attack | Sends (mean) | Worst | Mean | Cost worst | Cost mean | Averted worst | Beside worst | Told |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  // A part of the attack above, marked and labelled alone: the first column stays narrow.
  const part = (label: string, refused: { worst: number; mean: number } | undefined) =>
    `| ${PART_INDENT}${label} | | ${p(refused?.worst, 1)} | ${p(refused?.mean, 1)} | | | | | |`;
  for (const s of summaries.filter((x) => x.kind === 'attack')) {
    const after = s.afterFirstRefused;
    lines.push(
      `| ${s.name} | ${(s.attackSendsMean ?? 0).toFixed(0)} | ${p(s.attackRefused?.worst, 1)} | ${p(s.attackRefused?.mean, 1)} | ${usd(s.attackCost?.worst)} | ${usd(s.attackCost?.mean)} | ${p(s.attackAverted?.worst, 1)} | ${p(s.legitRefused?.worst)} | ${toldText(s)} |`,
    );
    if (s.insideRefused || s.outsideRefused)
      lines.push(part('inside allow-list', s.insideRefused), part('outside allow-list', s.outsideRefused));
    if (after) lines.push(part('after first 20', after));
    if (s.focusRefused) lines.push(part(s.focusLabel, s.focusRefused));
  }
  lines.push('', ...scenarioList());
  return lines.join('\n');
}

/**
 * A run other than the reported one, in one table: what a level buys against the attacks and costs real users,
 * or what the attacks' figures owe to receipts. Without receipts, the legitimate scenarios in one line: the
 * receipt rule can only refuse, so taking receipts away can only lower those figures.
 */
function compactMarkdown(summaries: ScenarioSummary[], meta: Meta): string {
  const noReceipts = meta.receipts === 'none';
  // The legitimate scenario with the most refused on a seed (the first of a tie).
  const worstLegit = summaries
    .filter((s) => s.kind === 'legit')
    .reduce<ScenarioSummary | undefined>(
      (worst, s) => ((s.legitRefused?.worst ?? 0) > (worst?.legitRefused?.worst ?? -1) ? s : worst),
      undefined,
    );
  const lines = [
    `### ${noReceipts ? 'No delivery receipts, at' : 'At'} \`${meta.level}\`, commit \`${meta.commit}\`, ${meta.split} seeds ${meta.seeds[0]}-${meta.seeds.at(-1)}`,
    '',
    // The page shows the strict table first: the same columns, explained once.
    ...(noReceipts
      ? [
          `Legitimate sends refused, worst seed of any scenario: ${p(worstLegit?.legitRefused?.worst)} (${worstLegit?.name}). Columns as at \`strict\` above.`,
          '',
        ]
      : [
          'Sends refused: worst = the highest seed (legitimate), the lowest (attacks). Own/beside: the own users of a',
          'legitimate scenario, the legitimate sends beside an attack; cost: what the accepted attack sends cost; worst seed.',
          'Rows marked ↳: part of the attack above.',
          '',
        ]),
  ];
  // Legitimate scenarios with none refused on any seed, their own users included: named, not tabled.
  const clean = (s: ScenarioSummary) =>
    s.kind === 'legit' && !s.legitRefused?.worst && !s.focusRefused?.worst;
  const untabled = noReceipts ? [] : summaries.filter(clean).map((s) => s.name);
  if (untabled.length > 0) lines.push(`None refused on any seed: ${untabled.join(', ')}.`, '');
  lines.push(
    '| Scenario | Worst | Mean | Own/beside | Cost worst | Cost mean |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  );
  const tabled = summaries.filter((x) => (noReceipts ? x.kind === 'attack' : !clean(x)));
  for (const s of tabled) {
    const refused = s.kind === 'legit' ? s.legitRefused : s.attackRefused;
    const beside = s.kind === 'legit' ? s.focusRefused : s.legitRefused;
    const cost = s.attackCost ? ` ${usd(s.attackCost.worst)} | ${usd(s.attackCost.mean)} |` : ' | |';
    lines.push(
      `| ${s.name} | ${p(refused?.worst, 1)} | ${p(refused?.mean, 1)} | ${p(beside?.worst, 1)} |${cost}`,
    );
    if (s.afterFirstRefused)
      lines.push(
        `| ${PART_INDENT}after 20 | ${p(s.afterFirstRefused.worst, 1)} | ${p(s.afterFirstRefused.mean, 1)} | | | |`,
      );
    if (s.insideRefused)
      lines.push(
        `| ${PART_INDENT}inside | ${p(s.insideRefused.worst, 1)} | ${p(s.insideRefused.mean, 1)} | | | |`,
      );
    if (s.kind === 'attack' && s.focusRefused)
      lines.push(`| ${PART_INDENT}${s.focusLabel} | | | ${p(s.focusRefused.worst, 1)} | | |`);
  }
  return lines.join('\n');
}

const render = (summaries: ScenarioSummary[], meta: Meta) =>
  meta.level === 'standard' && meta.receipts === 'prompt'
    ? markdown(summaries, meta)
    : compactMarkdown(summaries, meta);

function plain(summaries: ScenarioSummary[], seconds: number): string {
  const lines = [`Pumping guard matrix: ${seconds.toFixed(0)} s`];
  for (const s of summaries) {
    if (s.kind === 'legit')
      lines.push(
        `${s.name.padEnd(22)} legit refused worst ${p(s.legitRefused?.worst)} mean ${p(s.legitRefused?.mean)}; own users worst ${p(s.focusRefused?.worst)} mean ${p(s.focusRefused?.mean)}; told ${toldText(s)}`,
      );
    else
      lines.push(
        `${s.name.padEnd(22)} attack blocked worst ${p(s.attackRefused?.worst, 1)} mean ${p(s.attackRefused?.mean, 1)}; cost worst ${usd(s.attackCost?.worst)} mean ${usd(s.attackCost?.mean)}; averted worst ${p(s.attackAverted?.worst, 1)}` +
          (s.outsideRefused
            ? `; inside ${p(s.insideRefused?.mean, 1)} outside ${p(s.outsideRefused?.mean, 1)}`
            : '') +
          (s.afterFirstRefused ? `; after first 20 worst ${p(s.afterFirstRefused.worst, 1)}` : '') +
          (s.focusRefused
            ? `; its ${s.focusLabel} refused worst ${p(s.focusRefused.worst)} mean ${p(s.focusRefused.mean)}`
            : '') +
          `; legit refused worst ${p(s.legitRefused?.worst)}; told ${toldText(s)}`,
      );
  }
  return lines.join('\n');
}

async function dynamodbConfirmation(seed: number, names: string[], level: BenchLevel): Promise<void> {
  const db = await startBenchDb();
  try {
    for (const name of names) {
      const scenario = scenarioByName(name);
      process.stderr.write(
        `DynamoDB Local: ${name} seed ${seed} (warm-up folded through the consumer first)\n`,
      );
      const result = await runScenario(scenario, seed, (s) =>
        dynamoBench(db, {
          level,
          ...(s.allowedCountries && { allowedCountries: s.allowedCountries }),
        }),
      );
      console.log(plain(summarise([scenario], [result]), result.seconds));
    }
  } finally {
    await db.stop();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--child')) return child();
  const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const level = (option('--level') ?? 'standard') as BenchLevel;
  if (!LEVELS.includes(level)) throw new Error(`--level: one of ${LEVELS.join(', ')}`);
  const receipts = (option('--receipts') ?? 'prompt') as ReceiptMode;
  if (!RECEIPT_MODES.includes(receipts)) throw new Error(`--receipts: one of ${RECEIPT_MODES.join(', ')}`);
  if (args.includes('--dynamodb'))
    return dynamodbConfirmation(
      Number(option('--seeds')?.split(',')[0] ?? HELD_OUT_SEEDS[0]),
      option('--scenarios')?.split(',') ?? ['warm', 'b_flood'],
      level,
    );
  if (args.includes('--trace')) {
    const names = option('--scenarios')?.split(',') ?? [];
    const seeds = option('--seeds')?.split(',').map(Number) ?? [];
    if (names.length !== 1 || seeds.length !== 1 || !Number.isInteger(seeds[0]))
      throw new Error('--trace: one scenario (--scenarios NAME) and one seed (--seeds N)');
    const scenario = scenarioByName(names[0]!);
    console.log(formatTrace(scenario, seeds[0]!, await traceRun(scenario, seeds[0]!, level, receipts)));
    return;
  }
  const markdownWanted = args.includes('--markdown');
  if (args.includes('--report')) {
    // The tables again, no run: of the published run for --markdown, else of the last run (on a fresh clone, the
    // published one).
    const file =
      markdownWanted || !existsSync(LAST_RUN_FILE) ? published(level, receipts).file : LAST_RUN_FILE;
    const last = JSON.parse(readFileSync(file, 'utf8')) as {
      commit: string;
      level?: BenchLevel;
      receipts?: ReceiptMode;
      seeds: number[];
      split: string;
      seconds: number;
      jobs?: number;
      partial?: boolean;
      runs: RunResult[];
      summaries: ScenarioSummary[];
    };
    if (last.partial) last.split += ` (partial: ${last.runs.length} runs)`;
    // Figures from before receipts could be turned off had them all.
    const shown = { level: last.level ?? 'standard', receipts: last.receipts ?? 'prompt' };
    const text = markdownWanted
      ? render(last.summaries, { ...last, ...shown, jobs: last.jobs ?? 2 })
      : plain(last.summaries, last.seconds);
    console.log(text);
    if (markdownWanted) await writeSection(published(shown.level, shown.receipts).section, text);
    return;
  }
  const seedsArg = option('--seeds');
  const seeds = seedsArg
    ? seedsArg.split(',').map(Number)
    : args.includes('--train')
      ? TRAINING_SEEDS
      : HELD_OUT_SEEDS;
  const split = seedsArg ? 'chosen' : args.includes('--train') ? 'training' : 'held-out';
  const scenarios = option('--scenarios')?.split(',').map(scenarioByName) ?? SCENARIOS;
  const jobs = Number(option('--jobs') ?? 2);
  // Before the run: a --markdown run with no published table fails now, not after ten minutes.
  const target = markdownWanted ? published(level, receipts) : undefined;
  const commit = execSync('git rev-parse --short HEAD').toString().trim();
  const started = performance.now();
  process.stderr.write(
    `${scenarios.length} scenarios x ${seeds.length} seeds (${split}) at ${level}, receipts ${receipts}, ${jobs} processes\n`,
  );
  const write = (results: RunResult[], partial: boolean) => {
    const seconds = (performance.now() - started) / 1000;
    const runs = [...results].sort((a, b) => a.scenario.localeCompare(b.scenario) || a.seed - b.seed);
    const summary = {
      commit,
      date: new Date().toISOString(),
      level,
      receipts,
      split,
      seeds,
      jobs,
      seconds: Math.round(seconds),
      ...(partial && { partial: true }),
      summaries: summarise(scenarios, runs),
      runs,
    };
    writeFileSync(LAST_RUN_FILE, JSON.stringify(summary, null, 1) + '\n');
    return summary;
  };
  // Written after every run too (marked partial), so an interrupted matrix still has its figures.
  const results = await matrix(seeds, scenarios, level, receipts, jobs, (soFar) => write(soFar, true));
  const { summaries, seconds } = write(results, false);
  const text = target
    ? render(summaries, { commit, level, receipts, seeds, split, seconds, jobs })
    : plain(summaries, seconds);
  console.log(text);
  if (target) {
    // The published figures: what docs/guard-results.md shows, and what `--report --markdown` renders again.
    copyFileSync(LAST_RUN_FILE, target.file);
    await formatFile(target.file);
    await writeSection(target.section, text);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
