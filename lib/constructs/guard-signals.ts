import { Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { GUARD_SIGNALS_STREAM_FILTERS } from '../../functions/adapters/dynamodb/stream-filters';
import {
  GUARD_BATCH_WINDOW_SECONDS,
  GUARD_TUMBLING_WINDOW_SECONDS,
} from '../../functions/core/guard/consumer';

export interface GuardSignalsProps {
  table: dynamodb.ITable;
  /** The guard's stream consumer (manifest entry `guardSignals`). */
  consumer: lambda.IFunction;
}

/**
 * The pumping guard's signals off the request path: a second consumer of the table's stream (beside the webhook
 * events function), fed only what the guard folds: verifications (new ones, checked ones) and number logs that
 * carry a guard refusal. A failing batch is split and retried; signals are statistics, so a batch that still
 * fails is dropped rather than blocking the shard (nothing is lost but a few counts). A batch delivered again
 * counts once: each aggregate keeps, per shard, the highest sequence number it folded (core/guard/consumer.ts).
 * That needs the shard's records in order, one batch at a time (parallelization factor 1, the default).
 * A dropped batch is not silent: Lambda records its shard and sequence range in `droppedBatches`, which has an
 * alarm (lib/constructs/alarms.ts).
 */
export class GuardSignals extends Construct {
  /** Where the event source reports the batches it dropped after its retries (their records' positions). */
  readonly droppedBatches: sqs.Queue;

  constructor(scope: Construct, id: string, props: GuardSignalsProps) {
    super(scope, id);
    const dropped = (this.droppedBatches = new sqs.Queue(this, 'GuardDroppedBatches', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    }));
    Validations.of(dropped).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is the end of the line: the guard consumer's on-failure destination (the stream event " +
        "source's), which cdk-nag does not count as a dead-letter queue. Only an operator reads it.",
    });
    props.consumer.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: lambda.StartingPosition.LATEST,
        batchSize: 500,
        // A window of sends folded in one batch: the aggregates are written once per batch (docs/guard.md).
        maxBatchingWindow: Duration.seconds(GUARD_BATCH_WINDOW_SECONDS),
        bisectBatchOnError: true,
        retryAttempts: 3,
        onFailure: new SqsDlq(dropped),
        maxRecordAge: Duration.hours(1),
        // Lambda names the batch's shard (`shardId`), which a plain stream event does not: the consumer's
        // per-shard marks need it. The window's state carries the events whose aggregates wait (docs/guard.md).
        tumblingWindow: Duration.seconds(GUARD_TUMBLING_WINDOW_SECONDS),
        // Verifications and refusals (functions/adapters/dynamodb/stream-filters.ts); the local stack's poller
        // applies the same patterns.
        filters: GUARD_SIGNALS_STREAM_FILTERS.map((pattern) => lambda.FilterCriteria.filter(pattern)),
      }),
    );
    Validations.of(props.consumer.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray (xray:PutTraceSegments, xray:PutTelemetryRecords) and dynamodb:ListStreams, which the DynamoDB ' +
        'event source needs and which has no resource-level permissions; reading the stream is on its ARN only.',
    });
  }
}
