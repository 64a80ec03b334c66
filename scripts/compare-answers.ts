/**
 * `npx tsx scripts/compare-answers.ts A B`: compares two recordings of the integration suite's answers
 * (`OTP_RECORD_ANSWERS=<directory> npx jest test/integration --selectProjects dynamodb`, docs/testing.md) answer
 * by answer, keyed by test file, test and sequence number. Prints the answers that differ, those missing from B
 * and those only in B, sorted; exits 1 when there is any.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { normaliseTest, type RecordedAnswer } from '../test/support/answer-recorder';

/**
 * What two runs of the same code do not repeat, and why. `test` is a prefix of the full test name. With
 * `fields`, those keys are left out of that test's answers (at any depth); without, the test's answers are
 * left out altogether, however many there are.
 */
export interface Unstable {
  file: string;
  test: string;
  fields?: string[];
  reason: string;
}

export const UNSTABLE: readonly Unstable[] = [
  {
    file: 'test/integration/guard-local.test.ts',
    test: 'a service created a minute ago verifies 300 users',
    reason:
      'its numbers are drawn at random, and how many sends of the flood pass before the stream consumer (on its ' +
      'own timer) blocks it is timing',
  },
  {
    file: 'test/integration/fetch-auth.test.ts',
    test: 'unknown keys cannot starve real ones (per function instance) a flood of random well-formed keys',
    reason:
      'how many requests of the flood are refused before the budget for unknown keys refills is real time',
  },
  {
    file: 'test/integration/webhooks.test.ts',
    test: 'endpoints disabled endpoints get nothing, enabled ones get events again',
    fields: ['signature'],
    reason: "the POST log is read while the receiver may not yet have checked a POST's signature",
  },
  {
    file: 'test/integration/console-webhook-deliveries.test.ts',
    test: 'a delivered webhook and a failing one (HTTP 500)',
    fields: ['entries'],
    reason: 'a timeline is read while the first delivery attempt may not be recorded yet',
  },
  {
    file: 'test/integration/guard-caps.test.ts',
    test: 'a cap reached refuses the country (403) a moment after',
    fields: ['value'],
    reason: 'how many sends the stream consumer counted before the cap refused is timing',
  },
  {
    file: 'test/integration/admin.test.ts',
    test: 'balance and charges charges lists one line per accepted send',
    fields: ['stdout'],
    reason:
      'two charges made at one instant of the fake clock are listed, as text, in the order of their random SIDs',
  },
  {
    file: 'test/integration/guard.test.ts',
    test: '',
    fields: ['expected', 'services'],
    reason:
      "a block's expected run length and the order of the services it names vary between runs of the same code",
  },
];

/**
 * The simulated carrier's receipt arrives on its own timer, which most tests do not wait for: an answer may
 * show a delivery PENDING (a message `accepted`) or already DELIVERED (`delivered`). Other values are compared.
 */
const RACING: Readonly<Record<string, readonly string[]>> = {
  delivery_status: ['PENDING', 'DELIVERED'],
  deliveryStatus: ['PENDING', 'DELIVERED'],
  outcome: ['accepted', 'delivered'],
};

/** The answer without the unstable fields (present or not), and the racing delivery statuses blanked. */
function comparable(value: unknown, fields: ReadonlySet<string>, key = ''): unknown {
  const racing = Object.hasOwn(RACING, key) ? RACING[key] : undefined;
  if (racing && typeof value === 'string' && racing.includes(value)) return `<${racing.join(' or ')}>`;
  if (Array.isArray(value)) return value.map((item) => comparable(item, fields, key));
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([name]) => !fields.has(name))
        .map(([name, item]) => [name, comparable(item, fields, name)]),
    );
  return value;
}

export interface Comparison {
  /** How many answers each recording holds. */
  counts: { a: number; b: number };
  same: number;
  /** Answers of tests left out (UNSTABLE). */
  unstable: number;
  differing: { key: string; paths: string[]; a: RecordedAnswer; b: RecordedAnswer }[];
  missing: { key: string; a: RecordedAnswer }[];
  extra: { key: string; b: RecordedAnswer }[];
}

/** Every answer of a recording: a directory of `.jsonl` files or one file. */
export function readRecording(path: string): RecordedAnswer[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((name) => name.endsWith('.jsonl'))
        .sort()
        .map((name) => join(path, name))
    : [path];
  return files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as RecordedAnswer),
  );
}

/**
 * Applies the recorder's current normalisation again, each test's answers in order, so that recordings made
 * before a rule was added compare under it (normalised answers stay as they are).
 */
export function normaliseRecording(answers: RecordedAnswer[]): RecordedAnswer[] {
  const tests = new Map<string, RecordedAnswer[]>();
  for (const answer of [...answers].sort(compareAnswers)) {
    const key = `${answer.file}\n${answer.test}`;
    const test = tests.get(key) ?? [];
    test.push(answer);
    tests.set(key, test);
  }
  return [...tests.values()].flatMap((test) => normaliseTest(test));
}

export const answerKey = (answer: RecordedAnswer): string => `${answer.file} › ${answer.test} #${answer.seq}`;

/** Sorts keys by file, test, then sequence numbers as numbers (`2` before `10`, `7.2` after `7.1`). */
function compareAnswers(a: RecordedAnswer, b: RecordedAnswer): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  if (a.test !== b.test) return a.test < b.test ? -1 : 1;
  const [x, y] = [a.seq.split('.').map(Number), b.seq.split('.').map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const difference = (x[i] ?? -1) - (y[i] ?? -1);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** The JSON paths where two values differ (at most `limit`). */
export function differingPaths(a: unknown, b: unknown, path = '$', limit = 5): string[] {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const bothObjects =
    a !== null &&
    b !== null &&
    typeof a === 'object' &&
    typeof b === 'object' &&
    Array.isArray(a) === Array.isArray(b);
  if (!bothObjects) return [path];
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])];
  const paths: string[] = [];
  for (const key of keys) {
    paths.push(...differingPaths(left[key], right[key], `${path}.${key}`, limit));
    if (paths.length >= limit) return paths.slice(0, limit);
  }
  // Same members in another order.
  return paths.length > 0 ? paths : [`${path} (order)`];
}

export function compareRecordings(
  a: RecordedAnswer[],
  b: RecordedAnswer[],
  unstable: readonly Unstable[] = UNSTABLE,
): Comparison {
  const rule = (answer: RecordedAnswer) =>
    unstable.filter((entry) => entry.file === answer.file && answer.test.startsWith(entry.test));
  const leftOut = (answer: RecordedAnswer) => rule(answer).some((entry) => !entry.fields);
  const byKey = (answers: RecordedAnswer[]) => {
    const map = new Map<string, RecordedAnswer>();
    for (const answer of answers) {
      const key = answerKey(answer);
      if (map.has(key)) throw new Error(`Two answers recorded as ${key}`);
      map.set(key, answer);
    }
    return map;
  };
  const [left, right] = [byKey(a), byKey(b)];
  const comparison: Comparison = {
    counts: { a: a.length, b: b.length },
    same: 0,
    unstable: 0,
    differing: [],
    missing: [],
    extra: [],
  };
  for (const answer of [...a].sort(compareAnswers)) {
    const key = answerKey(answer);
    const other = right.get(key);
    if (leftOut(answer)) comparison.unstable += 1;
    else if (!other) comparison.missing.push({ key, a: answer });
    else {
      const fields = new Set(rule(answer).flatMap((entry) => entry.fields ?? []));
      const paths = differingPaths(comparable(answer, fields), comparable(other, fields));
      if (paths.length === 0) comparison.same += 1;
      else comparison.differing.push({ key, paths, a: answer, b: other });
    }
  }
  for (const answer of [...b].sort(compareAnswers)) {
    if (!left.has(answerKey(answer)) && !leftOut(answer))
      comparison.extra.push({ key: answerKey(answer), b: answer });
  }
  return comparison;
}

/** The comparison in words; the last line sums it up. */
export function describeComparison(comparison: Comparison): string {
  const lines: string[] = [];
  const line = (answer: RecordedAnswer) =>
    JSON.stringify({
      method: answer.method,
      path: answer.path,
      status: answer.status,
      headers: answer.headers,
      body: answer.body,
    });
  for (const { key, paths, a, b } of comparison.differing) {
    lines.push(`differs: ${key} at ${paths.join(', ')}`, `  A: ${line(a)}`, `  B: ${line(b)}`);
  }
  for (const { key, a } of comparison.missing) lines.push(`missing from B: ${key}`, `  A: ${line(a)}`);
  for (const { key, b } of comparison.extra) lines.push(`only in B: ${key}`, `  B: ${line(b)}`);
  const { counts, same, unstable, differing, missing, extra } = comparison;
  lines.push(
    `A ${counts.a} answers, B ${counts.b}: ${same} identical, ${unstable} of unstable tests left out, ` +
      `${differing.length} differing, ${missing.length} missing from B, ${extra.length} only in B`,
  );
  return `${lines.join('\n')}\n`;
}

export const hasDifferences = (comparison: Comparison): boolean =>
  comparison.differing.length + comparison.missing.length + comparison.extra.length > 0;

if (require.main === module) {
  const [a, b] = process.argv.slice(2);
  if (!a || !b) {
    process.stderr.write('usage: npx tsx scripts/compare-answers.ts <recording A> <recording B>\n');
    process.exit(2);
  }
  const comparison = compareRecordings(
    normaliseRecording(readRecording(a)),
    normaliseRecording(readRecording(b)),
  );
  process.stdout.write(describeComparison(comparison));
  if (hasDifferences(comparison)) process.exitCode = 1;
}
