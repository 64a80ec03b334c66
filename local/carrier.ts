/**
 * The simulated carrier of the local stack: plays every channel, with behaviour per number prefix that a
 * developer or a test sets, keeps an inbox of what it carried, and posts signed delivery receipts to the
 * service's real callback route. It speaks the HTTP carrier protocol of functions/adapters/providers.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import * as z from 'zod';
import type { ProviderAnswer } from '../functions/core/providers';
import type { CarrierWireMessage } from '../functions/adapters/providers/http-carrier';
import { CHANNELS, type Channel } from '../functions/core/routing';
import { SIGNATURE_HEADER, signPayload } from '../functions/adapters/providers/signature';
import { SimulatedTimers } from './timers';

/**
 * `deliver`: a receipt after that many ms; `silent`: accepted, never confirmed; `reject`: the number is rejected;
 * `error`: the carrier answers HTTP 500; `hang`: it answers nothing for that many ms (the service's time-out
 * fires first), then 500. An error or a hang carries nothing.
 */
/**
 * `deliver`: accepted, delivered after N ms; `undeliverable`: accepted, reported undeliverable after N ms (the
 * handset is off or the number unreachable: the provider learns it from the network, not at the send).
 */
export type ChannelBehaviour =
  'silent' | 'reject' | 'error' | { deliver: number } | { undeliverable: number } | { hang: number };

const fails = (behaviour: ChannelBehaviour): boolean =>
  behaviour === 'error' || (typeof behaviour === 'object' && 'hang' in behaviour);

/** What a channel no rule names does: delivered, its receipt 200 ms after the send. */
export const DEFAULT_CHANNEL_BEHAVIOUR = { deliver: 200 } as const satisfies ChannelBehaviour;

export interface CarrierRule {
  prefix: string;
  channels: Partial<Record<Channel, ChannelBehaviour>>;
}

// The `error` words follow the field's name in the route's answer (consoleIssueMessage).
const behaviourSchema = z.union(
  [
    z.literal('silent'),
    z.literal('reject'),
    z.literal('error'),
    z.object({ deliver: z.number().int().min(0).max(600_000) }),
    z.object({ undeliverable: z.number().int().min(0).max(600_000) }),
    z.object({ hang: z.number().int().min(0).max(600_000) }),
  ],
  {
    error: 'must be "silent", "reject", "error", {"deliver": ms}, {"undeliverable": ms} or {"hang": ms}.',
  },
);

export const carrierRuleSchema = z.object({
  prefix: z.string().regex(/^\+\d{0,15}$/, { error: 'must be + and at most 15 digits, as "+447400".' }),
  channels: z.partialRecord(z.enum(CHANNELS), behaviourSchema),
});

export interface CarriedMessage {
  to: string;
  channel: Channel;
  body: string;
  reference: string;
  messageId?: string;
  /** The provider that carried it under the provider simulator (local/provider-simulator.ts); unset: this carrier. */
  provider?: string;
  /** `delivered` once the receipt was posted; `accepted` while (or if forever) unconfirmed; `rejected`. */
  outcome: 'accepted' | 'delivered' | 'rejected' | 'undelivered';
  time: string;
}

export interface SimulatedCarrierOptions {
  /** Where receipts are posted: the service's `/v2/Callbacks/carrier`. */
  receiptUrl: () => string;
  receiptSecret: Buffer;
  /** Bearer token the service must present. */
  token: string;
  /** Behaviour of a channel no rule names. */
  defaultBehaviour?: ChannelBehaviour;
}

export class SimulatedCarrier {
  private rules: CarrierRule[] = [];
  private readonly carried: CarriedMessage[] = [];
  private readonly answers = new Map<string, ProviderAnswer>();
  /** How many times the service handed over each message reference, duplicates included. */
  readonly requestsByReference = new Map<string, number>();
  private readonly timers = new SimulatedTimers();
  /** Messages answered with an error or a hang, for tests. */
  readonly failures: { to: string; channel: Channel; reference: string; time: string }[] = [];

  constructor(private readonly options: SimulatedCarrierOptions) {}

  setRule(rule: CarrierRule): void {
    this.rules = [...this.rules.filter((existing) => existing.prefix !== rule.prefix), rule];
  }

  clearRules(): void {
    this.rules = [];
  }

  isAuthorized(authorization: string | undefined): boolean {
    const expected = Buffer.from(`Bearer ${this.options.token}`);
    const given = Buffer.from(authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** The HTTP answer to `POST /messages`: 200 with `accept`'s answer, or 500 for `error` and `hang`. */
  async respond(message: CarrierWireMessage): Promise<{ status: number; body: unknown }> {
    const behaviour = this.answers.has(message.reference)
      ? undefined
      : this.behaviourFor(message.to, message.channel);
    if (behaviour && fails(behaviour)) {
      this.failures.push({
        to: message.to,
        channel: message.channel,
        reference: message.reference,
        time: new Date().toISOString(),
      });
      if (typeof behaviour === 'object' && 'hang' in behaviour) await this.timers.hang(behaviour.hang);
      return { status: 500, body: { error: 'carrier error' } };
    }
    return { status: 200, body: this.accept(message) };
  }

  /** Takes a message. The same reference twice (a task run twice) carries it once and answers the same. */
  accept(message: CarrierWireMessage): ProviderAnswer {
    // Counted before deduplication: tests use it to prove the service itself sends once.
    this.requestsByReference.set(
      message.reference,
      (this.requestsByReference.get(message.reference) ?? 0) + 1,
    );
    const known = this.answers.get(message.reference);
    if (known) return known;
    const behaviour = this.behaviourFor(message.to, message.channel);
    if (fails(behaviour)) throw new Error('The carrier failed');
    const record: CarriedMessage = {
      to: message.to,
      channel: message.channel,
      body: message.body,
      reference: message.reference,
      outcome: behaviour === 'reject' ? 'rejected' : 'accepted',
      time: new Date().toISOString(),
    };
    let answer: ProviderAnswer;
    if (behaviour === 'reject') {
      answer = { status: 'rejected', reason: `${message.channel} cannot reach this number` };
    } else {
      record.messageId = `SM${randomUUID().replaceAll('-', '')}`;
      answer = { status: 'accepted', messageId: record.messageId };
      if (typeof behaviour === 'object' && 'deliver' in behaviour)
        this.timers.later(behaviour.deliver, () => this.postReceipt(record, 'delivered'));
      if (typeof behaviour === 'object' && 'undeliverable' in behaviour)
        this.timers.later(behaviour.undeliverable, () => this.postReceipt(record, 'failed'));
    }
    this.carried.push(record);
    this.answers.set(message.reference, answer);
    return answer;
  }

  /** Messages carried to a number, newest first. */
  messagesTo(to: string | undefined): CarriedMessage[] {
    return this.carried.filter((message) => !to || message.to === to).reverse();
  }

  /** Waits for receipts already due to be posted (tests), and cancels the rest. */
  close(): Promise<void> {
    return this.timers.close();
  }

  /** A message another simulated provider carried (local/provider-simulator.ts), for the same inbox. */
  record(message: CarriedMessage): void {
    this.carried.push(message);
  }

  /** The behaviour the rules give a channel for a number (the provider simulator follows them too). */
  behaviourFor(to: string, channel: Channel): ChannelBehaviour {
    const rule = this.rules
      .filter((candidate) => to.startsWith(candidate.prefix))
      .sort((a, b) => b.prefix.length - a.prefix.length)[0];
    return rule?.channels[channel] ?? this.options.defaultBehaviour ?? DEFAULT_CHANNEL_BEHAVIOUR;
  }

  private async postReceipt(record: CarriedMessage, status: 'delivered' | 'failed'): Promise<void> {
    const body = JSON.stringify({ reference: record.reference, messageId: record.messageId, status });
    try {
      const response = await fetch(this.options.receiptUrl(), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signPayload(this.options.receiptSecret, body, new Date()),
        },
        body,
      });
      if (response.ok) record.outcome = status === 'delivered' ? 'delivered' : 'undelivered';
    } catch {
      // The service is down: a real carrier would retry; the simulated one leaves the message unconfirmed.
    }
  }
}
