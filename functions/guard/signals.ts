/**
 * The pumping guard's stream consumer (composition root): the table's stream (new verifications, checked codes,
 * sends the guard refused; filtered by the event source) folded into the guard's aggregates and blocks. Off the
 * request path: a send only reads what this writes. A failure throws, so Lambda retries the batch.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { systemClock } from '../adapters/crypto';
import { DynamoGuardStore } from '../adapters/dynamodb/guard';
import { guardEventsFromStream } from '../adapters/guard/stream';
import { lambdaLogger } from '../adapters/logger';
import { lambdaMetrics, withMetricsFlushed } from '../adapters/metrics';
import { consumeGuardEvents, type GuardConsumerDeps } from '../core/guard/consumer';
import { METRIC } from '../core/metrics';
import { tableFromEnv } from '../wiring/dynamo';

const logger = lambdaLogger();
const metrics = lambdaMetrics();
let deps: GuardConsumerDeps | undefined;

export const handler = async (event: DynamoDBStreamEvent): Promise<void> => {
  if (!deps) {
    const { client, tableName } = tableFromEnv(process.env);
    deps = {
      store: new DynamoGuardStore(client, tableName),
      clock: systemClock,
      // The owner learns of an attack when it starts: a metric (alarm on it) and a log line with the figures.
      onBlockStarted: (scope, country, block) => {
        metrics.count(METRIC.guardBlocks, { reason: block.reason, level: block.level });
        logger.log('warn', 'guard.block_started', {
          scope,
          country,
          reason: block.reason,
          prefix: block.prefix,
          level: block.level,
          figures: JSON.stringify(block.figures),
        });
      },
    };
  }
  await withMetricsFlushed(metrics, () => consumeGuardEvents(deps!, guardEventsFromStream(event.Records)));
};
