/** Which changes of a verification are webhook events, and what an event carries (docs/webhooks.md). */
import { createHash } from 'node:crypto';
import type { CodeStatus, DeliveryStatus, Verification } from '../model';
import { formatUnits } from '../money';
import { settledStatus, toView, type VerificationView } from '../verification';

export const WEBHOOK_EVENT_TYPES = [
  'verification.delivery.sent',
  'verification.delivery.delivered',
  'verification.delivery.failed',
  'verification.verified',
  'verification.locked',
  'verification.expired',
  'guard.cap_reached',
  'guard.conversion_drop',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** The events about the service's guard, not about a verification. */
type GuardEventType = 'guard.cap_reached' | 'guard.conversion_drop';
export type VerificationEventType = Exclude<WebhookEventType, GuardEventType>;

/** The JSON body of every webhook about a verification. */
export interface WebhookEvent {
  /** Same for every delivery attempt and every endpoint: consumers dedupe by it. Also the `webhook-id` header. */
  id: string;
  type: VerificationEventType;
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

const DELIVERY_EVENTS: Partial<Record<DeliveryStatus, VerificationEventType>> = {
  SENT: 'verification.delivery.sent',
  DELIVERED: 'verification.delivery.delivered',
  FAILED: 'verification.delivery.failed',
};

const STATUS_EVENTS: Partial<Record<CodeStatus, VerificationEventType>> = {
  VERIFIED: 'verification.verified',
  LOCKED: 'verification.locked',
  EXPIRED: 'verification.expired',
};

/**
 * Deterministic from the verification, the sequence and the type, so a stream record processed twice yields the
 * same id. `EV` and 32 hex characters, like the service's other identifiers.
 */
export function webhookEventId(
  verificationSid: string,
  sequence: number,
  type: VerificationEventType,
): string {
  const digest = createHash('sha256').update(`${verificationSid}/${sequence}/${type}`).digest('hex');
  return `EV${digest.slice(0, 32)}`;
}

/** The events of one change: `delivery_status` became SENT, DELIVERED or FAILED; `status` left PENDING. */
export function eventsForChange(change: VerificationChange): WebhookEvent[] {
  const { before, after } = change;
  if (!before) return [];
  const types: VerificationEventType[] = [];
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

/** A cap the owner set for a country was reached: what the guard's consumer recorded with its block. */
export interface CapReachedChange {
  serviceSid: string;
  /** ISO alpha-2, or the country of a send counted under the `*` caps. */
  country: string;
  /** `hourly_sends`, `daily_sends`, `hourly_spend` or `daily_spend`. */
  cap: string;
  /** Sends, or units of 0.0001 USD for a spend cap. */
  limit: number;
  value: number;
  /** When the block started and when it ends (epoch ms): the cap's window. */
  since: number;
  until: number;
}

/** The body of `guard.cap_reached`: once per cap and window, when the guard starts refusing the country. */
export interface CapReachedEvent {
  id: string;
  type: 'guard.cap_reached';
  created_at: string;
  data: {
    service_sid: string;
    country: string;
    cap: string;
    /** Sends as a number; spend as a USD string with four decimals, like a verification's `price`. */
    limit: number | string;
    value: number | string;
    /** Until when the country's sends are refused (the end of the hour or the day, UTC). */
    refused_until: string;
  };
}

/**
 * A `guard.*` event of one service and country: its id derived from them, the alert's start and the type, so the
 * same alert found again (a stream record processed twice) is the same event.
 */
function guardAlert<T extends GuardEventType, D extends object>(
  type: T,
  change: { serviceSid: string; country: string; since: number },
  data: D,
) {
  const digest = createHash('sha256')
    .update(`${change.serviceSid}/${change.country}/${change.since}/${type}`)
    .digest('hex');
  return {
    id: `EV${digest.slice(0, 32)}`,
    type,
    created_at: new Date(change.since).toISOString(),
    data: { service_sid: change.serviceSid, country: change.country, ...data },
  };
}

/** One event per block: the same cap reached again in the same window is the same event (same id). */
export function capReachedEvent(change: CapReachedChange): CapReachedEvent {
  const spend = change.cap.endsWith('_spend');
  const amount = (value: number) => (spend ? formatUnits(value) : value);
  return guardAlert('guard.cap_reached', change, {
    cap: change.cap,
    limit: amount(change.limit),
    value: amount(change.value),
    refused_until: new Date(change.until).toISOString(),
  });
}

/** A country's codes of the last hour checked far below its usual conversion, as the guard's consumer found it. */
export interface ConversionDropChange {
  serviceSid: string;
  country: string;
  /** Codes sent in the hour before `since`, each at least 3 minutes old, and how many of them were checked. */
  sent: number;
  checked: number;
  /** The share of those codes the country's users check, from the guard's baseline (0 to 1). */
  usualConversion: number;
  /** `all` the country's codes; `new` those to its ranges not established (under 2 codes checked there lately). */
  ranges: 'all' | 'new';
  /** When it was found (epoch ms). */
  since: number;
}

/** The body of `guard.conversion_drop`: at most once an hour per country; nothing is refused for it. */
export interface ConversionDropEvent {
  id: string;
  type: 'guard.conversion_drop';
  created_at: string;
  data: {
    service_sid: string;
    country: string;
    codes_sent: number;
    codes_checked: number;
    /** `codes_checked` / `codes_sent`, and the usual share, both rounded to 2 decimals. */
    conversion: number;
    usual_conversion: number;
    ranges: 'all' | 'new';
  };
}

export function conversionDropEvent(change: ConversionDropChange): ConversionDropEvent {
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return guardAlert('guard.conversion_drop', change, {
    codes_sent: change.sent,
    codes_checked: change.checked,
    conversion: change.sent > 0 ? round2(change.checked / change.sent) : 0,
    usual_conversion: round2(change.usualConversion),
    ranges: change.ranges,
  });
}

/** A guard alert of one service, as the events function found it on the stream. */
export type GuardAlertEvent = CapReachedEvent | ConversionDropEvent;
