/**
 * What the sender keeps of each delivery attempt, for the console: who, what, how it ended, never the
 * payload or a secret. One small record per attempt, written only for services that have endpoints (nothing
 * else posts), kept 7 days.
 */
import { isSid } from '../sids';
import type { WebhookEventType } from './events';

/** How long a delivery record is kept (the table's TTL). */
export const WEBHOOK_DELIVERY_RECORD_DAYS = 7;

export interface WebhookDeliveryRecord {
  serviceSid: string;
  endpointSid: string;
  eventId: string;
  eventType: WebhookEventType;
  /** The verification the event is about (`data.sid` of the payload); undefined if the payload has none. */
  verificationSid?: string;
  /** When the attempt started (ISO). */
  at: string;
  /** 1 for the first try. */
  attempt: number;
  /** The response status, when there was one. */
  status?: number;
  /**
   * Why there was no (2xx) response: `timeout`, `url_refused`, `paused` (no request: the endpoint timed out on this
   * sender's last tries), a connection error code (`ECONNREFUSED`...).
   */
  error?: string;
  durationMs: number;
  /** True for a 2xx. */
  delivered: boolean;
  /** True when this failure was the last attempt: the job went to the dead-letter queue. */
  final: boolean;
}

/** Keeps delivery records. Must never throw: a lost record never fails or retries a delivery. */
export interface WebhookDeliveryLog {
  record(record: WebhookDeliveryRecord): Promise<void>;
}

/** The error of an attempt an endpoint's pause failed without a request (`EndpointPauses`; kind `paused`). */
export const PAUSED_ERROR = 'paused: the endpoint timed out on its last requests';

/**
 * A short kind for a transport error, never its text (which can name hosts or addresses): `timeout`,
 * `url_refused`, the Node error code when the text starts with one, else `connection_error`.
 */
export function webhookErrorKind(error: string): string {
  if (error.startsWith('no response within')) return 'timeout';
  if (error.startsWith('URL refused')) return 'url_refused';
  if (error === PAUSED_ERROR) return 'paused';
  return /\b(E[A-Z0-9_]{2,40})\b/.exec(error)?.[1] ?? 'connection_error';
}

/** The verification SID in a serialised event, if any; never throws. */
export function verificationSidOf(payload: string): string | undefined {
  try {
    const sid = (JSON.parse(payload) as { data?: { sid?: unknown } }).data?.sid;
    return typeof sid === 'string' && isSid('VE', sid) ? sid : undefined;
  } catch {
    return undefined;
  }
}
