/**
 * The metrics port: business counts and timings an owner watches (docs/operations.md). The core and the HTTP
 * layer call it; on Lambda the adapter (functions/adapters/metrics.ts) writes them in CloudWatch's embedded
 * metric format, flushed once per invocation; tests use the in-memory one, the local stack the no-op.
 *
 * Dimensions are low-cardinality only: a channel, an outcome, an error code, a status. Never a SID, a number,
 * a key or a code.
 */
import type { Channel } from './routing';

/** One namespace for every metric of the service; each stack's metrics carry its name as the `service` dimension. */
export const METRICS_NAMESPACE = 'OtpVerify';

/** The dimension every metric carries: the stack (service) that emitted it (`POWERTOOLS_SERVICE_NAME`). */
export const SERVICE_DIMENSION = 'service';

/** Metric names, and the dimensions each carries besides `service`. */
export const METRIC = {
  /** A send answered 201 and charged (replays not counted). No dimension. */
  sendsAccepted: 'SendsAccepted',
  /** A send refused with an error, dimension `code` (the API error code, e.g. `burst`, `insufficient_funds`). */
  sendsRefused: 'SendsRefused',
  /** A check answered, dimension `outcome` (`verified`, `wrong_code`, ..., or an API error code). */
  checks: 'Checks',
  /** A channel's answer to a message, or its receipt: dimensions `channel`, `outcome` (see DeliveryOutcome). */
  deliveries: 'Deliveries',
  /** Delivery moved on from a channel to the next one (rejected, failed or unconfirmed), dimension `channel` (from). */
  fallbacks: 'Fallbacks',
  /** Milliseconds from a channel's send to its delivered receipt, dimension `channel`. */
  receiptLatency: 'ReceiptLatency',
  /**
   * A provider refused or failed a send for a reason about us, not the number, dimension `code`
   * (ProviderErrorCode: e.g. `sandbox_destination_not_verified`, `access_denied`, `price_over_threshold`).
   * Delivery moves on to the next channel; the alarms read the codes an operator must act on.
   */
  providerErrors: 'ProviderErrors',
  /** A delivery ended FAILED: no channel accepted the message. No dimension. The failed-delivery alarm reads it. */
  deliveriesFailed: 'DeliveriesFailed',
  /** A delivery ended, dimension `status` (`SENT`: accepted but unconfirmed; `FAILED`). */
  deliveriesEnded: 'DeliveriesEnded',
  /** A webhook attempt that did not succeed, dimension `outcome` (`retry`, `dead`, `error`). */
  webhookFailures: 'WebhookFailures',
  /**
   * The pumping guard started a block (not counted again while it is renewed): dimensions `reason` (a guard
   * reason code) and `level` (`standard`, `strict`: the lowest level that enforces it). Alarm on it to learn
   * of an attack when it starts.
   */
  guardBlocks: 'GuardBlocks',
  /**
   * A cap the owner set for a country was reached: the guard refuses the country's sends until the end of the
   * hour or day. Once per cap and window, dimension `cap` (`hourly_sends`, `daily_sends`, `hourly_spend`,
   * `daily_spend`).
   */
  guardCapsReached: 'GuardCapsReached',
  /**
   * A country's codes of the last hour were checked far less than its users check theirs (the guard's conversion
   * watch): nothing is refused, the log line `guard.conversion_drop` names the service and country. Once per
   * country an hour. No dimension: the alarm reads it.
   */
  guardConversionDrops: 'GuardConversionDrops',
  /**
   * The guard's stream consumer failed a batch (its log line `guard.batch_failed` says why: `item_too_large`, an
   * aggregate past DynamoDB's 400 KB item limit, or another error). No dimension: the alarm reads it. Lambda
   * retries the batch, then drops it into the guard's on-failure queue (alarmed too).
   */
  guardBatchFailures: 'GuardBatchFailures',
  /**
   * The consumer wrote a guard item past its size budget (64 KB); its log line `guard.item_over_budget` names the
   * item. No dimension: the alarm reads it.
   */
  guardItemsOverBudget: 'GuardItemsOverBudget',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export type DeliveryOutcome = 'accepted' | 'rejected' | 'failed' | 'delivered';
export type MetricUnitName = 'Count' | 'Milliseconds';
export type MetricDimensions = Readonly<Record<string, string>>;

export interface Metrics {
  /** Adds `value` (default 1) to a count. */
  count(name: MetricName, dimensions?: MetricDimensions, value?: number): void;
  /** Records a duration in milliseconds. */
  timing(name: MetricName, milliseconds: number, dimensions?: MetricDimensions): void;
}

export const noMetrics: Metrics = { count: () => undefined, timing: () => undefined };

export interface RecordedMetric {
  name: MetricName;
  unit: MetricUnitName;
  value: number;
  dimensions: MetricDimensions;
}

/** Keeps every data point, for tests: `total(name, dims)` sums the counts whose dimensions include `dims`. */
export class InMemoryMetrics implements Metrics {
  readonly recorded: RecordedMetric[] = [];

  count(name: MetricName, dimensions: MetricDimensions = {}, value = 1): void {
    this.recorded.push({ name, unit: 'Count', value, dimensions });
  }

  timing(name: MetricName, milliseconds: number, dimensions: MetricDimensions = {}): void {
    this.recorded.push({ name, unit: 'Milliseconds', value: milliseconds, dimensions });
  }

  total(name: MetricName, dimensions: MetricDimensions = {}): number {
    return this.recorded
      .filter(
        (metric) =>
          metric.name === name &&
          Object.entries(dimensions).every(([key, value]) => metric.dimensions[key] === value),
      )
      .reduce((sum, metric) => sum + metric.value, 0);
  }
}

/** The dimensions of a `Deliveries` data point, named one way by every caller. */
export const deliveryDimensions = (channel: Channel, outcome: DeliveryOutcome) => ({ channel, outcome });
