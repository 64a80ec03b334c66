/**
 * `npx tsx bench/cold-starts.ts [--runs 10] [--rounds 1] [--only send,check] [--json file]`: the bundles part of
 * `npm run bench` alone (bench/bundles.ts: every entry of the function manifest built as CDK builds it, its size
 * and cold starts beside the baseline's), on a DynamoDB Local of its own, to measure a change to the bundles
 * without the whole run. With `--rounds`, the part is run that many times and each figure is the median of the
 * rounds' medians (this machine is shared: one round moves by tens of percent). With `--only`, the entries whose
 * path holds one of the given words (and the baseline). Prints one line per entry.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { deployedRun, measureBundles, type BundleResult } from './bundles';
import { NumberSource, startBenchDb } from './setup';
import { median, round } from './stats';

const argv = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const runs = Number(option('--runs') ?? 10);
const rounds = Number(option('--rounds') ?? 1);
const jsonFile = option('--json');
const only = option('--only')?.split(',');

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const db = await startBenchDb();
  const byRound: BundleResult[][] = [];
  try {
    const numbers = new NumberSource(90_000_000);
    for (let round = 0; round < rounds; round++) {
      const { results } = await measureBundles(db, numbers, {
        runs,
        deadline: Date.now() + 20 * 60_000,
        only,
      });
      byRound.push(results);
      process.stderr.write(`cold-starts: round ${round + 1} of ${rounds} done\n`);
    }
  } finally {
    await db.stop();
  }
  const medianOf = (values: (number | undefined)[], digits = 1) => {
    const known = values.filter((value): value is number => value !== undefined);
    return known.length > 0 ? round(median(known), digits) : undefined;
  };
  const rows = byRound[0]!.map((first) => {
    const all = byRound.map((results) => results.find((result) => result.entry === first.entry)!);
    const measured = all.map((result) => deployedRun(result));
    return {
      entry: first.entry,
      kb: first.kb,
      gzipKb: first.gzipKb,
      requireMs: medianOf(measured.map((run) => run?.requireMs)),
      firstInvokeMs: medianOf(measured.map((run) => run?.firstInvokeMs)),
      spawnToAnswerMs: medianOf(measured.map((run) => run?.spawnToResponseMs?.median)),
      pairedBaselineMs: medianOf(measured.map((run) => run?.pairedBaselineMs)),
      ratio: medianOf(
        all.map((result) => result.ratioToBaseline),
        2,
      ),
      byRound: all.map((result) => result.ratioToBaseline).join(' '),
      answer: measured[0]?.answer,
      error: first.error ?? measured.find((run) => run?.error)?.error,
      largest: first.largest.map((part) => `${part.source} ${part.kb}`).join(', '),
    };
  });
  const loadAtEnd = loadavg();
  const header = `${rounds} round(s) of ${runs} runs (medians), load average ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} at start, ${loadAtEnd.map((l) => l.toFixed(2)).join(' ')} at end, Node ${process.version}`;
  process.stdout.write(`${header}\n`);
  for (const row of rows) {
    process.stdout.write(
      `${row.entry.padEnd(30)} ${String(row.kb).padStart(6)} KB  starts ${byRound[0]!.find((r) => r.entry === row.entry)?.workflowStarts ?? 0} secrets ${byRound[0]!.find((r) => r.entry === row.entry)?.secretReads ?? 0}  require ${row.requireMs ?? '-'}  first invoke ${row.firstInvokeMs ?? '-'}  spawn to answer ${row.spawnToAnswerMs ?? '-'}  baseline beside ${row.pairedBaselineMs ?? '-'}  ratio ${row.ratio ?? '-'} (by round: ${row.byRound})  ${row.error ?? row.answer ?? ''}\n    ${row.largest}\n`,
    );
  }
  if (jsonFile) writeFileSync(jsonFile, `${JSON.stringify({ header, rows, byRound }, null, 2)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`cold-starts: ${String(error)}\n`);
  process.exitCode = 1;
});
