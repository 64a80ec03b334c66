import type { Channel } from './routing';

/** A message handed to a provider. `reference` correlates receipts and lets a provider drop duplicates. */
export interface OutboundMessage {
  channel: Channel;
  to: string;
  body: string;
  reference: string;
}

/** What providers answer: they take the message (a receipt may follow later), or reject the number. */
export type ProviderAnswer =
  { status: 'accepted'; messageId: string } | { status: 'rejected'; reason: string };

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
  /** The receipt in a callback, or undefined when its signature, timestamp or shape is not valid. */
  parseReceipt(request: ReceiptRequest, now: Date): Receipt | undefined;
}

export interface ProviderRegistry {
  forChannel(channel: Channel): Provider;
  byName(name: string): Provider | undefined;
}

export const messageReference = (sid: string, channelIndex: number): string => `${sid}.${channelIndex}`;

export function parseMessageReference(reference: string): { sid: string; channelIndex: number } | undefined {
  const match = /^(VE[0-9a-f]{32})\.(\d{1,2})$/.exec(reference);
  return match ? { sid: match[1]!, channelIndex: Number(match[2]) } : undefined;
}
