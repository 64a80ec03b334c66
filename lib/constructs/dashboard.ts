import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { METRIC, METRICS_NAMESPACE, SERVICE_DIMENSION, type MetricName } from '../../functions/core/metrics';
import { CHANNELS } from '../../functions/core/routing';
import {
  FUNCTIONS,
  FUNCTION_NAMES,
  PROVIDER_FUNCTIONS,
  type FunctionName,
  type ProviderFunctionName,
} from '../functions';
import { serviceMetric } from './service-metrics';

/** What the dashboard shows: the stack's own resources (the stack itself fits) and its alarms. */
export interface OtpDashboardProps {
  service: {
    stackName: string;
    functions: Record<FunctionName, lambda.IFunction>;
    stateMachine: sfn.IStateMachine;
    api: HttpApi;
    webhookQueue: sqs.IQueue;
    webhookDeadLetterQueue: sqs.IQueue;
  };
  alarms: cloudwatch.IAlarm[];
  /** The provider receipt functions, when the deployment has providers: a row of their own. */
  receiptFunctions?: Partial<Record<ProviderFunctionName, lambda.IFunction>>;
}

const PERIOD = Duration.minutes(5);
const WIDTH = 8;
const HEIGHT = 6;

/**
 * The owner's view of the service (docs/operations.md): the business metrics the functions write in EMF
 * (functions/core/metrics.ts), conversion, the functions' errors and durations, the delivery workflow's
 * failed and timed-out executions, the webhook queues, and every alarm. Named after the stack.
 */
export class OtpDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: OtpDashboardProps) {
    super(scope, id);
    const { service } = props;
    const metric = (name: MetricName, dimensions: Record<string, string> = {}, label?: string) =>
      serviceMetric(service.stackName, name, dimensions, { period: PERIOD, ...(label && { label }) });
    /** Every dimension value of a metric, found by CloudWatch at view time (error codes, outcomes, channels). */
    const byDimensions = (name: MetricName, dimensions: string[], statistic = 'Sum') =>
      new cloudwatch.MathExpression({
        expression:
          `SEARCH('{${METRICS_NAMESPACE},${[SERVICE_DIMENSION, ...dimensions].join(',')}} ` +
          `MetricName="${name}" ${SERVICE_DIMENSION}="${service.stackName}"', '${statistic}', ${PERIOD.toSeconds()})`,
        period: PERIOD,
      });
    const graph = (
      title: string,
      left: cloudwatch.IMetric[],
      extra: Partial<cloudwatch.GraphWidgetProps> = {},
    ) => new cloudwatch.GraphWidget({ title, left, width: WIDTH, height: HEIGHT, ...extra });

    const accepted = metric(METRIC.sendsAccepted, {}, 'accepted');
    const verified = metric(METRIC.checks, { outcome: 'verified' }, 'verified');

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: service.stackName,
      defaultInterval: Duration.hours(6),
    });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: props.alarms, width: 24, height: 4 }),
    );
    this.dashboard.addWidgets(
      graph('Sends accepted', [accepted]),
      graph('Sends refused, by error code', [byDimensions(METRIC.sendsRefused, ['code'])]),
      graph(
        'Conversion: verified / accepted (%)',
        [
          new cloudwatch.MathExpression({
            expression: '100 * verified / accepted',
            usingMetrics: { verified, accepted },
            label: 'conversion %',
            period: PERIOD,
          }),
        ],
        { right: [verified], leftYAxis: { min: 0, max: 100 } },
      ),
    );
    this.dashboard.addWidgets(
      graph('Checks, by outcome', [byDimensions(METRIC.checks, ['outcome'])]),
      graph('Deliveries, by channel and outcome', [byDimensions(METRIC.deliveries, ['channel', 'outcome'])]),
      graph('Fallbacks (channel switches), by channel left', [byDimensions(METRIC.fallbacks, ['channel'])]),
    );
    this.dashboard.addWidgets(
      graph(
        'Receipt latency p90 (send to delivered receipt), ms',
        CHANNELS.map((channel) =>
          serviceMetric(
            service.stackName,
            METRIC.receiptLatency,
            { channel },
            {
              period: PERIOD,
              statistic: 'p90',
              label: channel,
            },
          ),
        ),
      ),
      graph('Deliveries ended', [
        metric(METRIC.deliveriesEnded, { status: 'SENT' }, 'SENT (unconfirmed)'),
        metric(METRIC.deliveriesEnded, { status: 'FAILED' }, 'FAILED'),
        metric(METRIC.deliveriesFailed, {}, 'DeliveriesFailed (alarm)'),
      ]),
      graph('Webhook failures, by outcome', [byDimensions(METRIC.webhookFailures, ['outcome'])]),
    );
    this.dashboard.addWidgets(
      graph(
        'Function errors',
        FUNCTION_NAMES.map((name) =>
          service.functions[name].metricErrors({
            period: PERIOD,
            statistic: 'Sum',
            label: FUNCTIONS[name].id,
          }),
        ),
      ),
      graph(
        'Function duration p90, ms',
        FUNCTION_NAMES.map((name) =>
          service.functions[name].metricDuration({
            period: PERIOD,
            statistic: 'p90',
            label: FUNCTIONS[name].id,
          }),
        ),
      ),
      graph('API 4xx / 5xx', [
        service.api.metricClientError({ period: PERIOD, statistic: 'Sum', label: '4xx' }),
        service.api.metricServerError({ period: PERIOD, statistic: 'Sum', label: '5xx' }),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Delivery executions failed / timed out', [
        service.stateMachine.metricFailed({ period: PERIOD, statistic: 'Sum', label: 'failed' }),
        service.stateMachine.metricTimedOut({ period: PERIOD, statistic: 'Sum', label: 'timed out' }),
      ]),
      graph('Webhook dead-letter queue depth', [
        service.webhookDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: PERIOD,
          statistic: 'Maximum',
          label: 'dead letters',
        }),
      ]),
      graph('Webhook queue: oldest job age, s', [
        service.webhookQueue.metricApproximateAgeOfOldestMessage({
          period: PERIOD,
          statistic: 'Maximum',
          label: 'oldest',
        }),
      ]),
    );
    // The pumping guard: blocks as they start, owners' caps reached, and its consumer's health.
    this.dashboard.addWidgets(
      graph('Guard blocks started, by reason and level', [
        byDimensions(METRIC.guardBlocks, ['level', 'reason']),
      ]),
      graph('Guard caps reached, by cap', [byDimensions(METRIC.guardCapsReached, ['cap'])]),
      graph('Guard conversion drops', [metric(METRIC.guardConversionDrops, {}, 'countries')]),
      graph('Guard consumer: failed batches, items over budget', [
        metric(METRIC.guardBatchFailures, {}, 'failed batches'),
        metric(METRIC.guardItemsOverBudget, {}, 'items over 64 KB'),
      ]),
    );
    const receipts = Object.entries(props.receiptFunctions ?? {}).map(
      ([name, fn]) => [PROVIDER_FUNCTIONS[name as ProviderFunctionName].id, fn] as const,
    );
    if (receipts.length > 0) {
      this.dashboard.addWidgets(
        graph(
          'Provider receipt functions: invocations',
          receipts.map(([id, fn]) => fn.metricInvocations({ period: PERIOD, statistic: 'Sum', label: id })),
        ),
        graph(
          'Provider receipt functions: errors / throttles',
          receipts.flatMap(([id, fn]) => [
            fn.metricErrors({ period: PERIOD, statistic: 'Sum', label: `${id} errors` }),
            fn.metricThrottles({ period: PERIOD, statistic: 'Sum', label: `${id} throttles` }),
          ]),
        ),
        graph(
          'Provider receipt functions: duration p90, ms',
          receipts.map(([id, fn]) => fn.metricDuration({ period: PERIOD, statistic: 'p90', label: id })),
        ),
      );
    }
  }
}
