/**
 * What a verification costs the operator in provider fees. The delivery workflow hands the code to the cheapest
 * channel and waits `channelWaitSeconds` (8 s by default) for its final receipt; a failure receipt, or no final
 * receipt by then, sends the code again on the next channel, and each message handed over is paid to its provider
 * (one whose receipt comes after the switch was delivered all the same). The customer's price does not move: one
 * charge per accepted send (201), whatever the channels cost.
 *
 * Computed exactly, not sampled: channel i is tried with the probability that every channel before it moved on,
 * and its own chance of moving on depends on its receipts only. The receipt timings are assumptions
 * (ASSUMED_RECEIPTS), stated with the figure: no real provider's receipts were measured here.
 */
import { CHANNELS, planRoute, ROUTES, type Channel } from '../functions/core/routing';
import { DEFAULT_SETTINGS } from '../functions/core/settings';
import { DEFAULT_CHANNEL_BEHAVIOUR } from '../local/carrier';
import { markdownTable, table } from './stats';

/** When a channel's final receipt comes after the provider took the message, ms. */
export type ReceiptDelay =
  | { kind: 'fixed'; ms: number }
  /** Log-normal, given by its median and 95th percentile: receipt delays are skewed, with a long tail. */
  | { kind: 'lognormal'; medianMs: number; p95Ms: number };

export interface ReceiptTiming {
  /** Share of messages the provider refuses at the send (nothing sent, nothing paid): the next channel at once. */
  refused: number;
  /** Share of taken messages whose final receipt is a failure (the handset is unreachable, no such account). */
  failed: number;
  /** Share of taken messages no final receipt ever comes for. */
  silent: number;
  /** When the final receipt of a delivered message comes. */
  delay: ReceiptDelay;
  /**
   * `sent`: every message the provider took is paid; `delivered`: only those delivered (Meta prices WhatsApp
   * authentication messages per delivered message), a late one included.
   */
  billed: 'sent' | 'delivered';
}

/**
 * The assumed receipts per channel: the author's rounded guesses for a healthy route, not measured on any
 * provider (the local simulator's receipt delay is a test setting, not a provider's).
 * SMS receipts pass through the carrier's delivery report and have the longest tail; OTT channels (WhatsApp,
 * Viber, RCS) report within seconds but fail for numbers without an account or capable device; SNA fails
 * without a mobile data session. Change them here to see their effect.
 */
export const ASSUMED_RECEIPTS: Readonly<Record<Channel, ReceiptTiming>> = {
  sna: { refused: 0, failed: 0.1, silent: 0.02, delay: lognormal(2000, 5000), billed: 'sent' },
  whatsapp: { refused: 0, failed: 0.05, silent: 0.02, delay: lognormal(1000, 5000), billed: 'delivered' },
  viber: { refused: 0, failed: 0.1, silent: 0.03, delay: lognormal(1500, 6000), billed: 'sent' },
  rcs: { refused: 0, failed: 0.05, silent: 0.03, delay: lognormal(1500, 6000), billed: 'sent' },
  sms: { refused: 0, failed: 0.02, silent: 0.03, delay: lognormal(3000, 20000), billed: 'sent' },
};

/**
 * The local provider simulator's receipts with no carrier rule (local/carrier.ts): every message delivered, its
 * final event well within the wait. On it a verification always costs exactly one message.
 */
export const SIMULATOR_RECEIPTS: Readonly<Record<Channel, ReceiptTiming>> = Object.fromEntries(
  CHANNELS.map((channel) => [
    channel,
    {
      refused: 0,
      failed: 0,
      silent: 0,
      delay: { kind: 'fixed', ms: DEFAULT_CHANNEL_BEHAVIOUR.deliver },
      billed: 'sent',
    },
  ]),
) as Record<Channel, ReceiptTiming>;

export function lognormal(medianMs: number, p95Ms: number): ReceiptDelay {
  return { kind: 'lognormal', medianMs, p95Ms };
}

/** The standard normal CDF (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7). */
function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly =
    t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** The probability that a delivered message's final receipt comes after `waitMs`. */
export function lateShare(delay: ReceiptDelay, waitMs: number): number {
  if (delay.kind === 'fixed') return delay.ms > waitMs ? 1 : 0;
  if (waitMs <= 0) return 1;
  // 1.6449: the standard normal's 95th percentile.
  const sigma = Math.log(delay.p95Ms / delay.medianMs) / 1.6448536;
  if (sigma <= 0) return delay.medianMs > waitMs ? 1 : 0;
  return 1 - normalCdf(Math.log(waitMs / delay.medianMs) / sigma);
}

export interface FeeEstimate {
  channels: Channel[];
  /** Probability that a second message is handed over: a channel took one and delivery moved on to another. */
  secondMessage: number;
  /** Messages handed to providers per verification. */
  messagesSent: number;
  /** Messages paid per verification. */
  messagesPaid: number;
  /** Provider fees per verification, units of 0.0001 USD (fractional: an expectation). */
  fee: number;
  /** The first channel's price: the fee when it alone carries the code. */
  firstChannelFee: number;
}

/**
 * The expected messages and provider fees of one verification over `channels`, tried in order, with the
 * receipts `timing` and a wait of `waitSeconds` per channel. The code is taken to stay usable through every
 * channel: a user who enters it before the switch stops delivery too, so this is the figure without that.
 */
export function expectedFees(
  channels: readonly Channel[],
  costs: Partial<Record<Channel, number>>,
  timing: Readonly<Record<Channel, ReceiptTiming>> = ASSUMED_RECEIPTS,
  waitSeconds: number = DEFAULT_SETTINGS.channelWaitSeconds,
): FeeEstimate {
  // going[k]: the probability that delivery reaches the current channel after k messages were handed over.
  let going = [1];
  let sent = 0;
  let paid = 0;
  let fee = 0;
  let twoOrMore = 0;
  for (const channel of channels) {
    const t = timing[channel];
    const delivered = 1 - t.failed - t.silent;
    const paidShare = t.billed === 'sent' ? 1 : delivered;
    // A failure receipt, silence, or a delivery confirmed only after the wait: the next channel is tried.
    const movesOn = t.failed + t.silent + delivered * lateShare(t.delay, waitSeconds * 1000);
    const next = new Array<number>(going.length + 1).fill(0);
    going.forEach((p, k) => {
      const taken = p * (1 - t.refused);
      sent += taken;
      paid += taken * paidShare;
      fee += taken * paidShare * (costs[channel] ?? 0);
      if (k + 1 === 2) twoOrMore += taken;
      // A refusal sends nothing and moves on at once.
      next[k]! += p * t.refused;
      next[k + 1]! += taken * movesOn;
    });
    going = next;
  }
  const first = channels[0];
  return {
    channels: [...channels],
    secondMessage: twoOrMore,
    messagesSent: sent,
    messagesPaid: paid,
    fee,
    firstChannelFee: first ? (costs[first] ?? 0) : 0,
  };
}

/** Countries shown: channel orders from several to two channels. */
const SAMPLE_COUNTRIES = ['US', 'GB', 'DE', 'IN', 'BR'] as const;

export interface CountryFees extends FeeEstimate {
  country: string;
  /** The customer's price of one send, units of 0.0001 USD. */
  price: number;
}

/** The estimate for each sample country: a mobile number, every channel enabled, list prices. */
export function sampleFees(
  timing: Readonly<Record<Channel, ReceiptTiming>> = ASSUMED_RECEIPTS,
  waitSeconds: number = DEFAULT_SETTINGS.channelWaitSeconds,
): CountryFees[] {
  return SAMPLE_COUNTRIES.map((country) => {
    const plan = planRoute({ e164: '', country, type: 'MOBILE' }, { enabledChannels: CHANNELS, prices: {} });
    if (!plan.ok) throw new Error(`${country} has no route`);
    return {
      country,
      price: plan.price,
      ...expectedFees(plan.channels, ROUTES[country]!.cost, timing, waitSeconds),
    };
  });
}

const usd = (units: number) => `$${(units / 10_000).toFixed(4)}`;
const percent = (share: number) => `${(share * 100).toFixed(1)} %`;

/** The fee table, text or Markdown, with its heading and the note on the customer's price. */
export function renderFees(markdown = false, rows = sampleFees()): string {
  const header = ['Country', 'Channels, cheapest first', 'P(2nd message)', 'Messages paid', 'Fee', 'Price'];
  const body = rows.map((row) => [
    row.country,
    row.channels.join(', '),
    percent(row.secondMessage),
    row.messagesPaid.toFixed(3),
    usd(row.fee),
    usd(row.price),
  ]);
  const heading = `Provider fees per verification: ${DEFAULT_SETTINGS.channelWaitSeconds} s switch, assumed receipts`;
  const note =
    'Fee: expected provider fees (list prices); Price: what the customer is charged, once per 201, whatever ' +
    'the fees. Receipts assumed, not measured: `ASSUMED_RECEIPTS` in bench/fees.ts.';
  return markdown
    ? `### ${heading}\n\n${markdownTable(header, body)}\n\n${note}\n`
    : `${heading}\n${table(header, body)}\n${note}\n`;
}
