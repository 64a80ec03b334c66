/**
 * The pumping guard's stream consumer (composition root): the table's stream (new verifications, checked codes,
 * sends the guard refused; filtered by the event source) folded into the guard's aggregates and blocks. Off the
 * request path: a send only reads what this writes. A failure throws, so Lambda retries the batch.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { systemClock } from '../adapters/crypto';
import { DynamoGuardStore } from '../adapters/dynamodb/guard';
import { guardEventsFromShard } from '../adapters/guard/stream';
import { lambdaLogger, type Logger } from '../adapters/logger';
import { lambdaMetrics, withMetricsFlushed } from '../adapters/metrics';
import { consumeGuardEvents, type GuardConsumerDeps } from '../core/guard/consumer';
import { METRIC, type Metrics } from '../core/metrics';
import { tableFromEnv } from '../wiring/dynamo';

/**
 * A batch of one shard. With a tumbling window on the event source (lib/constructs/guard-signals.ts) Lambda
 * names the shard (`shardId`) and wants a `state` back; the window is there for the shard's name only.
 */
export type GuardStreamEvent = DynamoDBStreamEvent & { shardId?: string };
export interface GuardStreamResponse {
  state: Record<string, never>;
}

/** The handler over its dependencies (the Lambda below; the local stack's poller, local/guard.ts). */
export function buildGuardSignalsHandler(
  deps: GuardConsumerDeps,
): (event: GuardStreamEvent) => Promise<GuardStreamResponse> {
  return async (event) => {
    // The records' positions let a batch delivered again (a retry, a bisected half) count once.
    await consumeGuardEvents(deps, guardEventsFromShard(event.Records ?? [], event.shardId));
    return { state: {} };
  };
}

/** Tells the owner of an attack when it starts: a metric (alarm on it) and a log line with the figures. */
export const reportBlockStarted =
  (logger: Logger, metrics?: Metrics): GuardConsumerDeps['onBlockStarted'] =>
  (scope, country, block) => {
    metrics?.count(METRIC.guardBlocks, { reason: block.reason, level: block.level });
    logger.log('warn', 'guard.block_started', {
      scope,
      country,
      reason: block.reason,
      prefix: block.prefix,
      level: block.level,
      figures: JSON.stringify(block.figures),
    });
  };

const logger = lambdaLogger();
const metrics = lambdaMetrics();
let consume: ReturnType<typeof buildGuardSignalsHandler> | undefined;

export const handler = async (event: GuardStreamEvent): Promise<GuardStreamResponse> => {
  if (!consume) {
    const { client, tableName } = tableFromEnv(process.env);
    consume = buildGuardSignalsHandler({
      store: new DynamoGuardStore(client, tableName),
      clock: systemClock,
      onBlockStarted: reportBlockStarted(logger, metrics),
    });
  }
  return withMetricsFlushed(metrics, () => consume!(event));
};
