/**
 * The sweeper's composition root: the table and the delivery workflow, no key. Runs every minute (EventBridge
 * schedule): the drain of the ledger, which every accepted send writes (the outbox).
 */
import type { Context } from 'aws-lambda';
import { groupKeyRing } from '../adapters/keyring';
import { sweepDeliveries } from '../core/sweeper';
import { tableFromEnv } from '../wiring/dynamo';
import { coldStart, logSettled, observed } from '../wiring/entries';
import { NO_PROVIDERS, buildStoreDeps } from '../wiring/store-deps';
import { workflowFromEnv } from '../wiring/workflow';

const deps = coldStart(() =>
  Promise.resolve({
    // Settling needs neither a key nor a provider (core/delivery.ts finish); restarting starts the workflow.
    ...buildStoreDeps(process.env, groupKeyRing({}), tableFromEnv(process.env)),
    providers: NO_PROVIDERS,
    workflow: workflowFromEnv(process.env),
  }),
);

/**
 * Restarts deliveries whose workflow did not start, and settles those claimed but never ended by their deadline,
 * walking the ledger from its cursor (core/sweeper.ts). Each delivery is tried even when another fails; the run then
 * fails (the function's error alarm) with their errors.
 */
export const handler = async (
  _event?: unknown,
  context?: Context,
): Promise<{ restarted: number; settled: number }> => observed(context, () => sweep());

const sweep = async (): Promise<{ restarted: number; settled: number }> => {
  const resolved = await deps();
  const { restarted, settled, failures, read, dropped } = await sweepDeliveries(resolved);
  if (restarted.length > 0) resolved.logger.log('warn', 'sweeper.restarted', { count: restarted.length });
  if (dropped > 0) resolved.logger.log('warn', 'sweeper.deferred_dropped', { count: dropped });
  logSettled(resolved.logger, settled);
  if (failures.length > 0) {
    throw new AggregateError(failures, `sweeper run failed: ${failures.length} of ${read} deliveries`);
  }
  return { restarted: restarted.length, settled: settled.length };
};
