/**
 * Records what the integration tests were answered, so that a refactor can be shown to answer byte for byte as
 * the code before it (docs/testing.md, scripts/compare-answers.ts). Off unless `OTP_RECORD_ANSWERS=<directory>`
 * is set; then `record-answers.ts` (a Jest setup file) installs it in each test file of the `dynamodb` project.
 *
 * Recorded: every HTTP answer a test asked for itself (any `fetch` whose synchronous caller is in the test
 * file, so the harness's `ApiClient`, console and callback helpers alike, but not the service's own background
 * calls, whose order is a race) and every `runAdmin` run. One JSON line per answer, one file per test file
 * (Jest's workers never share a file), written when the file's tests end, in the order the tests asked.
 *
 * Normalised so that two runs of the same code give the same file: values drawn at random (SIDs, API keys,
 * tokens, codes, table names, ports, request ids) become placeholders numbered in order of first appearance
 * within the test; the wall clock's values (ISO times, epoch numbers) become one placeholder. Answers made
 * while `eventually` polls keep only its last probe (how many probes it took is timing). Answers to requests
 * sent together (`Promise.all`) are sorted, since which of them wins a race is not the code's to decide.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

export interface RecordedAnswer {
  /** The test file, relative to the repository. */
  file: string;
  /** The test's full name (describe blocks and title); empty in `beforeAll`/`afterAll`. */
  test: string;
  /** Order within the test: `7`, or `7.2` for the second answer of the poll in slot 7. */
  seq: string;
  kind: 'http' | 'admin';
  /** HTTP method, or `admin` and its arguments. */
  method: string;
  /** The path and query with values drawn at random replaced. */
  path: string;
  /** HTTP status, or the admin command's exit code. */
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON when the answer is JSON, otherwise the text (admin: stdout and stderr). */
  body: unknown;
}

/** Headers that carry the moment or the connection, not the service's answer. */
const SKIPPED_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'x-request-id',
  'apigw-requestid',
  'x-amzn-requestid',
  'x-amzn-trace-id',
]);

const ISO_TIME = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?/g;
/** Epoch seconds or milliseconds between 2001 and 2286, the only numbers this large the service writes. */
const isEpoch = (value: number): boolean =>
  Number.isInteger(value) && ((value >= 1e9 && value < 1e10) || (value >= 1e12 && value < 1e13));
/** Measured times (a webhook POST's `durationMs`, and the same in the console's words): the machine's speed. */
const DURATION_KEY = /^(?:durationMs|latencyMs|elapsedMs)$/;
const DURATION_TEXT = /\bin \d+ ms\b/g;

/** Each kind of value drawn at random, and the stem of its placeholder; earlier patterns go first. */
const RANDOM_VALUES: { pattern: RegExp; stem: (match: string) => string }[] = [
  // SIDs and event ids: two capitals and 32 hex characters.
  { pattern: /\b[A-Z]{2}[0-9a-f]{32}\b/g, stem: (match) => match.slice(0, 2) },
  // Console session tokens.
  { pattern: /\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g, stem: () => 'jwt' },
  // Webhook signatures over payloads signed with random secrets.
  { pattern: /\bv1,[A-Za-z0-9+/]{20,}={0,2}/g, stem: () => 'signature' },
  // API keys, console tokens and webhook secrets: a short lowercase prefix, `_`, base64 or base64url.
  {
    pattern: /\b[a-z]{2,8}_[A-Za-z0-9_+/-]{20,}={0,2}/g,
    stem: (match) => match.slice(0, match.indexOf('_')),
  },
  { pattern: /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, stem: () => 'uuid' },
  { pattern: /\botp-[a-z-]+-[0-9a-f]{8,12}\b/g, stem: () => 'table' },
  // API key ids (never after a `+`: a phone number), and the prefixes of them tests pass (with a letter).
  { pattern: /\b(?<!\+)[0-9a-f]{12}\b/g, stem: () => 'id' },
  { pattern: /\b(?=[0-9]*[a-f])[0-9a-f]{8}\b/g, stem: () => 'hex' },
  { pattern: /\b127\.0\.0\.1:\d+/g, stem: () => 'host' },
];
/** Generated codes in the text of a message (the simulated carrier's inbox). */
const CODE = /(?<![#\d])\d{4,10}(?!\d)/g;

const SID_FIELDS = ['sid', 'serviceSid', 'endpointSid', 'verificationSid'];
const RAW_SID = /^[A-Z]{2}[0-9a-f]{32}$|^<[A-Z]{2}#\d+>$/;

/**
 * Lists of SIDs or of things with SIDs (services, endpoints, templates, verifications, charges), sorted by their
 * content with the values drawn at random blanked, then by the placeholders already given to their SIDs: the
 * service orders them by SID, or by a time the fake clock makes equal, and SIDs are random. So the order of
 * such lists is not compared.
 */
function sortedBySid(items: unknown[], known: (sid: string) => string | undefined): unknown[] {
  const sidOf = (item: unknown): string | undefined => {
    if (typeof item === 'string') return RAW_SID.test(item) ? item : undefined;
    if (!item || typeof item !== 'object') return undefined;
    const field = SID_FIELDS.find((name) => RAW_SID.test(String((item as Record<string, unknown>)[name])));
    return field && String((item as Record<string, unknown>)[field]);
  };
  if (items.length < 2 || !items.every((item) => sidOf(item) !== undefined)) return items;
  const placeholderNumber = (item: unknown) => {
    const sid = sidOf(item)!;
    return Number(/#(\d+)>$/.exec(known(sid) ?? sid)?.[1] ?? Infinity);
  };
  const content = (item: unknown) =>
    JSON.stringify(new Placeholders().value(item)).replace(/<[A-Za-z0-9]+#\d+>/g, '<>');
  return items
    .map((item) => ({ item, key: content(item), number: placeholderNumber(item) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.number - b.number))
    .map(({ item }) => item);
}

/** The text as JSON when it is JSON, otherwise the text. */
function parseJson(text: string): unknown {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Numbers values drawn at random in order of first appearance; one per test. */
export class Placeholders {
  private readonly seen = new Map<string, string>();
  private readonly counts = new Map<string, number>();

  text(value: string): string {
    // Whole strings of digits the length of an epoch: a header such as `webhook-timestamp`.
    if (/^\d{10}$|^\d{13}$/.test(value) && isEpoch(Number(value))) return '<epoch>';
    let text = value.replace(ISO_TIME, '<time>').replace(DURATION_TEXT, 'in <duration> ms');
    for (const { pattern, stem } of RANDOM_VALUES) {
      text = text.replace(pattern, (match) => this.placeholder(stem(match), match));
    }
    return text;
  }

  /** A JSON value with its strings, epoch numbers and durations normalised; object keys keep their order. */
  value(value: unknown, key = ''): unknown {
    // API key ids are hexadecimal, and may have no letter.
    if (key === 'keyId' && typeof value === 'string' && /^[0-9a-f]{12}$/.test(value))
      return this.placeholder('id', value);
    if (typeof value === 'string') return this.text(value);
    if (typeof value === 'number') {
      if (DURATION_KEY.test(key)) return '<duration>';
      return isEpoch(value) ? '<epoch>' : value;
    }
    if (Array.isArray(value))
      return sortedBySid(value, (sid) => this.seen.get(sid) ?? (/^<.*>$/.test(sid) ? sid : undefined)).map(
        (item) => this.value(item, key),
      );
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([name, item]) => [this.text(name), this.value(item, name)]),
      );
    }
    return value;
  }

  /** An answer's fields, normalised; again on a normalised answer, they stay as they are. */
  answer<T extends Pick<RecordedAnswer, 'method' | 'path' | 'headers' | 'body'>>(answer: T): T {
    const path = this.text(answer.path);
    let body = answer.body;
    // An admin command's JSON output (`--json`) is compared as JSON, so that its numbers are normalised too.
    if (
      path === '' &&
      body &&
      typeof body === 'object' &&
      'stdout' in body &&
      typeof body.stdout === 'string'
    ) {
      body = { ...body, stdout: parseJson(body.stdout) };
    }
    if (path.startsWith('/_local/messages') && Array.isArray(body)) {
      body = body.map((message: unknown) =>
        message && typeof message === 'object' && typeof (message as { body?: unknown }).body === 'string'
          ? {
              ...message,
              body: (message as { body: string }).body.replace(CODE, (code) =>
                this.placeholder('code', code),
              ),
            }
          : message,
      );
    }
    return {
      ...answer,
      method: this.text(answer.method),
      path,
      headers: this.value(answer.headers) as Record<string, string>,
      body: this.value(body),
    };
  }

  private placeholder(stem: string, match: string): string {
    const known = this.seen.get(match);
    if (known) return known;
    const count = (this.counts.get(stem) ?? 0) + 1;
    this.counts.set(stem, count);
    const placeholder = `<${stem}#${count}>`;
    this.seen.set(match, placeholder);
    return placeholder;
  }
}

/**
 * One test's answers, in order, normalised: placeholders numbered afresh; of reads of the same `/_local/` path
 * in a row (a test waiting for a message or a webhook in its own loop), only the last, since how many reads
 * the wait took is timing; sequence numbers counted again. Applied again to its result, it changes nothing.
 */
export function normaliseTest(answers: RecordedAnswer[]): RecordedAnswer[] {
  const placeholders = new Placeholders();
  const normalised = answers.map((answer) => placeholders.answer(answer));
  const isObserverRead = (answer: RecordedAnswer | undefined) =>
    answer?.kind === 'http' && answer.method === 'GET' && answer.path.startsWith('/_local/');
  const kept = normalised.filter(
    (answer, index) =>
      !(
        isObserverRead(answer) &&
        isObserverRead(normalised[index + 1]) &&
        normalised[index + 1]!.path === answer.path
      ),
  );
  const slots = new Map<string, { seq: number; answers: number }>();
  return kept.map((answer) => {
    const [slot = '', sub] = answer.seq.split('.');
    const known = slots.get(slot) ?? { seq: slots.size + 1, answers: 0 };
    known.answers += 1;
    slots.set(slot, known);
    return { ...answer, seq: sub === undefined ? String(known.seq) : `${known.seq}.${known.answers}` };
  });
}

/** An answer as received, before normalisation. */
interface RawAnswer {
  test: string;
  /** Slot in the test, and place within a poll's last probe. */
  slot: number;
  poll?: { id: number; attempt: number; order: number };
  /** Requests in flight together share a group. */
  group: number;
  kind: RecordedAnswer['kind'];
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

interface PollScope {
  id: number;
  slot: number;
  attempt: number;
  calls: number;
}

const pollScope = new AsyncLocalStorage<PollScope>();
/** Set while an admin command runs: its own HTTP calls are part of its output, not answers to the test. */
const adminScope = new AsyncLocalStorage<true>();

/** The state of one test file's recording. */
class Recording {
  private readonly answers: RawAnswer[] = [];
  private readonly slots = new Map<string, number>();
  private readonly inFlight = new Map<string, { count: number; group: number }>();
  private polls = 0;
  private groups = 0;

  constructor(
    readonly file: string,
    private readonly currentTest: () => string,
  ) {}

  /** Takes the next slot of the current test, or the current poll's. */
  begin(): { test: string; slot: number; poll?: RawAnswer['poll']; group: number; end(): void } {
    const test = this.currentTest();
    const scope = pollScope.getStore();
    const slot = scope ? scope.slot : this.nextSlot(test);
    const poll = scope && { id: scope.id, attempt: scope.attempt, order: ++scope.calls };
    const flight = this.inFlight.get(test);
    const group = flight && flight.count > 0 ? flight.group : ++this.groups;
    this.inFlight.set(test, { count: (flight?.count ?? 0) + 1, group });
    return {
      test,
      slot,
      ...(poll && { poll }),
      group,
      end: () => {
        const current = this.inFlight.get(test);
        if (current) current.count -= 1;
      },
    };
  }

  add(answer: RawAnswer): void {
    this.answers.push(answer);
  }

  /** Runs a poll (`eventually`): every probe's answers share one slot, and only the last probe's are kept. */
  async poll<T>(run: (probe: <R>(attempt: () => Promise<R>) => Promise<R>) => Promise<T>): Promise<T> {
    const id = ++this.polls;
    const slot = pollScope.getStore()?.slot ?? this.nextSlot(this.currentTest());
    let attempts = 0;
    return run((attempt) => pollScope.run({ id, slot, attempt: ++attempts, calls: 0 }, attempt));
  }

  /** The answers, normalised and in order. */
  lines(): RecordedAnswer[] {
    const lastAttempt = new Map<number, number>();
    for (const answer of this.answers) {
      if (answer.poll)
        lastAttempt.set(answer.poll.id, Math.max(lastAttempt.get(answer.poll.id) ?? 0, answer.poll.attempt));
    }
    const kept = this.answers.filter(
      (answer) => !answer.poll || answer.poll.attempt === lastAttempt.get(answer.poll.id),
    );
    const tests = [...new Set(kept.map((answer) => answer.test))];
    return tests.flatMap((test) =>
      this.testLines(
        test,
        kept.filter((answer) => answer.test === test),
      ),
    );
  }

  private testLines(test: string, answers: RawAnswer[]): RecordedAnswer[] {
    const order = (answer: RawAnswer) => [answer.slot, answer.poll?.order ?? 0] as const;
    const sorted = [...answers].sort((a, b) => order(a)[0] - order(b)[0] || order(a)[1] - order(b)[1]);
    // Answers in one group race each other: sort them by their content with the values drawn at random blanked.
    const groups = new Map<number, RawAnswer[]>();
    for (const answer of sorted) groups.set(answer.group, [...(groups.get(answer.group) ?? []), answer]);
    const blank = new Placeholders();
    const content = (answer: RawAnswer) =>
      JSON.stringify([
        answer.status,
        blank.answer({
          method: answer.method,
          path: answer.path,
          headers: answer.headers,
          body: answer.body,
        }),
      ]).replace(/<[a-z0-9]+#\d+>/gi, '<>');
    const ordered = [...groups.values()].flatMap((group) =>
      group.length === 1 ? group : [...group].sort((a, b) => compareText(content(a), content(b))),
    );
    let seq = 0;
    let lastSlot: number | undefined;
    let inSlot = 0;
    const lines = ordered.map((answer): RecordedAnswer => {
      if (answer.slot !== lastSlot || !answer.poll) {
        seq += 1;
        inSlot = 0;
      }
      lastSlot = answer.slot;
      inSlot += 1;
      return {
        file: this.file,
        test,
        seq: answer.poll ? `${seq}.${inSlot}` : String(seq),
        kind: answer.kind,
        method: answer.method,
        path: answer.path,
        status: answer.status,
        headers: answer.headers,
        body: answer.body,
      };
    });
    return normaliseTest(lines);
  }

  private nextSlot(test: string): number {
    const slot = (this.slots.get(test) ?? 0) + 1;
    this.slots.set(test, slot);
    return slot;
  }
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

let active: Recording | undefined;

/** Runs `eventually`'s loop so that only its last probe's answers are recorded; a plain call when off. */
export function recordPoll<T>(
  run: (probe: <R>(attempt: () => Promise<R>) => Promise<R>) => Promise<T>,
): Promise<T> {
  return active ? active.poll(run) : run((attempt) => attempt());
}

/** Parses a body as JSON when it says it is JSON, otherwise keeps the text. */
function parseBody(text: string, contentType: string | null): unknown {
  if (text && contentType?.includes('json')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * Whether the synchronous caller chain of this point runs through the test file (before the first awaiting
 * caller V8 adds). Read from V8's call sites: no source-mapped text, so it costs the service's own calls little.
 */
function calledFromTest(testPath: string): boolean {
  const { prepareStackTrace, stackTraceLimit } = Error;
  Error.prepareStackTrace = (_, callSites) => callSites;
  Error.stackTraceLimit = 60;
  const holder: { stack?: NodeJS.CallSite[] } = {};
  Error.captureStackTrace(holder, calledFromTest);
  const callSites = holder.stack ?? [];
  Error.prepareStackTrace = prepareStackTrace;
  Error.stackTraceLimit = stackTraceLimit;
  for (const callSite of callSites) {
    if (callSite.isAsync()) return false;
    if (callSite.getFileName() === testPath) return true;
  }
  return false;
}

/** Installs the recorder for one test file: wraps `fetch`, and lets `recordAdmin` and `recordPoll` record. */
export function installAnswerRecorder(options: {
  directory: string;
  rootDir: string;
  testPath: string;
  currentTest: () => string;
}): { recordAdmin: typeof recordAdmin; flush(): void } {
  const file = relative(options.rootDir, options.testPath).split(sep).join('/');
  const recording = new Recording(file, options.currentTest);
  active = recording;
  const originalFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    if (adminScope.getStore() || !calledFromTest(options.testPath)) return originalFetch(input, init);
    const call = recording.begin();
    try {
      const response = await originalFetch(input, init);
      const text = await response.clone().text();
      const url = new URL(input instanceof Request ? input.url : String(input));
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        if (!SKIPPED_HEADERS.has(name)) headers[name] = value;
      });
      recording.add({
        ...call,
        kind: 'http',
        method: (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase(),
        path: `${url.pathname}${url.search}`,
        status: response.status,
        headers,
        body: parseBody(text, response.headers.get('content-type')),
      });
      return response;
    } finally {
      call.end();
    }
  };
  return {
    recordAdmin,
    flush() {
      globalThis.fetch = originalFetch;
      active = undefined;
      const lines = recording.lines();
      mkdirSync(options.directory, { recursive: true });
      writeFileSync(
        join(options.directory, `${file.replace(/[/\\]/g, '__')}.jsonl`),
        lines.map((line) => `${JSON.stringify(line)}\n`).join(''),
      );
    },
  };
}

/** Records one `runAdmin` run: its arguments, exit code and printed output. */
export async function recordAdmin(
  argv: string[],
  run: (out: (text: string) => void, err: (text: string) => void) => Promise<number>,
): Promise<number> {
  const recording = active;
  if (!recording)
    return run(
      () => undefined,
      () => undefined,
    );
  const call = recording.begin();
  const stdout: string[] = [];
  const stderr: string[] = [];
  try {
    const code = await adminScope.run(true, () =>
      run(
        (text) => stdout.push(text),
        (text) => stderr.push(text),
      ),
    );
    recording.add({
      ...call,
      kind: 'admin',
      method: ['admin', ...argv].join(' '),
      path: '',
      status: code,
      headers: {},
      body: { stdout: stdout.join('\n'), stderr: stderr.join('\n') },
    });
    return code;
  } finally {
    call.end();
  }
}
