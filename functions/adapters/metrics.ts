/**
 * The metrics port on Lambda: Powertools Metrics writes CloudWatch embedded metric format (EMF) lines to
 * stdout, which CloudWatch turns into metrics with no API call. Data points are kept until `flush()`, which
 * the Lambda entries call once at the end of each invocation: one EMF line per distinct set of dimensions
 * (counts of the same name and dimensions summed; a set with more than 99 values takes more lines).
 */
import { Metrics as PowertoolsMetrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  METRICS_NAMESPACE,
  type MetricDimensions,
  type MetricName,
  type MetricUnitName,
  type Metrics,
} from '../core/metrics';

const UNITS: Record<MetricUnitName, (typeof MetricUnit)[keyof typeof MetricUnit]> = {
  Count: MetricUnit.Count,
  Milliseconds: MetricUnit.Milliseconds,
};

/** Below Powertools' 100 values of a metric and 100 metrics, either of which publishes a line on its own. */
const POINTS_PER_LINE = 99;

interface Pending {
  dimensions: MetricDimensions;
  points: { name: MetricName; unit: MetricUnitName; value: number }[];
}

export class EmfMetrics implements Metrics {
  private pending = new Map<string, Pending>();
  private readonly emf: PowertoolsMetrics;

  constructor(options: { serviceName?: string; namespace?: string } = {}) {
    this.emf = new PowertoolsMetrics({
      namespace: options.namespace ?? METRICS_NAMESPACE,
      // POWERTOOLS_SERVICE_NAME (the stack's name, set by the stack) when not given: the `service` dimension.
      ...(options.serviceName !== undefined && { serviceName: options.serviceName }),
    });
  }

  count(name: MetricName, dimensions: MetricDimensions = {}, value = 1): void {
    const points = this.group(dimensions).points;
    const same = points.find((point) => point.name === name && point.unit === 'Count');
    if (same) same.value += value;
    else points.push({ name, unit: 'Count', value });
  }

  timing(name: MetricName, milliseconds: number, dimensions: MetricDimensions = {}): void {
    this.group(dimensions).points.push({ name, unit: 'Milliseconds', value: Math.max(0, milliseconds) });
  }

  /** Writes what this invocation recorded; never throws (metrics must not fail a request). */
  flush(): void {
    const groups = [...this.pending.values()];
    this.pending = new Map();
    for (const { dimensions, points } of groups) {
      // Powertools publishes on its own at 100 values of a metric (or 100 metrics) and then drops the
      // dimensions: the points after it would be published without them. With fewer a line, it never does.
      for (let start = 0; start < points.length; start += POINTS_PER_LINE) {
        try {
          for (const [key, value] of Object.entries(dimensions)) this.emf.addDimension(key, value);
          for (const point of points.slice(start, start + POINTS_PER_LINE))
            this.emf.addMetric(point.name, UNITS[point.unit], point.value);
          this.emf.publishStoredMetrics();
        } catch {
          this.emf.clearMetrics();
          this.emf.clearDimensions();
        }
      }
    }
  }

  private group(dimensions: MetricDimensions): Pending {
    const key = JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
    let group = this.pending.get(key);
    if (!group) {
      group = { dimensions, points: [] };
      this.pending.set(key, group);
    }
    return group;
  }
}

/** Runs one invocation and flushes its metrics, whether it succeeded or threw. */
export async function withMetricsFlushed<T>(metrics: EmfMetrics, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } finally {
    metrics.flush();
  }
}

let lambda: EmfMetrics | undefined;

/** One EMF writer per Lambda container, shared by its deps and its entry (which flushes it). */
export function lambdaMetrics(): EmfMetrics {
  lambda ??= new EmfMetrics();
  return lambda;
}
