/**
 * The provider-fee model of the bench (bench/fees.ts): messages handed over and paid per verification under the
 * channel wait, from the receipts' timing per channel.
 */
import {
  ASSUMED_RECEIPTS,
  SIMULATOR_RECEIPTS,
  expectedFees,
  lateShare,
  lognormal,
  renderFees,
  sampleFees,
  type ReceiptTiming,
} from '../../bench/fees';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Channel } from '../../functions/core/routing';

const ok = (ms: number): ReceiptTiming => ({
  refused: 0,
  failed: 0,
  silent: 0,
  delay: { kind: 'fixed', ms },
  billed: 'sent',
});
const every = (timing: ReceiptTiming) =>
  Object.fromEntries(
    (['sms', 'whatsapp', 'viber', 'rcs', 'sna'] as Channel[]).map((c) => [c, timing]),
  ) as Record<Channel, ReceiptTiming>;
const costs = { whatsapp: 50, sms: 80, rcs: 60 };

describe('expectedFees', () => {
  test('every receipt within the wait: exactly one message, the first channel’s fee', () => {
    const fees = expectedFees(['whatsapp', 'sms'], costs, every(ok(7_999)), 8);
    expect(fees.messagesSent).toBe(1);
    expect(fees.messagesPaid).toBe(1);
    expect(fees.secondMessage).toBe(0);
    expect(fees.fee).toBe(50);
  });

  test('every receipt after the wait: a second message when a second channel exists, both paid', () => {
    expect(expectedFees(['whatsapp', 'sms'], costs, every(ok(9_000)), 8)).toMatchObject({
      messagesSent: 2,
      messagesPaid: 2,
      secondMessage: 1,
      fee: 130,
    });
    // Every channel of the plan, then the end: no channel is tried twice.
    expect(expectedFees(['whatsapp', 'rcs', 'sms'], costs, every(ok(9_000)), 8).messagesSent).toBe(3);
    expect(expectedFees(['sms'], costs, every(ok(9_000)), 8)).toMatchObject({
      messagesSent: 1,
      secondMessage: 0,
    });
  });

  test('the wait decides: the same receipts are late for a shorter one', () => {
    expect(expectedFees(['whatsapp', 'sms'], costs, every(ok(3_000)), 8).messagesSent).toBe(1);
    expect(expectedFees(['whatsapp', 'sms'], costs, every(ok(3_000)), 2).messagesSent).toBe(2);
  });

  test('a failure receipt moves on at once, however soon it comes', () => {
    const failing = { ...ok(100), failed: 1 };
    const fees = expectedFees(['sms', 'whatsapp'], costs, { ...every(ok(100)), sms: failing }, 8);
    expect(fees).toMatchObject({ messagesSent: 2, messagesPaid: 2, secondMessage: 1, fee: 130 });
  });

  test('a refusal at the send moves on with nothing paid, and is no second message', () => {
    const fees = expectedFees(
      ['sms', 'whatsapp'],
      costs,
      { ...every(ok(100)), sms: { ...ok(100), refused: 1 } },
      8,
    );
    expect(fees).toMatchObject({ messagesSent: 1, messagesPaid: 1, secondMessage: 0, fee: 50 });
  });

  test('a channel billed on delivery is not paid for its failed messages', () => {
    const whatsapp: ReceiptTiming = { ...ok(100), failed: 0.5, billed: 'delivered' };
    const fees = expectedFees(['whatsapp', 'sms'], costs, { ...every(ok(100)), whatsapp }, 8);
    expect(fees.messagesSent).toBeCloseTo(1.5, 10);
    expect(fees.messagesPaid).toBeCloseTo(1, 10);
    expect(fees.fee).toBeCloseTo(0.5 * 50 + 0.5 * 80, 10);
  });

  test('mixed shares add up over the chain', () => {
    // First channel: 10 % fail, 20 % silent, the rest delivered within the wait; second always delivers.
    const first = { ...ok(1_000), failed: 0.1, silent: 0.2 };
    const fees = expectedFees(['whatsapp', 'sms'], costs, { ...every(ok(100)), whatsapp: first }, 8);
    expect(fees.secondMessage).toBeCloseTo(0.3, 10);
    expect(fees.messagesSent).toBeCloseTo(1.3, 10);
    expect(fees.fee).toBeCloseTo(50 + 0.3 * 80, 10);
  });
});

describe('lateShare', () => {
  test('a log-normal delay: half late at its median, 5 % at its 95th percentile', () => {
    const delay = lognormal(3_000, 20_000);
    expect(lateShare(delay, 3_000)).toBeCloseTo(0.5, 6);
    expect(lateShare(delay, 20_000)).toBeCloseTo(0.05, 6);
    expect(lateShare(delay, 8_000)).toBeGreaterThan(0.05);
    expect(lateShare(delay, 8_000)).toBeLessThan(0.5);
  });
});

describe('the bench figures', () => {
  test('on the local simulator’s receipts every verification is one message', () => {
    for (const row of sampleFees(SIMULATOR_RECEIPTS)) {
      expect(row.messagesSent).toBe(1);
      expect(row.secondMessage).toBe(0);
      expect(row.fee).toBe(row.firstChannelFee);
    }
  });

  test('under the assumed receipts, more than one message on average, and the price never moves', () => {
    const rows = sampleFees(ASSUMED_RECEIPTS);
    expect(rows.map((row) => row.country)).toEqual(['US', 'GB', 'DE', 'IN', 'BR']);
    for (const row of rows) {
      expect(row.messagesSent).toBeGreaterThan(1);
      expect(row.fee).toBeGreaterThan(row.firstChannelFee);
      // The channels' order is the routing table's: cheapest first.
      expect(row.channels.length).toBeGreaterThan(1);
    }
    expect(rows.find((row) => row.country === 'IN')!.channels[0]).toBe('sms');
    expect(renderFees(true)).toMatch(/once per 201/);
  });
});

describe('docs/providers.md', () => {
  test('states the assumed receipts the bench computes with', () => {
    const page = readFileSync(join(__dirname, '..', '..', 'docs', 'providers.md'), 'utf8');
    const names: Record<string, Channel> = {
      SNA: 'sna',
      WhatsApp: 'whatsapp',
      Viber: 'viber',
      RCS: 'rcs',
      SMS: 'sms',
    };
    const seconds = (ms: number) => `${ms / 1000} s`;
    for (const [name, channel] of Object.entries(names)) {
      const t = ASSUMED_RECEIPTS[channel];
      if (t.delay.kind !== 'lognormal') throw new Error(`${channel}: not log-normal`);
      const row = page.split('\n').find((line) => line.startsWith(`| ${name} `) && line.includes(' s, '));
      const cells = row?.split('|').map((cell) => cell.trim());
      expect(cells?.slice(2, 6)).toEqual([
        `${t.failed * 100} %`,
        `${t.silent * 100} %`,
        `${seconds(t.delay.medianMs)}, ${seconds(t.delay.p95Ms)}`,
        `${(lateShare(t.delay, 8000) * 100).toFixed(1)} %`,
      ]);
      expect(cells?.[6]?.includes('delivered')).toBe(t.billed === 'delivered');
    }
  });
});
