/**
 * The alerts the guard's consumer writes on a service's country state (adapters/dynamodb/guard.ts): `cap_reached`
 * while a cap is reached, `conversion_drop` while a drop is told of. As the webhook events function reads them off
 * the stream: kept apart so that function's bundle carries none of the guard.
 */
import type { CapReachedChange, ConversionDropChange } from '../../core/webhooks/events';

const alert = (item: Record<string, unknown>, name: string): Record<string, unknown> | undefined => {
  const found = item[name] as Record<string, unknown> | undefined;
  return found && typeof found === 'object' && typeof found.service_sid === 'string' ? found : undefined;
};

/** The `cap_reached` attribute of a guard state item, if it has one. */
export function capReachedFromItem(item: Record<string, unknown>): CapReachedChange | undefined {
  const found = alert(item, 'cap_reached');
  if (!found) return undefined;
  return {
    serviceSid: String(found.service_sid),
    country: String(found.country),
    cap: String(found.cap),
    limit: Number(found.limit),
    value: Number(found.value),
    since: Number(found.since),
    until: Number(found.until),
  };
}

/** The `conversion_drop` attribute of a guard state item, if it has one. */
export function conversionDropFromItem(item: Record<string, unknown>): ConversionDropChange | undefined {
  const found = alert(item, 'conversion_drop');
  if (!found) return undefined;
  return {
    serviceSid: String(found.service_sid),
    country: String(found.country),
    sent: Number(found.sent),
    checked: Number(found.checked),
    usualConversion: Number(found.usual_conversion),
    ranges: found.ranges === 'new' ? 'new' : 'all',
    since: Number(found.since),
  };
}
