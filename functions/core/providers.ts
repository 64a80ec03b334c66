import type { Channel } from './routing';
import { isSid } from './sids';

/** A message handed to a provider. `reference` correlates receipts and lets a provider drop duplicates. */
export interface OutboundMessage {
  channel: Channel;
  to: string;
  /** The message as the service's template renders it, the code in it. */
  body: string;
  /**
   * The code itself, as data: a provider that fills a template of its own (WhatsApp's authentication template, a
   * country's registered SMS template) takes it from here, never by reading it back out of `body`, whose other
   * digits (an order number) or a caller's alphanumeric code would defeat any pattern. In memory only, never
   * logged or stored.
   */
  code: string;
  /** The number's ISO country (kept on the verification), for country rules such as India's registered SMS. */
  country?: string;
  reference: string;
  /**
   * When the code expires (ISO 8601): a provider's message time-to-live must not outlast it. The delivery task
   * always sets it; a provider that needs it refuses a message without it.
   */
  expiresAt?: string;
}

/** What providers answer: they take the message (a receipt may follow later), or reject the number. */
export type ProviderAnswer =
  { status: 'accepted'; messageId: string } | { status: 'rejected'; reason: string };

/**
 * Why a provider failed a send, when the reason is about this deployment and not the number (low-cardinality:
 * the `ProviderErrors` metric's `code`). `provider_error` is anything not classified.
 */
export type ProviderErrorCode =
  | 'sandbox_destination_not_verified'
  | 'price_over_threshold'
  | 'monthly_spend_limit'
  | 'access_denied'
  | 'invalid_request'
  | 'throttled'
  | 'timeout'
  | 'provider_error';

/** A send the provider failed for a reason of ours (its configuration, limits, availability): thrown. */
export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** A delivery receipt, believed only after the provider's signature on it was verified. */
export interface Receipt {
  reference: string;
  messageId: string;
  status: 'delivered' | 'failed';
}

export interface ReceiptRequest {
  headers: Readonly<Record<string, string | undefined>>;
  body: string;
}

/** One provider; it may carry one or several channels. Errors and time-outs are thrown. */
export interface Provider {
  readonly name: string;
  send(message: OutboundMessage): Promise<ProviderAnswer>;
  /**
   * The least life the code must have left for this provider to send on `channel` (its message TTL's floor),
   * seconds; none when absent. Below it the channel is skipped before anything is claimed or sent.
   */
  minimumLifeSeconds?(channel: Channel): number;
  /**
   * The receipt in a callback, or undefined when its signature, timestamp or shape is not valid. A provider
   * whose signature scheme needs a look-up (a replayed token id) answers asynchronously; a provider whose
   * receipts never come over HTTP (AWS: SNS, see acceptProviderReceipt) answers undefined.
   */
  parseReceipt(request: ReceiptRequest, now: Date): Receipt | undefined | Promise<Receipt | undefined>;
}

export interface ProviderRegistry {
  /** The provider of `channel` for the number `to` (E.164): a deployment may choose one per country. */
  /** `country`: the number's ISO country (kept on the verification), for per-country overrides. */
  forChannel(channel: Channel, country: string | undefined): Provider;
  byName(name: string): Provider | undefined;
}

export const messageReference = (sid: string, channelIndex: number): string => `${sid}.${channelIndex}`;

export function parseMessageReference(reference: string): { sid: string; channelIndex: number } | undefined {
  const match = /^(.+)\.(\d{1,2})$/.exec(reference);
  return match && isSid('VE', match[1]!) ? { sid: match[1]!, channelIndex: Number(match[2]) } : undefined;
}
