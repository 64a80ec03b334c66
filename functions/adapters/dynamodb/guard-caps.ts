/**
 * The `cap_reached` attribute the guard's consumer writes on a service's country state while a cap is reached
 * (adapters/dynamodb/guard.ts), as the webhook events function reads it off the stream: kept apart so that
 * function's bundle carries none of the guard.
 */
import type { CapReachedChange } from '../../core/webhooks/events';

/** The `cap_reached` attribute of a guard state item, if it has one. */
export function capReachedFromItem(item: Record<string, unknown>): CapReachedChange | undefined {
  const found = item.cap_reached as Record<string, unknown> | undefined;
  if (!found || typeof found !== 'object' || typeof found.service_sid !== 'string') return undefined;
  return {
    serviceSid: found.service_sid,
    country: String(found.country),
    cap: String(found.cap),
    limit: Number(found.limit),
    value: Number(found.value),
    since: Number(found.since),
    until: Number(found.until),
  };
}
