/**
 * The delivery's time budget against the five-minute Express limit: `readConfig` refuses a
 * channel wait that cannot fit, naming the setting and the numbers, and accepts one that does.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { readConfig } from '../../lib/config';
import { SEND_TIMEOUT_SECONDS } from '../../lib/functions';
import { SETTLE_AGE_SECONDS, STALL_SECONDS } from '../../functions/core/sweeper';
import {
  deliveryTimeBudget,
  EXPRESS_EXECUTION_LIMIT_SECONDS,
  receiptWaitSteps,
  settleDeadline,
  STATUS_READ_BUDGET_SECONDS,
  TASK_RUN_BUDGET_SECONDS,
} from '../../functions/core/delivery-time';

let outdir: string;
beforeAll(() => (outdir = mkdtempSync(path.join(tmpdir(), 'cdk.out'))));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const configWith = (context: Record<string, unknown>) => readConfig(new App({ context, outdir }).node);

describe('deliveryTimeBudget', () => {
  it('counts every channel wait, its status reads at their time-out, two task runs per channel and a settling run', () => {
    expect(TASK_RUN_BUDGET_SECONDS).toBe(10);
    expect(STATUS_READ_BUDGET_SECONDS).toBe(1);
    expect(EXPRESS_EXECUTION_LIMIT_SECONDS).toBe(300);
    expect(deliveryTimeBudget(5, 8)).toEqual({
      channels: 5,
      waitSeconds: 8,
      taskRuns: 11,
      // Reads at 1, 2 and 4 s of each wait.
      statusReads: 15,
      totalSeconds: 5 * 8 + 15 * 1 + 11 * 10,
      maxWaitSeconds: 32,
    });
    // 32 s: reads at 1, 2, 4, 8 and 16 s (5 × 37 + 110 = 295); 33 s adds one at 32 s (5 × 39 + 110 = 305).
    expect(deliveryTimeBudget(5, 32).totalSeconds).toBe(295);
    expect(deliveryTimeBudget(5, 33).totalSeconds).toBe(305);
    // One channel: 261 s and its 9 reads, with 3 task runs, make exactly 300.
    expect(deliveryTimeBudget(1, 0).maxWaitSeconds).toBe(261);
    expect(deliveryTimeBudget(1, 261).totalSeconds).toBe(300);
  });

  it("budgets a status read at the state machine's own time-out for it", () => {
    const asl = JSON.parse(
      readFileSync(path.join(__dirname, '..', '..', 'statemachine', 'delivery.asl.json'), 'utf8'),
    ) as { States: Record<string, { TimeoutSeconds?: number }> };
    expect(asl.States.ReadDeliveryStatus?.TimeoutSeconds).toBe(STATUS_READ_BUDGET_SECONDS);
  });
});

describe('readConfig and the Express limit', () => {
  it("the issue's example, 60 s × 5 channels, is refused with the setting and the numbers", () => {
    expect(() => configWith({ 'otp:channelWaitSeconds': '60' })).toThrow(
      'Context otp:channelWaitSeconds=60 is too long for 5 channels (otp:allowedChannels): ' +
        '5 × 60 s of receipt waits + 30 status reads × 1 s + 11 task runs × 10 s = 440 s, over the 300 s a ' +
        'Step Functions Express execution may run; set otp:channelWaitSeconds to at most 32, or allow fewer channels',
    );
  });

  it('the largest wait that fits passes; one second more does not', () => {
    expect(configWith({ 'otp:channelWaitSeconds': 32 }).settings.channelWaitSeconds).toBe(32);
    expect(() => configWith({ 'otp:channelWaitSeconds': 33 })).toThrow(/= 305 s, over the 300 s/);
  });

  it('counts the channels the deployment allows: a long wait fits fewer channels', () => {
    expect(() => configWith({ 'otp:channelWaitSeconds': 118 })).toThrow('otp:channelWaitSeconds=118');
    const twoChannels = configWith({ 'otp:channelWaitSeconds': 118, 'otp:allowedChannels': 'sms,whatsapp' });
    expect(twoChannels.settings.channelWaitSeconds).toBe(118);
    expect(twoChannels.allowedChannels).toEqual(['sms', 'whatsapp']);
    expect(() =>
      configWith({ 'otp:channelWaitSeconds': 136, 'otp:allowedChannels': 'sms,whatsapp' }),
    ).toThrow('2 × 136 s of receipt waits + 16 status reads × 1 s + 5 task runs × 10 s = 338 s');
  });

  it('the defaults pass', () => {
    expect(configWith({}).settings.channelWaitSeconds).toBe(8);
  });
});

describe('receiptWaitSteps: the channel wait in steps, a status read after each but the last', () => {
  test.each([
    [8, [1, 1, 2, 4]],
    [4, [1, 1, 2]],
    [5, [1, 1, 2, 1]],
    [2, [1, 1]],
    [1, [1]],
    [0, [0]],
    [60, [1, 1, 2, 4, 8, 16, 28]],
  ])('%i s: %j', (waitSeconds, steps) => {
    expect(receiptWaitSteps(waitSeconds)).toEqual(steps);
    // The steps add up to the wait exactly: the next channel is tried when it was with one Wait state.
    expect(steps.reduce((total, step) => total + step, 0)).toBe(waitSeconds);
  });

  test('the default 8 s wait: reads at 1, 2 and 4 s, never more than log2 of the wait', () => {
    const steps = receiptWaitSteps(8);
    const readsAt = steps.slice(0, -1).map((_, i) => steps.slice(0, i + 1).reduce((a, b) => a + b, 0));
    expect(readsAt).toEqual([1, 2, 4]);
    expect(receiptWaitSteps(300).length - 1).toBeLessThanOrEqual(Math.ceil(Math.log2(300)));
  });
});

describe("the sweeper's ages against the functions' time-outs", () => {
  test("a send's charge line is written before the restart half reads past its time", () => {
    // The line is dated when the send starts and committed before its Lambda's time-out; the restart half reads
    // the ledger up to STALL_SECONDS ago, and its cursor never comes back for a line committed later.
    expect(SEND_TIMEOUT_SECONDS).toBeLessThan(STALL_SECONDS);
  });

  test('the settle half reads a send once a delivery claimed with it is past its deadline', () => {
    const claimedWithTheSend = new Date(0);
    expect(settleDeadline(claimedWithTheSend).getTime()).toBeLessThanOrEqual(SETTLE_AGE_SECONDS * 1000);
  });
});
