/**
 * The sweeper's composition root: the table and the delivery workflow, no key. Runs every minute (EventBridge
 * schedule): the drain of the pending-delivery outbox.
 */
import type { Context } from 'aws-lambda';
import { groupKeyRing } from '../adapters/keyring';
import { restartStalledDeliveries, settleOverdueDeliveries } from '../core/sweeper';
import { buildDeps } from '../wiring/deps';
import { coldStart, logSettled, observed } from '../wiring/entries';
import { workflowFromEnv } from '../wiring/workflow';

const deps = coldStart(() =>
  Promise.resolve({ ...buildDeps(process.env, groupKeyRing({})), workflow: workflowFromEnv(process.env) }),
);

/**
 * Restarts deliveries whose workflow did not start, and settles those claimed but never ended by their deadline.
 * Each half runs even when the other fails; the run then fails (the function's error alarm) with both errors.
 */
export const handler = async (
  _event?: unknown,
  context?: Context,
): Promise<{ restarted: number; settled: number }> => observed(context, () => sweep());

const sweep = async (): Promise<{ restarted: number; settled: number }> => {
  const resolved = await deps();
  const [restarted, settled] = await Promise.allSettled([
    restartStalledDeliveries(resolved),
    settleOverdueDeliveries(resolved),
  ]);
  if (restarted.status === 'fulfilled' && restarted.value.length > 0) {
    resolved.logger.log('warn', 'sweeper.restarted', { count: restarted.value.length });
  }
  if (settled.status === 'fulfilled') logSettled(resolved.logger, settled.value);
  const failures = [restarted, settled].flatMap((result) =>
    result.status === 'rejected' ? [result.reason as unknown] : [],
  );
  if (failures.length > 0) throw new AggregateError(failures, 'sweeper run failed');
  return {
    restarted: restarted.status === 'fulfilled' ? restarted.value.length : 0,
    settled: settled.status === 'fulfilled' ? settled.value.length : 0,
  };
};
