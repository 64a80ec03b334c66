/**
 * One scenario on one seed: the warm-up (two days of the service's own legitimate traffic, drawn from another
 * seed, folded into the guard), then the measured window replayed through the adapter (bench/guard/backend.ts)
 * with a clock the bench owns. The window is cut into the consumer's batching windows: a window's calls run side
 * by side (each at its own time), then the guard's consumer runs once, as the Lambda's batching would.
 */
import { GUARD_BATCH_WINDOW_SECONDS } from '../../functions/core/guard/consumer';
import { ROUTES } from '../../functions/core/routing';
import { UNITS_PER_USD } from '../../functions/core/money';
import type { GuardBench, GuardSnapshot, HistoryEvent } from './backend';
import type { Scenario } from './scenarios';
import {
  HOUR,
  MINUTE,
  RECEIPT_MS,
  WARM_DAYS,
  WARM_SEED_OFFSET,
  legitimate,
  type Check,
  type PlannedSend,
} from './traffic';

const TICK_MS = GUARD_BATCH_WINDOW_SECONDS * 1000;
/** Calls of one window made at once. */
const CONCURRENCY = 16;
const BLOCK_RETRY_MS = 45_000;

export interface Tally {
  sends: number;
  /** Refused with `blocked_by_policy`. */
  blocked: number;
  /** Refused with another code (per-number limits, unroutable ...). */
  refusedOther: number;
  /** USD: the route price of every accepted (charged) send. */
  charged: number;
}

export interface RunResult {
  scenario: string;
  seed: number;
  legit: Tally;
  focus: Tally;
  attack: Tally;
  /** Attack sends by tag (attack (d): inside / outside the allow-list). */
  tags: Record<string, Tally>;
  /** The attack after its first N sends (`afterFirst`). */
  attackAfterFirst?: Tally;
  /**
   * Every attack send the scenario planned, each at its route price: what the attack costs with no guard, where
   * nothing is refused and no attacker pauses. Read off the plan, never off the guard's answers.
   */
  attackPlanned: { sends: number; cost: number };
  /** The countries whose conversion drop the owner was told of, minutes into the window (conversion-watch.ts). */
  drops: { country: string; minute: number }[];
  /** Decisions seen on the stream, `group reason`. */
  reasons: Record<string, number>;
  seconds: number;
  /** Of which folding the warm-up (0 when taken from another scenario of the seed). */
  warmSeconds: number;
}

/** USD: what a send of the plan is charged once accepted. */
const priceOf = (plan: PlannedSend) => (ROUTES[plan.country]?.price ?? 0) / UNITS_PER_USD;

const emptyTally = (): Tally => ({ sends: 0, blocked: 0, refusedOther: 0, charged: 0 });

interface Item {
  at: number;
  seq: number;
  kind: 'send' | 'check' | 'receipt';
  plan: PlannedSend;
  /** 0: the first send; 1: the planned retry; the block retry keeps the attempt it retries. */
  attempt: 0 | 1;
  blockRetry?: boolean;
  sid?: string;
  check?: Check;
}

/** A binary min-heap on (at, seq). */
class Queue {
  private readonly items: Item[] = [];
  private seq = 0;
  get size(): number {
    return this.items.length;
  }
  peek(): Item | undefined {
    return this.items[0];
  }
  push(item: Omit<Item, 'seq'>): void {
    const items = this.items;
    items.push({ ...item, seq: this.seq++ });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }
  pop(): Item | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && less(items[l]!, items[m]!)) m = l;
        if (r < items.length && less(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}
const less = (a: Item, b: Item) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** The warm-up's history: the model's legitimate traffic over the two days before `until`, from `seed`. */
function warmHistory(scenario: Scenario, seed: number): HistoryEvent[] {
  const until = scenario.from;
  const sends = legitimate(scenario.model, seed + WARM_SEED_OFFSET, until - WARM_DAYS * 24 * HOUR, until);
  const history: HistoryEvent[] = [];
  for (const send of sends) {
    const right = send.checks?.find((c) => !c.wrong);
    history.push({
      at: send.at,
      e164: send.to,
      country: send.country,
      ...(right && { checkedAt: send.at + right.afterMs }),
    });
    if (send.retry) {
      const retryAt = send.at + send.retry.afterMs;
      const checked = send.retry.checks?.find((c) => !c.wrong);
      history.push({
        at: retryAt,
        e164: send.to,
        country: send.country,
        ...(checked && { checkedAt: retryAt + checked.afterMs }),
      });
    }
  }
  return history.filter((h) => h.at < until);
}

/** The key of the warm-up a scenario needs (scenarios with the same key share one warm-up). */
const warmKey = (scenario: Scenario, seed: number) => `${seed}/${scenario.model.name}/${scenario.from}`;

export type BenchFactory = (scenario: Scenario, guardState?: GuardSnapshot) => Promise<GuardBench>;

/**
 * Delivery receipts: `prompt`, every accepted send's at its planned time (3 s, or the scenario's); `none`, no
 * receipt at all, as from carriers and countries that report none (docs/bench.md): the guard's receipt rule
 * then never acts, so the two bracket what receipts are worth.
 */
export type ReceiptMode = 'prompt' | 'none';
export const RECEIPT_MODES: readonly ReceiptMode[] = ['prompt', 'none'];

/**
 * Runs a scenario for a seed. `warmCache` keeps warm-ups (guard snapshots) for other scenarios of the seed, when
 * the bench can snapshot (memory).
 */
export async function runScenario(
  scenario: Scenario,
  seed: number,
  createBench: BenchFactory,
  warmCache?: Map<string, GuardSnapshot>,
  receipts: ReceiptMode = 'prompt',
): Promise<RunResult> {
  const started = performance.now();
  let bench: GuardBench;
  let warmStarted = 0;
  let warmSeconds = 0;
  if (scenario.warm) {
    const key = warmKey(scenario, seed);
    const cached = warmCache?.get(key);
    if (cached) bench = await createBench(scenario, cached);
    else {
      bench = await createBench(scenario);
      warmStarted = performance.now();
      await bench.foldHistory(warmHistory(scenario, seed), scenario.from);
      if (warmCache && bench.snapshot) warmCache.set(key, bench.snapshot());
      warmSeconds = (performance.now() - warmStarted) / 1000;
    }
  } else bench = await createBench(scenario);

  const result: RunResult = {
    scenario: scenario.name,
    seed,
    legit: emptyTally(),
    focus: emptyTally(),
    attack: emptyTally(),
    tags: {},
    ...(scenario.afterFirst !== undefined && { attackAfterFirst: emptyTally() }),
    attackPlanned: { sends: 0, cost: 0 },
    drops: [],
    reasons: {},
    seconds: 0,
    warmSeconds,
  };
  const plans = scenario.traffic(seed).filter((p) => p.at >= scenario.from && p.at < scenario.to);
  for (const plan of plans)
    if (plan.group === 'attack') {
      result.attackPlanned.sends++;
      result.attackPlanned.cost += priceOf(plan);
    }
  // Returning users' earlier visits, stored as the service stores any send and check; the history holds them for
  // the guard already (their events are not folded again).
  const seededAt = new Map<string, number>();
  for (const plan of plans)
    if (plan.verifiedAt !== undefined)
      seededAt.set(plan.to, Math.max(plan.verifiedAt, seededAt.get(plan.to) ?? -Infinity));
  for (const [to, at] of seededAt) await bench.seedVerified(at, to);
  const groupOf = new Map<string, string>();
  for (const plan of plans)
    if (!groupOf.has(plan.to) || plan.group === 'attack') groupOf.set(plan.to, plan.group);
  const queue = new Queue();
  for (const plan of plans) queue.push({ at: plan.at, kind: 'send', plan, attempt: 0 });

  let pausedUntil = -Infinity;
  // A pausing attacker reads each answer before its next send: calls made at once would send past its 403.
  const concurrency = scenario.pauseOnBlockMs ? 1 : CONCURRENCY;
  let attackSends = 0;
  const tallies = (plan: PlannedSend): Tally[] => {
    const list = [result[plan.group]];
    if (plan.group === 'focus') list.push(result.legit);
    if (plan.tag) list.push((result.tags[plan.tag] ??= emptyTally()));
    if (plan.group === 'attack' && result.attackAfterFirst && attackSends > scenario.afterFirst!)
      list.push(result.attackAfterFirst);
    return list;
  };

  const run = async (item: Item) => {
    const plan = item.plan;
    if (item.kind === 'check') {
      await bench.check(item.at, item.sid!, item.check!.wrong === true);
      return;
    }
    if (item.kind === 'receipt') {
      await bench.deliver(item.at, item.sid!);
      return;
    }
    if (plan.group === 'attack') {
      // The pausing attacker (e2) makes no send while paused.
      if (item.at < pausedUntil) return;
      attackSends++;
    }
    const counted = tallies(plan);
    for (const t of counted) t.sends++;
    const outcome = await bench.send(item.at, plan.to, plan.callerCode);
    if (outcome.ok) {
      for (const t of counted) t.charged += priceOf(plan);
      if (receipts === 'prompt')
        queue.push({
          at: item.at + (plan.receiptAfterMs ?? RECEIPT_MS),
          kind: 'receipt',
          plan,
          attempt: item.attempt,
          sid: outcome.sid,
        });
      const checks = item.attempt === 0 ? plan.checks : plan.retry?.checks;
      for (const check of checks ?? [])
        queue.push({
          at: item.at + check.afterMs,
          kind: 'check',
          plan,
          attempt: item.attempt,
          sid: outcome.sid,
          check,
        });
      if (item.attempt === 0 && plan.retry)
        queue.push({ at: item.at + plan.retry.afterMs, kind: 'send', plan, attempt: 1 });
      return;
    }
    if (outcome.code === 'blocked_by_policy') {
      for (const t of counted) t.blocked++;
      if (plan.group === 'attack' && scenario.pauseOnBlockMs) pausedUntil = item.at + scenario.pauseOnBlockMs;
      if (plan.retryOnBlock && !item.blockRetry)
        queue.push({
          at: item.at + BLOCK_RETRY_MS,
          kind: 'send',
          plan,
          attempt: item.attempt,
          blockRetry: true,
        });
    } else for (const t of counted) t.refusedOther++;
  };

  let nextProgress = scenario.from + HOUR;
  while (queue.size > 0) {
    const windowEnd = (Math.floor(queue.peek()!.at / TICK_MS) + 1) * TICK_MS;
    // Every record of the window in one batch, as the event source's batching window makes it: a receipt or a
    // check that the window's own sends led to (3 s later) joins it, not a batch of its own at the same time.
    while (queue.size > 0 && queue.peek()!.at < windowEnd) {
      const batch: Item[] = [];
      while (queue.size > 0 && queue.peek()!.at < windowEnd && batch.length < concurrency)
        batch.push(queue.pop()!);
      await Promise.all(batch.map(run));
    }
    const consumed = await bench.consume(windowEnd);
    for (const { country, at } of consumed.drops)
      result.drops.push({ country, minute: Math.round((at - scenario.from) / MINUTE) });
    for (const decision of consumed.decisions) {
      const key = `${groupOf.get(decision.e164) ?? '?'} ${decision.reason}`;
      result.reasons[key] = (result.reasons[key] ?? 0) + 1;
    }
    if (windowEnd >= nextProgress && process.env.GUARD_BENCH_VERBOSE) {
      process.stderr.write(`  ${scenario.name} seed ${seed}: ${(windowEnd / HOUR).toFixed(1)} h\n`);
      nextProgress += HOUR;
    }
  }
  await bench.close();
  result.seconds = (performance.now() - started) / 1000;
  return result;
}
