/**
 * `npm run bench:guard`: the pumping guard measured on a simulated day (bench/guard/traffic.ts) replayed through
 * the real send path (core `sendVerification` over `DynamoStore`, the same BatchGetItem and transaction as the
 * Lambda; the HTTP layer and the per-key write are left out, they do not touch the guard) and the real check, on
 * DynamoDB Local, with a clock the bench controls. The guard's consumer runs every 10 simulated seconds on the
 * table's own stream (DynamoDB Local's GetRecords), mapped and folded by the same code as the Lambda
 * (functions/adapters/guard/stream.ts, functions/core/guard/consumer.ts), so a block starts about as late as on
 * AWS (batching window 1 s). Each level runs on its own table, one after another.
 *
 * `--memory` runs the same day over the in-memory stores (events taken from the stores, not a stream): seconds
 * instead of minutes, for tuning; the figures for docs/bench.md come from the DynamoDB run.
 * `--levels shadow,standard` picks levels (default shadow, standard, strict).
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type GetRecordsCommandOutput,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { execSync } from 'node:child_process';
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { masterKeyRing } from '../../functions/adapters/keyring';
import { createDynamoClient } from '../../functions/adapters/dynamodb/client';
import { DynamoGuardAdmin, DynamoGuardStore } from '../../functions/adapters/dynamodb/guard';
import { DynamoStore } from '../../functions/adapters/dynamodb/store';
import { guardEventsFromStream } from '../../functions/adapters/guard/stream';
import { MemoryStore } from '../../functions/adapters/memory/store';
import { checkVerification } from '../../functions/core/check';
import { OtpError } from '../../functions/core/errors';
import { consumeGuardEvents, type GuardSignalStore } from '../../functions/core/guard/consumer';
import type { GuardLevel } from '../../functions/core/guard/model';
import type { GuardEvent } from '../../functions/core/guard/signals';
import { UNITS_PER_USD } from '../../functions/core/money';
import type { Clock, VerificationStore } from '../../functions/core/ports';
import { CHANNELS, ROUTES } from '../../functions/core/routing';
import { sendVerification, type SendDeps } from '../../functions/core/send';
import { DEFAULT_SETTINGS } from '../../functions/core/settings';
import {
  addTable,
  createAccount,
  RecordingWorkflow,
  RememberingRandom,
  startBenchDb,
  type BenchDb,
} from '../setup';
import {
  HOUR,
  attacks,
  legitimateDay,
  mulberry32,
  newCountry,
  type AttackName,
  type PlannedSend,
} from './traffic';

const DAY = new Date('2026-11-22T00:00:00.000Z').getTime();
const TICK_MS = 10_000;
/** Calls of one window made at once. */
const CONCURRENCY = 16;
const ATTACKS: AttackName[] = ['a', 'b', 'c', 'd'];
const ATTACK_NAMES: Record<AttackName, string> = {
  a: '(a) sequential, one range',
  b: '(b) 10x flood, one country',
  c: '(c) 2x drip, 5 % fake checks',
  d: '(d) thin over 24 countries',
};

class BenchClock implements Clock {
  current = DAY;
  now(): Date {
    return new Date(this.current);
  }
}

/** What one level's run needs from its storage: the send path's store, the guard's, and the events. */
interface Backend {
  store: VerificationStore;
  guard: GuardSignalStore;
  serviceSid: string;
  /** The guard events written since the last call (the stream; or the memory stores' writes). */
  drain(): Promise<GuardEvent[]>;
  close(): Promise<void>;
  requests(): number;
}

interface Tally {
  sends: number;
  charged: number;
  /** When each charged send was made. */
  chargedAt: number[];
  blocked: number;
  /** Decisions seen by the consumer (blocked, or shadow: would have blocked). */
  decided: number;
  chargedBeforeFirstDecision: number;
  firstDecisionAt?: number;
  saved: number;
  /** Would have been saved (shadow decisions on charged sends). */
  wouldSave: number;
}

const emptyTally = (): Tally => ({
  sends: 0,
  charged: 0,
  chargedAt: [],
  blocked: 0,
  decided: 0,
  chargedBeforeFirstDecision: 0,
  saved: 0,
  wouldSave: 0,
});

interface LevelResult {
  level: GuardLevel;
  legit: Tally;
  attacks: Record<AttackName, Tally>;
  reasons: Record<string, number>;
  realSeconds: number;
  requests: number;
}

/** DynamoDB Local's stream of one table, read to its end on each `drain`. */
class StreamReader {
  private readonly streams: DynamoDBStreamsClient;
  private arn = '';
  private readonly iterators = new Map<string, string>();
  private readonly seen = new Set<string>();
  calls = 0;

  constructor(
    private readonly endpoint: string,
    private readonly tableName: string,
  ) {
    this.streams = new DynamoDBStreamsClient({
      endpoint,
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  }

  async start(): Promise<void> {
    const raw = createDynamoClient({ endpoint: this.endpoint });
    const { Table } = await raw.send(new DescribeTableCommand({ TableName: this.tableName }));
    raw.destroy();
    this.arn = Table!.LatestStreamArn!;
    await this.discover();
  }

  private async discover(): Promise<void> {
    const { StreamDescription } = await this.streams.send(new DescribeStreamCommand({ StreamArn: this.arn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      if (this.seen.has(shard.ShardId!)) continue;
      this.seen.add(shard.ShardId!);
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: this.arn,
          ShardId: shard.ShardId!,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      if (ShardIterator) this.iterators.set(shard.ShardId!, ShardIterator);
    }
  }

  async drain(): Promise<DynamoDBRecord[]> {
    const records: DynamoDBRecord[] = [];
    let closed = false;
    for (const [shard, start] of [...this.iterators]) {
      let iterator: string | undefined = start;
      while (iterator) {
        this.calls++;
        const page: GetRecordsCommandOutput = await this.streams.send(
          new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }),
        );
        const batch = page.Records ?? [];
        records.push(...batch.map(toLambdaRecord));
        if (!page.NextShardIterator) {
          this.iterators.delete(shard);
          closed = true;
          break;
        }
        iterator = page.NextShardIterator;
        this.iterators.set(shard, page.NextShardIterator);
        // A short page is the end of what is there now (DynamoDB Local answers up to the limit when it has it).
        if (batch.length < 1000) break;
      }
    }
    if (closed) {
      await this.discover();
      records.push(...(await this.drain()));
    }
    return records;
  }

  close(): void {
    this.streams.destroy();
  }
}

function toLambdaRecord(record: StreamRecord): DynamoDBRecord {
  const change = record.dynamodb;
  type Images = NonNullable<DynamoDBRecord['dynamodb']>;
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    dynamodb: {
      Keys: change?.Keys as Images['Keys'],
      ...(change?.NewImage && { NewImage: change.NewImage as Images['NewImage'] }),
      ...(change?.OldImage && { OldImage: change.OldImage as Images['OldImage'] }),
      SequenceNumber: change?.SequenceNumber,
    },
  };
}

async function dynamoBackend(db: BenchDb, level: GuardLevel): Promise<Backend> {
  const table = await addTable(db);
  const account = await createAccount(table, 1_000_000);
  await new DynamoGuardAdmin(table.documents, table.tableName).setLevel(account.serviceSid, level);
  let requests = 0;
  const client = createDynamoDocument(table.endpoint, () => requests++);
  const reader = new StreamReader(table.endpoint, table.tableName);
  await reader.start();
  return {
    store: new DynamoStore(client, table.tableName),
    guard: new DynamoGuardStore(client, table.tableName),
    serviceSid: account.serviceSid,
    drain: async () => guardEventsFromStream(await reader.drain()),
    close: async () => {
      reader.close();
      client.destroy();
    },
    requests: () => requests + reader.calls,
  };
}

function createDynamoDocument(endpoint: string, count: () => void): DynamoDBDocumentClient {
  // The document client over a raw client whose middleware counts every request.
  const raw = createDynamoClient({ endpoint });
  raw.middlewareStack.add(
    (next) => async (args) => {
      count();
      return next(args);
    },
    { step: 'initialize', name: 'guardBenchCount' },
  );
  return DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
}

function memoryBackend(level: GuardLevel): Backend {
  const store = new MemoryStore();
  const serviceSid = 'VA' + '0'.repeat(31) + '1';
  store.putService({
    sid: serviceSid,
    name: 'Bench',
    balance: 1_000_000 * UNITS_PER_USD,
    enabledChannels: [...CHANNELS],
    rules: { blockedCountries: [], blockedPrefixes: [] },
    prices: {},
    defaultTemplate: { sid: 'HX' + '0'.repeat(32), body: 'Code {code}', locale: 'en' },
    createdAt: new Date(DAY).toISOString(),
    webhookEndpoints: [],
    guard: { level, safeList: [] },
  });
  const pending: GuardEvent[] = [];
  let refusals = 0;
  const wrapped: VerificationStore = Object.create(store) as VerificationStore;
  wrapped.acceptSend = async (input) => {
    const result = await store.acceptSend(input);
    if (result.ok) {
      const v = input.verification;
      pending.push({
        kind: 'send',
        serviceSid: v.serviceSid,
        e164: v.to,
        country: v.country!,
        at: input.now.getTime(),
        accepted: true,
        ...(v.guard && { decision: v.guard }),
      });
    }
    return result;
  };
  wrapped.spendAttempt = async (sid, service, guess, now) => {
    const result = await store.spendAttempt(sid, service, guess, now);
    if (result.ok && result.verification.lastGuessHash === result.verification.codeHash) {
      const v = result.verification;
      pending.push({
        kind: 'conversion',
        serviceSid: v.serviceSid,
        e164: v.to,
        country: v.country!,
        at: now.getTime(),
        sentAt: Date.parse(v.dateCreated),
        flagged: v.guard !== undefined,
      });
    }
    return result;
  };
  return {
    store: wrapped,
    guard: store.guard,
    serviceSid,
    drain: async () => {
      for (const refusal of store.guardRefusals.slice(refusals)) {
        const { serviceSid: sid, country, e164, ...decision } = refusal;
        pending.push({
          kind: 'send',
          serviceSid: sid,
          country,
          e164,
          at: decision.at,
          accepted: false,
          decision,
        });
      }
      refusals = store.guardRefusals.length;
      return pending.splice(0);
    },
    close: async () => undefined,
    requests: () => 0,
  };
}

/** The previous day's legitimate traffic folded into the guard: the baseline a deployed guard has. */
async function warmUp(guard: GuardSignalStore, serviceSid: string): Promise<void> {
  const rand = mulberry32(99);
  const events: GuardEvent[] = [];
  const common = (send: PlannedSend) => ({ serviceSid, e164: send.to, country: send.country });
  const sendAndCheck = (send: PlannedSend, at: number, checkAfter: number | undefined) => {
    events.push({ kind: 'send', ...common(send), at, accepted: true });
    if (checkAfter !== undefined)
      events.push({ kind: 'conversion', ...common(send), at: at + checkAfter, sentAt: at, flagged: false });
  };
  void rand;
  for (const send of legitimateDay(7)) {
    const at = DAY - 24 * HOUR + send.at;
    sendAndCheck(send, at, send.checkAfterMs);
    if (send.retry) sendAndCheck(send, at + send.retry.afterMs, send.retry.checkAfterMs);
  }
  events.sort((a, b) => a.at - b.at);
  const clock = new BenchClock();
  for (let from = DAY - 24 * HOUR, i = 0; from < DAY; from += 10 * 60_000) {
    const batch: GuardEvent[] = [];
    while (i < events.length && events[i]!.at < from + 10 * 60_000) batch.push(events[i++]!);
    clock.current = from + 10 * 60_000;
    if (batch.length > 0) await consumeGuardEvents({ store: guard, clock }, batch);
  }
}

interface Scheduled {
  at: number;
  kind: 'send' | 'check';
  plan: PlannedSend;
  sid?: string;
  retry?: boolean;
}

async function runLevel(level: GuardLevel, backend: Backend): Promise<LevelResult> {
  const started = performance.now();
  await warmUp(backend.guard, backend.serviceSid);
  const clock = new BenchClock();
  const random = new RememberingRandom();
  const deps: SendDeps = {
    store: backend.store,
    workflow: new RecordingWorkflow(),
    vault: new CryptoCodeVault(masterKeyRing('guard-bench-master-key-guard-bench-master-key')),
    random,
    clock,
    settings: { ...DEFAULT_SETTINGS },
    allowedChannels: [...CHANNELS],
  };
  const plans = [...legitimateDay(1), ...newCountry(2), ...attacks(3)];
  const owner = new Map<string, AttackName | 'legit'>();
  for (const plan of plans) owner.set(plan.to, plan.attack ?? 'legit');
  const queue: Scheduled[] = plans.map((plan) => ({ at: DAY + plan.at, kind: 'send', plan }));
  const result: LevelResult = {
    level,
    legit: emptyTally(),
    attacks: { a: emptyTally(), b: emptyTally(), c: emptyTally(), d: emptyTally() },
    reasons: {},
    realSeconds: 0,
    requests: 0,
  };
  const tallyOf = (plan: PlannedSend) => (plan.attack ? result.attacks[plan.attack] : result.legit);
  const byNumber = new Map<string, PlannedSend>();
  for (const plan of plans) byNumber.set(plan.to, plan);

  const push = (item: Scheduled) => {
    // Insert keeping time order (the queue is mostly appended near its end).
    let i = queue.length;
    while (i > 0 && queue[i - 1]!.at > item.at) i--;
    queue.splice(i, 0, item);
  };
  queue.sort((a, b) => a.at - b.at);

  const spent = { consume: 0, send: 0, check: 0 };
  const consume = async (now: number) => {
    const t0 = performance.now();
    try {
      await consumeAt(now);
    } finally {
      spent.consume += performance.now() - t0;
    }
  };
  const consumeAt = async (now: number) => {
    clock.current = now;
    const events = await backend.drain();
    for (const event of events) {
      if (event.kind !== 'send' || !event.decision) continue;
      const plan = byNumber.get(event.e164);
      if (!plan) continue;
      const tally = tallyOf(plan);
      const reason = `${plan.attack ?? 'legit'} ${event.decision.reason}`;
      result.reasons[reason] = (result.reasons[reason] ?? 0) + 1;
      if (!plan.attack && process.env.GUARD_BENCH_DEBUG)
        process.stderr.write(
          `legit ${event.decision.mode} ${event.e164} ${event.decision.reason} ${event.decision.prefix} at ${((event.at - DAY) / HOUR).toFixed(2)} h ${JSON.stringify(event.decision.figures)}\n`,
        );
      if (event.decision.mode === 'shadow') {
        tally.decided++;
        tally.wouldSave += event.decision.price;
        tally.firstDecisionAt ??= event.at;
      }
    }
    await consumeGuardEvents({ store: backend.guard, clock }, events);
  };

  const run = async (item: Scheduled) => {
    // Each call sees its own time: the calls of one window run side by side.
    const itemDeps = { ...deps, clock: { now: () => new Date(item.at) } };
    const plan = item.plan;
    const t0 = performance.now();
    if (item.kind === 'check') {
      await checkVerification(itemDeps, {
        serviceSid: backend.serviceSid,
        verificationSid: item.sid!,
        code: random.codeOf(item.sid!),
      }).catch(() => undefined);
      spent.check += performance.now() - t0;
      return;
    }
    const tally = tallyOf(plan);
    tally.sends++;
    try {
      const sent = await sendVerification(itemDeps, { serviceSid: backend.serviceSid, to: plan.to });
      tally.charged++;
      tally.chargedAt.push(item.at);
      if (plan.attack && process.env.GUARD_BENCH_DEBUG)
        process.stderr.write(
          `charged ${plan.attack} ${plan.to} at ${((item.at - DAY) / HOUR).toFixed(3)} h\n`,
        );
      const checkAfter = item.retry ? plan.retry?.checkAfterMs : plan.checkAfterMs;
      if (checkAfter !== undefined)
        push({ at: item.at + checkAfter, kind: 'check', plan, sid: sent.verification.sid });
      else if (!item.retry && plan.retry)
        push({ at: item.at + plan.retry.afterMs, kind: 'send', plan, retry: true });
    } catch (error) {
      if (!(error instanceof OtpError)) throw error;
      if (error.code === 'blocked_by_policy') {
        tally.blocked++;
        tally.decided++;
        tally.firstDecisionAt = Math.min(tally.firstDecisionAt ?? Infinity, item.at);
        tally.saved += ROUTES[plan.country]?.price ?? 0;
        // A blocked person tries once more (an attacker's script does not).
        if (!plan.attack && !item.retry) push({ at: item.at + 45_000, kind: 'send', plan, retry: true });
      }
    } finally {
      spent.send += performance.now() - t0;
    }
  };

  // Window by window (the consumer's batching): the window's calls side by side, then the consumer. A check or
  // a retry is always at least 10 s after its send, so it falls in a later window.
  while (queue.length > 0) {
    const windowEnd = DAY + (Math.floor((queue[0]!.at - DAY) / TICK_MS) + 1) * TICK_MS;
    const batch: Scheduled[] = [];
    while (queue.length > 0 && queue[0]!.at < windowEnd) batch.push(queue.shift()!);
    for (let i = 0; i < batch.length; i += CONCURRENCY)
      await Promise.all(batch.slice(i, i + CONCURRENCY).map(run));
    await consume(windowEnd);
    if (Math.floor((windowEnd - DAY) / (2 * HOUR)) !== Math.floor((windowEnd - TICK_MS - DAY) / (2 * HOUR)))
      process.stderr.write(`${level}: ${((windowEnd - DAY) / HOUR).toFixed(0)} h simulated\n`);
  }
  process.stderr.write(
    `${level}: consume ${(spent.consume / 1000).toFixed(0)} s, sends ${(spent.send / 1000).toFixed(0)} s, checks ${(spent.check / 1000).toFixed(0)} s\n`,
  );
  for (const tally of [result.legit, ...Object.values(result.attacks)]) {
    const first = tally.firstDecisionAt ?? Infinity;
    tally.chargedBeforeFirstDecision = tally.chargedAt.filter((at) => at < first).length;
  }
  result.realSeconds = (performance.now() - started) / 1000;
  result.requests = backend.requests();
  return result;
}

const usd = (units: number) => `$${(units / UNITS_PER_USD).toFixed(2)}`;
const pct = (part: number, whole: number, digits = 1) =>
  whole === 0 ? '-' : `${((100 * part) / whole).toFixed(digits)} %`;

function report(results: LevelResult[], commit: string, mode: string): string {
  const lines: string[] = [];
  lines.push(`Pumping guard bench (commit ${commit}, ${mode})`);
  const first = results[0]!;
  const legitSends = first.legit.sends;
  lines.push(
    `Legitimate: ${legitSends} sends (${first.legit.charged} charged at level ${first.level}); attacks: ${ATTACKS.map((a) => `${a} ${first.attacks[a].sends}`).join(', ')}`,
  );
  lines.push('');
  lines.push(
    '| Level | Attack | Attack sends | Charged before first block | Blocked (shadow: flagged) | Charged | Saved at list prices |',
  );
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    for (const a of ATTACKS) {
      const t = r.attacks[a];
      const blocked = r.level === 'shadow' ? t.decided : t.blocked;
      const saved = r.level === 'shadow' ? `(${usd(t.wouldSave)} would be)` : usd(t.saved);
      lines.push(
        `| ${r.level} | ${ATTACK_NAMES[a]} | ${t.sends} | ${t.chargedBeforeFirstDecision} | ${pct(blocked, t.sends)} | ${t.charged} | ${saved} |`,
      );
    }
  }
  lines.push('');
  lines.push(
    '| Level | Legitimate sends | Legitimate blocked (shadow: flagged) | Reasons | Run | DynamoDB requests |',
  );
  lines.push('| --- | ---: | ---: | --- | ---: | ---: |');
  for (const r of results) {
    const legitBlocked = r.level === 'shadow' ? r.legit.decided : r.legit.blocked;
    lines.push(
      `| ${r.level} | ${r.legit.sends} | ${legitBlocked} (${pct(legitBlocked, r.legit.sends, 2)}) | ${Object.entries(
        r.reasons,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')} | ${r.realSeconds.toFixed(0)} s | ${r.requests || '-'} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const memory = args.includes('--memory');
  const levelsArg = args[args.indexOf('--levels') + 1];
  const levels = (
    args.includes('--levels') && levelsArg ? levelsArg.split(',') : ['shadow', 'standard', 'strict']
  ) as GuardLevel[];
  const commit = execSync('git rev-parse --short HEAD').toString().trim();
  const results: LevelResult[] = [];
  const db = memory ? undefined : await startBenchDb();
  try {
    // Each level on its own table (fresh guard state and number logs), side by side.
    results.push(
      ...(await Promise.all(
        levels.map(async (level) => {
          const backend = db ? await dynamoBackend(db, level) : memoryBackend(level);
          try {
            return await runLevel(level, backend);
          } finally {
            await backend.close();
            process.stderr.write(`level ${level} done\n`);
          }
        }),
      )),
    );
  } finally {
    await db?.stop();
  }
  console.log(report(results, commit, memory ? 'in-memory stores' : 'DynamoDB Local'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
