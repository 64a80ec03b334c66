/**
 * The deliver task's composition root: the table, the code-seal and carrier keys, the providers' senders. The
 * same function answers the post-deploy check event (`npm run admin -- providers check`), so that the check runs
 * under this function's own role and settings. Only the state machine and an operator allowed to invoke the
 * function reach it (no API route does); a check event carries no code and sends nothing.
 */
import type { Context } from 'aws-lambda';
import { deferredKeyRing } from '../adapters/keyring';
import { deliverOverChannel, type DeliveryTaskInput } from '../core/delivery';
import { buildDeps } from '../wiring/deps';
import { coldStart, observed, taskEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { isProviderCheckEvent, runProviderCheckFromEnv } from '../wiring/provider-check';
import { vonageCredentialsFromEnv } from '../wiring/provider-secrets';
import { awsSendersFromEnv } from '../wiring/provider-senders';
import { providersFromEnv } from '../wiring/providers';

const senders = coldStart(() =>
  Promise.resolve({
    aws: awsSendersFromEnv(process.env),
    vonageCredentials: vonageCredentialsFromEnv(process.env),
  }),
);

const deliver = taskEntry(async () => {
  // The key secrets are read beside the task's first read (core/delivery.ts), not before it.
  const keys = deferredKeyRing(() => loadKeyRing(process.env));
  return {
    ...buildDeps(process.env, keys),
    providers: providersFromEnv(process.env, keys, await senders()),
  };
}, deliverOverChannel);

export const handler = (event: DeliveryTaskInput, context?: Context) =>
  isProviderCheckEvent(event)
    ? // No key is read and no table touched: only the providers' settings and their clients.
      observed(context, async () =>
        runProviderCheckFromEnv(process.env, await senders(), event, () =>
          context ? context.getRemainingTimeInMillis() : 30_000,
        ),
      )
    : deliver(event, context);
