import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import {
  METRICS_NAMESPACE,
  SERVICE_DIMENSION,
  type MetricDimensions,
  type MetricName,
} from '../../functions/core/metrics';

/**
 * A metric the functions write in EMF (functions/core/metrics.ts, functions/adapters/metrics.ts): namespace
 * `OtpVerify`, dimension `service` = the stack's name (the functions' `POWERTOOLS_SERVICE_NAME`) and the
 * metric's own dimensions, exactly as emitted (CloudWatch matches a metric by its whole dimension set).
 */
export function serviceMetric(
  stackName: string,
  name: MetricName,
  dimensions: MetricDimensions = {},
  options: { statistic?: string; period?: Duration; label?: string } = {},
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { [SERVICE_DIMENSION]: stackName, ...dimensions },
    statistic: options.statistic ?? cloudwatch.Stats.SUM,
    period: options.period ?? Duration.minutes(5),
    ...(options.label !== undefined && { label: options.label }),
  });
}

/** The environment that makes the functions' metrics and log lines carry the stack's name as their service. */
export const observabilityEnvironment = (stackName: string): Record<string, string> => ({
  POWERTOOLS_SERVICE_NAME: stackName,
});
