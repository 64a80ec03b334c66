/**
 * The bill under the provider fee model's assumed receipts (bench/cost.ts `expectedWorkflow`): the delivery
 * workflow's expected cost over a channel order, from hand-made counts and timings shaped like a bench run's.
 * Also the X-Ray estimate beside the bill, at the bill's volume.
 */
import {
  ASSUMPTIONS,
  PRICES,
  costModel,
  expectedWorkflow,
  xRaySampledShare,
  type CostResults,
  type WorkflowUnits,
} from '../../bench/cost';
import type { CountResults } from '../../bench/counts';
import {
  ASSUMED_RECEIPTS,
  expectedFees,
  lateShare,
  lognormal,
  sampleFees,
  type ReceiptTiming,
} from '../../bench/fees';
import type { LatencyResults } from '../../bench/latency';
import { evaluateTargets } from '../../bench/report';
import type { RequestSummary } from '../../bench/meter';
import type { Channel } from '../../functions/core/routing';

const summary = (byKind: Record<string, number>, rru: number, wru: number): RequestSummary => ({
  byKind,
  requests: Object.values(byKind).reduce((total, n) => total + n, 0),
  conditionFailures: 0,
  reportedCapacity: rru + wru,
  rru,
  wru,
});
const operation = (name: string, withAuth: RequestSummary) => ({
  operation: name,
  outcome: '200',
  runs: 5,
  withAuth,
  withoutAuth: withAuth,
  logBytes: 260,
});
const counts = {
  operations: [
    operation(
      'send accepted',
      summary({ BatchGetItem: 1, 'auth:UpdateItem': 1, TransactWriteItems: 1 }, 2.5, 9),
    ),
    operation('check, right code', summary({ 'auth:UpdateItem': 1, UpdateItem: 1 }, 0, 2)),
    operation('fetch', summary({ 'auth:UpdateItem': 1, GetItem: 1 }, 1, 1)),
  ],
  paths: [
    {
      path: 'first channel delivers',
      runs: 3,
      deliveryStatus: 'DELIVERED',
      tasks: { DeliverOverChannel: 1 },
      stateTransitions: 9,
      waits: 1,
      waitSeconds: 8,
      statusReads: 1,
      receipts: 1,
      executionMs: 1000,
      taskRequests: summary({ GetItem: 1, UpdateItem: 1 }, 1, 1),
      receiptRequests: summary({ GetItem: 1, UpdateItem: 1 }, 1, 1),
      readRequests: summary({ GetItem: 1 }, 0.5, 0),
      total: summary({ GetItem: 3, UpdateItem: 2 }, 2.5, 2),
      logBytes: 300,
    },
  ],
} as unknown as CountResults;
const timed = (mean: number) => ({ n: 100, mean, p50: mean, p95: mean, p99: mean });
const latency = {
  iterations: 100,
  warmup: 10,
  operations: [
    { operation: 'send', handler: timed(5.6), overhead: timed(0.6) },
    { operation: 'check, right code', handler: timed(2.9), overhead: timed(0.36) },
    { operation: 'fetch', handler: timed(2), overhead: timed(0.19) },
  ],
  raw: [],
  tasks: [
    { task: 'deliver (task)', duration: timed(3.9), dynamo: timed(2.3), carrier: timed(1.2) },
    { task: 'receipt handler', duration: timed(3), dynamo: timed(2.6) },
    { task: 'after-wait (task)', duration: timed(1), dynamo: timed(0.9) },
  ],
} as unknown as LatencyResults;

const cost: CostResults = costModel(counts, latency);
const units: WorkflowUnits = cost.workflowUnits!;

const timing = (overrides: Partial<ReceiptTiming> = {}): ReceiptTiming => ({
  refused: 0,
  failed: 0,
  silent: 0,
  delay: { kind: 'fixed', ms: 1000 },
  billed: 'sent',
  ...overrides,
});
/** Every channel as `base`, some changed. */
const table = (base: ReceiptTiming, changed: Partial<Record<Channel, ReceiptTiming>> = {}) =>
  ({
    ...Object.fromEntries((['sna', 'whatsapp', 'viber', 'rcs', 'sms'] as Channel[]).map((c) => [c, base])),
    ...changed,
  }) as Record<Channel, ReceiptTiming>;
const total = (usd: { stepFunctions: number; lambda: number; dynamoDb: number; apiGateway: number }) =>
  usd.stepFunctions + usd.lambda + usd.dynamoDb + usd.apiGateway;
const billed = (ms: number) => Math.ceil(ms / 100) / 10;
const express = (seconds: number) =>
  PRICES.stepFunctionsExpressPerMillionRequests +
  PRICES.stepFunctionsExpressPerGbSecond * seconds * PRICES.stepFunctionsExpressMemoryGb * 1_000_000;

describe('expectedWorkflow', () => {
  test.each([1, 2, 4, 8])('one channel, every receipt at %i s: the receipt delay table’s row', (seconds) => {
    const row = cost.receiptDelays.find((entry) => entry.receipt === `${seconds} s`)!;
    const expected = expectedWorkflow(
      ['sms'],
      units,
      table(timing({ delay: { kind: 'fixed', ms: seconds * 1000 } })),
    );
    expect(expected.billedSeconds).toBeCloseTo(row.billedSeconds, 10);
    expect(expected.runs.statusRead).toBe(row.statusReads);
    expect(expected.runs.afterWait).toBe(row.afterWaitTask ? 1 : 0);
    expect(expected.runs.finish).toBe(0);
    const { express, statusReads, afterWait } = expected.waitUsd;
    expect(express + statusReads + afterWait).toBeCloseTo(row.totalUsd, 2);
    // The rest of the delivery: its deliver task and the one receipt callback.
    expect(expected.runs.deliver).toBe(1);
    expect(expected.runs.callback).toBe(1);
  });

  test('every first channel delivered at 1 s: the bill as defined, line by line', () => {
    const bills = costModel(counts, latency, table(timing())).assumedReceipts!;
    expect(bills.map((bill) => bill.country)).toEqual(sampleFees().map((fees) => fees.country));
    const line = (prefix: string) => cost.lines.find((entry) => entry.service.startsWith(prefix))!.projected;
    for (const bill of bills) {
      expect(bill.secondMessage).toBe(0);
      expect(bill.apiGateway).toBeCloseTo(line('API Gateway'), 2);
      expect(bill.lambda).toBeCloseTo(line('Lambda'), 2);
      expect(bill.dynamoDb).toBeCloseTo(line('DynamoDB'), 2);
      expect(bill.stepFunctions).toBeCloseTo(line('Step Functions'), 2);
      expect(bill.total).toBeCloseTo(cost.totalFourServices.projected, 2);
    }
  });

  test('each outcome billed at its own duration rounded up, then weighed', () => {
    const halfSilent = expectedWorkflow(['sms'], units, table(timing({ silent: 0.5 })));
    const ms = units.ms;
    const delivered = billed(ms.deliver + 1000 + ms.statusRead);
    const silent = billed(ms.deliver + 8000 + 3 * ms.statusRead + ms.afterWait + ms.finish);
    expect(halfSilent.billedSeconds).toBeCloseTo((delivered + silent) / 2, 10);
    expect(halfSilent.runs).toMatchObject({
      deliver: 1,
      statusRead: 2,
      afterWait: 0.5,
      finish: 0.5,
      callback: 0.5,
    });
  });

  test('a long-tailed delay: each status read weighed by the delay’s share before it', () => {
    const delay = lognormal(3000, 20000);
    const expected = expectedWorkflow(['sms'], units, table(timing({ delay })));
    const by = (seconds: number) => 1 - lateShare(delay, seconds * 1000);
    // Read 1 always, read 2 unless the receipt came by 1 s, read 3 unless by 2 s; AfterWait unless by 4 s.
    expect(expected.runs.statusRead).toBeCloseTo(1 + (1 - by(1)) + (1 - by(2)), 10);
    expect(expected.runs.afterWait).toBeCloseTo(1 - by(4), 10);
    // The receipts after the wait: the one channel ends delivery (SENT) after its AfterWait task.
    expect(expected.runs.finish).toBeCloseTo(1 - by(8), 10);
  });

  test('costs more as a channel’s failure or silent share grows', () => {
    const order: Channel[] = ['sms', 'whatsapp', 'rcs'];
    const withSms = (sms: Partial<ReceiptTiming>) =>
      total(
        expectedWorkflow(order, units, { ...ASSUMED_RECEIPTS, sms: { ...ASSUMED_RECEIPTS.sms, ...sms } }).usd,
      );
    const assumed = withSms({});
    expect(withSms({ failed: 0.2 })).toBeGreaterThan(assumed + 0.5);
    expect(withSms({ silent: 0.2 })).toBeGreaterThan(withSms({ failed: 0.2 }));
    expect(withSms({ failed: 0, silent: 0 })).toBeLessThan(assumed);
    // Deterministic: the same figure on every call.
    expect(withSms({})).toBe(assumed);
  });

  test('first channel always silent: one whole wait and AfterWait, then the second channel’s delivery', () => {
    const order: Channel[] = ['sms', 'whatsapp'];
    const expected = expectedWorkflow(order, units, table(timing(), { sms: timing({ silent: 1 }) }));
    const second = expectedWorkflow(['whatsapp'], units, table(timing()));
    expect(expected.runs).toEqual({
      deliver: 2,
      refusal: 0,
      statusRead: 3 + second.runs.statusRead,
      afterWait: 1,
      finish: 0,
      callback: 1,
    });
    // One execution: the parts' time added, then rounded up to 100 ms.
    const ms = units.ms;
    const wholeWait = ms.deliver + 8000 + 3 * ms.statusRead + ms.afterWait;
    expect(expected.billedSeconds).toBeCloseTo(billed(wholeWait + ms.deliver + 1000 + ms.statusRead), 10);
    // Priced: the first channel's deliver task, reads and AfterWait, then the second channel's delivery, and
    // the one execution at its billed duration.
    const u = units.usd;
    const first =
      u.deliver.lambda +
      u.deliver.dynamoDb +
      3 * u.statusRead.dynamoDb +
      u.afterWait.lambda +
      u.afterWait.dynamoDb;
    expect(total(expected.usd)).toBeCloseTo(
      first + total(second.usd) - second.usd.stepFunctions + express(expected.billedSeconds),
      8,
    );
    // Both channels silent: the second's whole wait too, then the end of delivery (SENT).
    const silent = expectedWorkflow(order, units, table(timing({ silent: 1 })));
    expect(silent.runs).toMatchObject({ deliver: 2, afterWait: 2, statusRead: 6, finish: 1, callback: 0 });
    expect(silent.billedSeconds).toBeCloseTo(billed(2 * wholeWait + ms.finish), 10);
  });

  test('a failure receipt moves on at the next status read, not after the whole wait', () => {
    const order: Channel[] = ['sms', 'whatsapp'];
    const failed = expectedWorkflow(order, units, table(timing(), { sms: timing({ failed: 1 }) }));
    const ms = units.ms;
    expect(failed.runs).toMatchObject({ deliver: 2, afterWait: 1, statusRead: 2, callback: 2 });
    expect(failed.billedSeconds).toBeCloseTo(
      billed(2 * ms.deliver + 1000 + ms.statusRead + ms.afterWait + 1000 + ms.statusRead),
      10,
    );
    // After the last status read (4 s) no read sees it: the whole wait, as silence.
    const afterLastRead = timing({ failed: 1, delay: { kind: 'fixed', ms: 6000 } });
    const late = expectedWorkflow(order, units, table(timing(), { sms: afterLastRead }));
    expect(late.runs).toMatchObject({ statusRead: 4, afterWait: 1 });
  });

  test('a refusal moves on at once, with the refusal written; on the last channel it ends delivery', () => {
    const refused = expectedWorkflow(
      ['sms', 'whatsapp'],
      units,
      table(timing(), { sms: timing({ refused: 1 }) }),
    );
    expect(refused.runs).toMatchObject({ deliver: 2, refusal: 1, statusRead: 1, afterWait: 0, callback: 1 });
    const ms = units.ms;
    expect(refused.billedSeconds).toBeCloseTo(billed(2 * ms.deliver + ms.refusal + 1000 + ms.statusRead), 10);
    const none = expectedWorkflow(['sms'], units, table(timing({ refused: 1 })));
    expect(none.runs).toMatchObject({ deliver: 1, refusal: 1, finish: 1, statusRead: 0, callback: 0 });
  });

  test('a receipt that comes after the switch ends the next channel’s wait at its first read', () => {
    const order: Channel[] = ['sms', 'whatsapp'];
    // The first channel's receipt 9 s after its hand-over: under 1 s into the second channel's wait.
    const late = timing({ delay: { kind: 'fixed', ms: 9000 } });
    const expected = expectedWorkflow(order, units, table(timing({ silent: 1 }), { sms: late }));
    expect(expected.runs).toMatchObject({ deliver: 2, afterWait: 1, statusRead: 4, finish: 0, callback: 1 });
    const ms = units.ms;
    expect(expected.billedSeconds).toBeCloseTo(
      billed(2 * ms.deliver + 8000 + 3 * ms.statusRead + ms.afterWait + 1000 + ms.statusRead),
      10,
    );
  });

  test('a read that sees a delivered receipt and a failure mark ends the execution: no next channel', () => {
    // The first channel's late receipt and the second's failure, both before the second wait's first read.
    const expected = expectedWorkflow(
      ['sms', 'whatsapp', 'rcs'],
      units,
      table(timing(), {
        sms: timing({ delay: { kind: 'fixed', ms: 9000 } }),
        whatsapp: timing({ failed: 1 }),
      }),
    );
    expect(expected.runs).toMatchObject({ deliver: 2, afterWait: 1, statusRead: 4, finish: 0, callback: 2 });
  });

  test('the sample countries: the fee model’s second messages, and a bill above the defined one', () => {
    for (const bill of cost.assumedReceipts!) {
      expect(bill.secondMessage).toBeCloseTo(expectedFees(bill.channels, {}).secondMessage, 6);
      expect(bill.callbacks).toBeGreaterThan(1);
      expect(bill.total).toBeGreaterThan(cost.totalFourServices.projected);
    }
  });
});

describe('the bill target', () => {
  test('states its condition and, beside the figure judged, the range under the assumed receipts', () => {
    const bill = evaluateTargets(counts, { ...latency, operations: [] }, undefined, cost).find((target) =>
      target.target.includes('bill'),
    )!;
    expect(bill.target).toContain(
      '(delivered on the first channel, its receipt within 1 s of the hand-over)',
    );
    const totals = cost.assumedReceipts!.map((row) => row.total);
    expect(bill.measured).toBe(
      `$${cost.totalFourServices.projected.toFixed(2)} ($${Math.min(...totals).toFixed(2)} to ` +
        `$${Math.max(...totals).toFixed(2)} under the fee model's assumed receipts, US, GB, DE, IN, BR)`,
    );
    // Judged on the definition alone.
    expect(bill.met).toBe(cost.totalFourServices.projected <= 20);
  });
});

describe("the X-Ray estimate at the bill's volume", () => {
  test("records at least the reservoir's trace a second, every trace when they come slower", () => {
    const traces = cost.perVerification.apiGatewayRequests + 1;
    const volume = ASSUMPTIONS.billMonthlyVerifications;
    const reservoirTraces = ASSUMPTIONS.xRayReservoirPerSecond * ASSUMPTIONS.secondsPerMonth;
    const recordedAtLeast = Math.min(traces * volume, reservoirTraces);
    const floor = (recordedAtLeast / volume) * PRICES.xRayPerMillionTraces;
    const line = cost.lines.find((entry) => entry.service.includes('X-Ray'))!;
    expect(line.projected).toBeGreaterThanOrEqual(floor - 0.005);
  });

  test('tracing is off by default (otp:tracing): its line is in neither total', () => {
    const line = cost.lines.find((entry) => entry.service.includes('X-Ray'))!;
    const sum = (lines: typeof cost.lines) => lines.reduce((total, entry) => total + entry.projected, 0);
    const estimates = cost.lines.filter((entry) => !entry.service.includes('X-Ray'));
    expect(line.service).toMatch(/^optional: .*otp:tracing/);
    expect(cost.totalWithOther.projected).toBeCloseTo(sum(estimates), 1);
    expect(cost.totalFourServices.projected).toBeLessThan(cost.totalWithOther.projected);
  });

  test('the share falls toward the fixed rate as the traces come faster', () => {
    expect(xRaySampledShare(ASSUMPTIONS.xRayReservoirPerSecond / 2)).toBe(1);
    const shares = [2, 10, 100, 10_000].map(xRaySampledShare);
    for (const [index, share] of shares.entries()) {
      expect(share).toBeGreaterThan(ASSUMPTIONS.xRayFixedRate);
      if (index > 0) expect(share).toBeLessThan(shares[index - 1]!);
    }
    expect(shares.at(-1)).toBeCloseTo(ASSUMPTIONS.xRayFixedRate, 3);
  });
});
