/**
 * Which of the table's stream records reach its two consumers, the webhook events function and the guard's
 * signals: the filter criteria of their event sources on AWS (lib/constructs/webhook-delivery.ts,
 * guard-signals.ts) and of the local stack's stream pollers (local/webhooks.ts, local/guard.ts), one definition for
 * both. Records no pattern matches are dropped before any invocation.
 */
import { WEBHOOKS_ATTRIBUTE } from '../dynamodb/items';

/** A leaf's accepted value, or Lambda's `exists` test (which matches only a leaf, never a map or a list). */
export type FilterValue = string | boolean | { readonly exists: boolean };

/**
 * A Lambda event filter pattern as its JSON: per field, the values it accepts or the pattern of its sub-fields.
 * Only equality and `exists` are used here (the local poller's matcher knows no other operator).
 */
export interface FilterPattern {
  readonly [field: string]: FilterPattern | readonly FilterValue[];
}

/** A guard country state that holds an alert in `attribute` (a map: its `service_sid` is the leaf tested). */
const guardAlert = (attribute: string): FilterPattern => ({
  dynamodb: {
    NewImage: {
      type: { S: ['guard_state'] },
      [attribute]: { M: { service_sid: { S: [{ exists: true }] } } },
    },
  },
});

/**
 * Only verifications sent while their service had a webhook endpoint (the `webhooks` flag the send sets), and the
 * guard's country states holding an alert (a cap reached, a conversion drop: `guard.*` events), can make events;
 * other verifications, API-key counters, number logs, ledger lines and other guard writes never reach the function.
 */
export const WEBHOOK_EVENTS_STREAM_FILTERS: readonly FilterPattern[] = [
  { dynamodb: { NewImage: { type: { S: ['verification'] }, [WEBHOOKS_ATTRIBUTE]: { BOOL: [true] } } } },
  guardAlert('cap_reached'),
  guardAlert('conversion_drop'),
];

/**
 * The guard's signals: every verification (an accepted send, a checked code, a receipt), and a number's log that
 * holds a guard decision (a refused send). Its `mode`, a leaf, is what is tested: `exists` on the map would never
 * match, and no refusal would reach the consumer.
 */
export const GUARD_SIGNALS_STREAM_FILTERS: readonly FilterPattern[] = [
  { dynamodb: { NewImage: { type: { S: ['verification'] } } } },
  { dynamodb: { NewImage: { guard: { M: { mode: { S: [{ exists: true }] } } } } } },
];
