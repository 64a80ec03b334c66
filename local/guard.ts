/**
 * The pumping guard's stream consumer on the local stack: the same handler as the GuardSignals Lambda
 * (functions/entries/guardSignals.ts, handleGuardStream) fed by DynamoDB Local's change stream of the table (StreamPoller), as Lambda's
 * event source feeds it on AWS (about a second after a send: its batching window). Without it only the
 * high-risk list acts locally; with it the rules block as they do on AWS.
 */
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { DynamoGuardStore } from '../functions/adapters/dynamodb/guard';
import { GUARD_SIGNALS_STREAM_FILTERS } from '../functions/adapters/dynamodb/stream-filters';
import type { Logger } from '../functions/adapters/logger';
import type { Metrics } from '../functions/core/metrics';
import type { Clock } from '../functions/core/ports';
import {
  handleGuardStream,
  reportBlockStarted,
  reportConversionDrop,
  reportOverBudget,
} from '../functions/adapters/guard/stream';
import { StreamPoller } from './stream-poller';

export interface LocalGuardOptions {
  dynamoEndpoint: string;
  tableName: string;
  clock: Clock;
  logger: Logger;
  /** The consumer's metrics (blocks, caps reached, its own health); none by default. */
  metrics?: Metrics;
  /** Pause between reads of the stream; default 1 s (the Lambda event source's batching window). */
  intervalMs?: number;
}

export interface LocalGuard {
  close(): Promise<void>;
}

/** `OTP_GUARD_CONSUMER=off` leaves the local stack without the consumer (only the high-risk list acts). */
export const guardConsumerFromEnv = (env: Record<string, string | undefined>): boolean =>
  env.OTP_GUARD_CONSUMER !== 'off';

export async function startLocalGuard(options: LocalGuardOptions): Promise<LocalGuard> {
  // Its own client, as its own Lambda has: the service's client (and the tests' fault injection) stays apart.
  const client = createDocumentClient({ endpoint: options.dynamoEndpoint });
  const deps = {
    store: new DynamoGuardStore(client, options.tableName, {
      onOverBudget: reportOverBudget(options.logger, options.metrics),
    }),
    clock: options.clock,
    onBlockStarted: reportBlockStarted(options.logger, options.metrics),
    onConversionDrop: reportConversionDrop(options.logger, options.metrics),
  };
  const poller = new StreamPoller({
    endpoint: options.dynamoEndpoint,
    tableName: options.tableName,
    logger: options.logger,
    intervalMs: options.intervalMs ?? 1000,
    batching: true,
    // As the event source on AWS: verifications and refusals only.
    filters: GUARD_SIGNALS_STREAM_FILTERS,
    handle: (event, shardId) =>
      handleGuardStream(deps, { ...event, shardId }, { logger: options.logger, metrics: options.metrics }),
  });
  await poller.start();
  return {
    close: async () => {
      await poller.stop();
      client.destroy();
    },
  };
}
