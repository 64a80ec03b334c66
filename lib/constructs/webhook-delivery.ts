import { Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { WEBHOOK_EVENTS_STREAM_FILTERS } from '../../functions/adapters/dynamodb/stream-filters';
import { FUNCTIONS, FUNCTION_NAMES, type FunctionName, type WebhookQueueName } from '../functions';
import { Grouping } from './logical-ids';

/** A message the sender kept failing on (not a failed delivery: those are retried by schedule) moves to the DLQ. */
const WEBHOOK_MAX_RECEIVES = 5;

/** The environment variable that gives a function the URL of each webhook queue it sends to. */
const QUEUE_URL_ENV: Record<WebhookQueueName, string> = {
  webhookQueue: 'WEBHOOK_QUEUE_URL',
  webhookDeadLetterQueue: 'WEBHOOK_DEAD_LETTER_QUEUE_URL',
};

export interface WebhookDeliveryProps {
  /** The table whose stream is the events' outbox. */
  table: dynamodb.ITable;
  functions: Record<FunctionName, NodejsFunction>;
  /** The most sender instances the queue runs at once (`otp:webhookSenderMaxConcurrency`). */
  senderMaxConcurrency: number;
}

/**
 * Webhooks: the table's stream feeds the events function (verification items only, filtered before any
 * invocation), which queues one job per event and endpoint; the sender consumes the queue. Retries are new
 * messages delayed by the schedule (docs/webhooks.md), so the queue's own redrive only catches jobs the
 * sender kept failing on; both end in the dead-letter queue, which has an alarm.
 */
export class WebhookDelivery extends Grouping {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;

  constructor(scope: Construct, id: string, props: WebhookDeliveryProps) {
    super(scope, id);
    const { webhookEvents, webhookSender } = props.functions;
    const deadLetters = (this.deadLetterQueue = new sqs.Queue(this, 'WebhookDeadLetterQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    }));
    const queue = (this.queue = new sqs.Queue(this, 'WebhookQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Six times the sender's timeout, as Lambda advises for SQS event sources.
      visibilityTimeout: Duration.seconds(FUNCTIONS.webhookSender.timeoutSeconds * 6),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: WEBHOOK_MAX_RECEIVES },
    }));

    webhookEvents.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        // A failing batch is split to isolate the bad record, retried, then reported to the dead-letter queue.
        bisectBatchOnError: true,
        retryAttempts: 10,
        onFailure: new SqsDlq(deadLetters),
        // Only the records that can make events (functions/adapters/dynamodb/stream-filters.ts); the local
        // stack's poller applies the same patterns.
        filters: WEBHOOK_EVENTS_STREAM_FILTERS.map((pattern) => lambda.FilterCriteria.filter(pattern)),
      }),
    );
    Validations.of(webhookEvents.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray (xray:PutTraceSegments, xray:PutTelemetryRecords) and dynamodb:ListStreams, which the DynamoDB ' +
        'event source needs and which has no resource-level permissions; reading the stream is on its ARN only.',
    });

    // A ceiling on the sender's instances: endpoints that never answer hold each one for the request's time limit,
    // and one service's dead endpoints must delay webhooks, not take the account's concurrency from the sends.
    webhookSender.addEventSource(
      new SqsEventSource(queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: props.senderMaxConcurrency,
      }),
    );
    // The sender re-queues its own retries, and the 15-minute hops of longer waits, to the queue it consumes:
    // Lambda's recursive loop detection (default Terminate) would stop one failing job's chain at about the 17th
    // invocation, some 3 hours in, before attempts 8 and 9. The loop is intended and bounded by the job: at most
    // 9 attempts and 128 invocations over about 30 hours (docs/webhooks.md, "Retries and Lambda's loop detection").
    (webhookSender.node.defaultChild as lambda.CfnFunction).recursiveLoop = lambda.RecursiveLoop.ALLOW;

    // The queues each function sends to, from its manifest entry: the events function queues jobs; the sender
    // re-enqueues retries and moves deliveries whose retries ran out to the dead-letter queue.
    const queues: Record<WebhookQueueName, sqs.Queue> = {
      webhookQueue: queue,
      webhookDeadLetterQueue: deadLetters,
    };
    for (const name of FUNCTION_NAMES) {
      const sendsTo = FUNCTIONS[name].sendsTo ?? [];
      if (sendsTo.length === 0) continue;
      for (const target of sendsTo)
        props.functions[name].addEnvironment(QUEUE_URL_ENV[target], queues[target].queueUrl);
      props.functions[name].addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['sqs:SendMessage'],
          resources: sendsTo.map((target) => queues[target].queueArn),
        }),
      );
    }
  }
}
