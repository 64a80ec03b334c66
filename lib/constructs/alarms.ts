import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { METRIC } from '../../functions/core/metrics';
import {
  FUNCTIONS,
  FUNCTION_NAMES,
  PROVIDER_FUNCTIONS,
  type FunctionName,
  type ProviderFunctionName,
} from '../functions';
import { Grouping } from './logical-ids';
import { serviceMetric } from './service-metrics';

/** A stream consumer this far behind has its own alarm (IteratorAge): well past the guard's batching window. */
const STREAM_LAG_ALARM_MINUTES = 5;

export interface OtpAlarmsProps {
  /** Existing SNS topic the alarms notify; without it the alarms only change state. */
  alarmTopicArn: string | undefined;
  /** The functions' metrics carry it as their `service` dimension (lib/constructs/service-metrics.ts). */
  stackName: string;
  api: HttpApi;
  functions: Record<FunctionName, NodejsFunction>;
  logGroups: Record<FunctionName, logs.ILogGroup>;
  stateMachine: sfn.StateMachine;
  webhookDeadLetterQueue: sqs.IQueue;
  /** The guard consumer's on-failure destination: batches dropped after their retries (guard-signals.ts). */
  guardDroppedBatches: sqs.IQueue;
  /** The provider receipt functions, when the deployment has providers (lib/constructs/providers.ts). */
  receiptFunctions?: Partial<Record<ProviderFunctionName, NodejsFunction>>;
  /** Where the receipt functions keep the receipts they failed on (lib/constructs/providers.ts). */
  failedReceiptQueue?: sqs.IQueue;
  /** Concurrency reserved for the receipt callbacks' function (`otp:receiptReservedConcurrency`), if any. */
  receiptReservedConcurrency?: number;
  /** The deployment sends through real providers (`otp:providers`): alarm on the errors only an operator fixes. */
  realProviders?: boolean;
}

/**
 * Every alarm fires on the first occurrence (above 0 in 5 minutes), or past its threshold where it reads a
 * duration, and notifies the configured topic, if any.
 */
export class OtpAlarms extends Grouping {
  /** Every alarm, for the dashboard. */
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: OtpAlarmsProps) {
    super(scope, id);
    const topic = props.alarmTopicArn
      ? sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn)
      : undefined;
    const alarmOn = (
      alarmId: string,
      metric: cloudwatch.IMetric,
      description: string,
      threshold = 0,
    ): void => {
      const alarm = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      if (topic) alarm.addAlarmAction(new SnsAction(topic));
      this.alarms.push(alarm);
    };
    const period = Duration.minutes(5);

    alarmOn(
      'Api5xxAlarm',
      props.api.metricServerError({ period, statistic: cloudwatch.Stats.SUM }),
      'The HTTP API answered 5xx (a handler crashed or timed out, or not_priceable).',
    );
    for (const name of FUNCTION_NAMES) {
      alarmOn(
        `${FUNCTIONS[name].id}ErrorsAlarm`,
        props.functions[name].metricErrors({ period, statistic: cloudwatch.Stats.SUM }),
        `The ${FUNCTIONS[name].id} function threw (see its log group).`,
      );
    }
    // A reservation is a ceiling too (on a function URL, the callbacks' only limit): callbacks beyond it are
    // refused with 429 and the provider retries them later, while their channels wait.
    if (props.receiptReservedConcurrency !== undefined) {
      alarmOn(
        `${FUNCTIONS.receipt.id}ThrottlesAlarm`,
        props.functions.receipt.metricThrottles({ period, statistic: cloudwatch.Stats.SUM }),
        `The ${FUNCTIONS.receipt.id} function was throttled at its reserved concurrency (${props.receiptReservedConcurrency}, otp:receiptReservedConcurrency): receipt callbacks were refused and wait for the provider's retry; raise it if they are not a flood.`,
      );
    }
    // The provider receipt function is invoked asynchronously (SNS): a receipt it fails or is
    // throttled on is retried by Lambda, then kept in the failed-receipt queue to replay (docs/providers.md).
    for (const [name, fn] of Object.entries(props.receiptFunctions ?? {})) {
      const { id } = PROVIDER_FUNCTIONS[name as ProviderFunctionName];
      alarmOn(
        `${id}ErrorsAlarm`,
        fn.metricErrors({ period, statistic: cloudwatch.Stats.SUM }),
        `The ${id} function threw on a provider receipt (see its log group): Lambda retries it twice, then keeps it in the failed-receipt queue.`,
      );
      alarmOn(
        `${id}ThrottlesAlarm`,
        fn.metricThrottles({ period, statistic: cloudwatch.Stats.SUM }),
        `The ${id} function was throttled: provider receipts are delayed, and kept in the failed-receipt queue if they wait over 6 hours.`,
      );
    }
    if (props.failedReceiptQueue) {
      alarmOn(
        'FailedReceiptsAlarm',
        props.failedReceiptQueue.metricApproximateNumberOfMessagesVisible({
          period,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        'Provider receipts failed after their retries and wait in the failed-receipt queue (output FailedReceiptQueueUrl): ' +
          "fix the cause (the receipt functions' log groups), then replay them (docs/providers.md, Failed receipts).",
      );
    }
    alarmOn(
      'WebhookDeadLettersAlarm',
      props.webhookDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period,
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      'Webhook deliveries ran out of retries, or a webhook batch could not be processed (see the dead-letter queue).',
    );
    alarmOn(
      'DeliveryExecutionsFailedAlarm',
      props.stateMachine.metricFailed({ period, statistic: cloudwatch.Stats.SUM }),
      'A delivery workflow execution failed: a task kept failing after its retries.',
    );
    alarmOn(
      'DeliveryExecutionsTimedOutAlarm',
      props.stateMachine.metricTimedOut({ period, statistic: cloudwatch.Stats.SUM }),
      'A delivery workflow execution hit the Express five-minute limit: its delivery may be left PENDING.',
    );

    // Provider errors that fail every send until the operator acts; delivery falls through to the next channel
    // meanwhile, so nothing else would show them (functions/core/delivery.ts counts them).
    if (props.realProviders) {
      alarmOn(
        'SmsSandboxAlarm',
        serviceMetric(
          props.stackName,
          METRIC.providerErrors,
          { code: 'sandbox_destination_not_verified' },
          { period },
        ),
        'AWS refused an SMS with DESTINATION_PHONE_NUMBER_NOT_VERIFIED: the account is in the SMS sandbox (verified ' +
          'numbers only). Request production access (docs/providers.md, section 1).',
      );
      alarmOn(
        'ProviderAccessDeniedAlarm',
        serviceMetric(props.stackName, METRIC.providerErrors, { code: 'access_denied' }, { period }),
        'A provider refused a send as not permitted (AccessDenied, or Vonage 401/403): a grant on the wrong ARN, ' +
          "a revoked key. Every send on that channel falls through to the next. See the deliver function's log group.",
      );
      alarmOn(
        'SmsMaxPriceAlarm',
        serviceMetric(props.stackName, METRIC.providerErrors, { code: 'price_over_threshold' }, { period }),
        'AWS refused an SMS dearer than otp:awsSmsMaxPrice (PRICE_OVER_THRESHOLD): that destination never gets SMS ' +
          'until the cap is raised.',
      );
      alarmOn(
        'SmsSpendLimitAlarm',
        serviceMetric(props.stackName, METRIC.providerErrors, { code: 'monthly_spend_limit' }, { period }),
        "AWS refused an SMS or RCS message: the account's monthly spend limit is reached " +
          '(MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT or _FOR_RCS). Every such send fails until it is raised ' +
          '(End User Messaging SMS console, or a quota request) or the month ends (docs/providers.md, section 1).',
      );
    }

    // A stream consumer that falls behind fails nothing, so no other alarm shows it: IteratorAge is the age of a
    // batch's last record when Lambda read it.
    const lagged = [
      [
        'guardSignals',
        "The pumping guard's consumer reads the table's stream over 5 minutes late: its blocks start that late, and records older than an hour are dropped unread.",
      ],
      [
        'webhookEvents',
        "The webhook events function reads the table's stream over 5 minutes late: every webhook is that late.",
      ],
    ] as const;
    for (const [name, description] of lagged) {
      alarmOn(
        `${FUNCTIONS[name].id}IteratorAgeAlarm`,
        props.functions[name].metric('IteratorAge', { period, statistic: cloudwatch.Stats.MAXIMUM }),
        description,
        Duration.minutes(STREAM_LAG_ALARM_MINUTES).toMilliseconds(),
      );
    }

    // The pumping guard's consumer: a batch it fails is retried, then dropped; its signals are lost, and an
    // aggregate that grew past DynamoDB's item limit would make every later batch of that country fail too.
    alarmOn(
      'GuardBatchFailuresAlarm',
      serviceMetric(props.stackName, METRIC.guardBatchFailures, {}, { period }),
      "The pumping guard's consumer failed a batch (log line guard.batch_failed, with its cause): Lambda retries it, then drops it.",
    );
    alarmOn(
      'GuardBatchesDroppedAlarm',
      props.guardDroppedBatches.metricApproximateNumberOfMessagesVisible({
        period,
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      "The pumping guard's consumer dropped a batch after its retries: its signals are lost (the queue keeps the records' shard and sequence range; docs/guard.md, Consumer health).",
    );
    alarmOn(
      'GuardItemOverBudgetAlarm',
      serviceMetric(props.stackName, METRIC.guardItemsOverBudget, {}, { period }),
      'A pumping guard item passed its 64 KB budget (log line guard.item_over_budget names it); at 400 KB its batches fail.',
    );

    // What the guard saw but refused nothing for: a country's codes checked far less than usual for an hour.
    alarmOn(
      'GuardConversionDropAlarm',
      serviceMetric(props.stackName, METRIC.guardConversionDrops, {}, { period }),
      "A country's codes of the last hour were checked far less than usual (log line guard.conversion_drop names the service and country): a slow pumping attack, or codes not arriving. Nothing was refused.",
    );

    // FAILED deliveries are a business outcome, not an error: the delivery core counts each one where it ends
    // (the deliver and after-wait tasks, and the sweeper's settling), as an EMF metric (functions/core/metrics.ts).
    alarmOn(
      'FailedDeliveriesAlarm',
      serviceMetric(props.stackName, METRIC.deliveriesFailed, {}, { period }),
      'A verification ended with delivery_status FAILED: every channel failed for that number.',
    );
  }
}
