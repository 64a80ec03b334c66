/**
 * The pumping guard's stream consumer (composition root): the table's stream (new verifications, checked codes,
 * sends the guard refused; filtered by the event source) folded into the guard's aggregates and blocks. Off the
 * request path: a send only reads what this writes. A failure throws, so Lambda retries the batch; a batch
 * delivered again counts once (the records' positions: the event source's tumbling window names the shard).
 */
import type { Context } from 'aws-lambda';
import { systemClock } from '../adapters/crypto';
import { DynamoGuardStore } from '../adapters/dynamodb/guard';
import {
  handleGuardStream,
  reportBlockStarted,
  reportConversionDrop,
  reportOverBudget,
  type GuardStreamEvent,
  type GuardStreamResponse,
} from '../adapters/guard/stream';
import { lambdaLogger } from '../adapters/logger';
import { lambdaMetrics } from '../adapters/metrics';
import type { GuardConsumerDeps } from '../core/guard/consumer';
import { tableFromEnv } from '../wiring/dynamo';
import { coldStart, observed } from '../wiring/entries';

const logger = lambdaLogger();
// The container's one EMF writer: `observed` flushes it after each batch.
const metrics = lambdaMetrics();
const deps = coldStart((): Promise<GuardConsumerDeps> => {
  const { client, tableName } = tableFromEnv(process.env);
  return Promise.resolve({
    store: new DynamoGuardStore(client, tableName, { onOverBudget: reportOverBudget(logger, metrics) }),
    clock: systemClock,
    onBlockStarted: reportBlockStarted(logger, metrics),
    onConversionDrop: reportConversionDrop(logger, metrics),
  });
});
// Once per container: every batch of a misconfigured event source would say the same.
let toldNoShard = false;

export const handler = (event: GuardStreamEvent, context?: Context): Promise<GuardStreamResponse> =>
  observed(context, async () => {
    if (!event.shardId && (event.Records ?? []).length > 0 && !toldNoShard) {
      // The event source lost its tumbling window: a batch delivered again would count twice.
      logger.log('warn', 'guard.stream_shard_unknown', { records: event.Records.length });
      toldNoShard = true;
    }
    return handleGuardStream(await deps(), event, { metrics, logger });
  });
