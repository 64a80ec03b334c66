/** Which changes of a verification are webhook events, and what an event carries (docs/webhooks.md). */
import { createHash } from 'node:crypto';
import type { CodeStatus, DeliveryStatus, Verification } from '../model';
import { settledStatus, toView, type VerificationView } from '../verification';

export const WEBHOOK_EVENT_TYPES = [
  'verification.delivery.sent',
  'verification.delivery.delivered',
  'verification.delivery.failed',
  'verification.verified',
  'verification.locked',
  'verification.expired',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The JSON body of every webhook. */
export interface WebhookEvent {
  /** Same for every delivery attempt and every endpoint: consumers dedupe by it. Also the `webhook-id` header. */
  id: string;
  type: WebhookEventType;
  /** When the change happened (not when it was posted). */
  created_at: string;
  /** Increases with every event of one verification: a consumer ignores one lower than the last it applied. */
  sequence: number;
  /** The verification as fetch returned it right after the change. Never the code. */
  data: VerificationView;
}

/** One write to a verification, as the table's change stream reports it. */
export interface VerificationChange {
  /** Absent when the write created the verification. */
  before?: Verification;
  after: Verification;
  /** The verification's event counter after the write (every status-changing write adds one). */
  sequence: number;
  /** When the write was made. */
  at: Date;
}

const DELIVERY_EVENTS: Partial<Record<DeliveryStatus, WebhookEventType>> = {
  SENT: 'verification.delivery.sent',
  DELIVERED: 'verification.delivery.delivered',
  FAILED: 'verification.delivery.failed',
};

const STATUS_EVENTS: Partial<Record<CodeStatus, WebhookEventType>> = {
  VERIFIED: 'verification.verified',
  LOCKED: 'verification.locked',
  EXPIRED: 'verification.expired',
};

/**
 * Deterministic from the verification, the sequence and the type, so a stream record processed twice yields the
 * same id. `EV` and 32 hex characters, like the service's other identifiers.
 */
export function webhookEventId(verificationSid: string, sequence: number, type: WebhookEventType): string {
  const digest = createHash('sha256').update(`${verificationSid}/${sequence}/${type}`).digest('hex');
  return `EV${digest.slice(0, 32)}`;
}

/** The events of one change: `delivery_status` became SENT, DELIVERED or FAILED; `status` left PENDING. */
export function eventsForChange(change: VerificationChange): WebhookEvent[] {
  const { before, after } = change;
  if (!before) return [];
  const types: WebhookEventType[] = [];
  const delivery = before.deliveryStatus !== after.deliveryStatus && DELIVERY_EVENTS[after.deliveryStatus];
  if (delivery) types.push(delivery);
  const status = settledStatus(before) !== settledStatus(after) && STATUS_EVENTS[settledStatus(after)];
  if (status) types.push(status);
  const data = toView(after, change.at);
  return types.map((type) => ({
    id: webhookEventId(after.sid, change.sequence, type),
    type,
    created_at: change.at.toISOString(),
    sequence: change.sequence,
    data,
  }));
}
