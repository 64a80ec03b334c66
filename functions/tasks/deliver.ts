/** The deliver task's composition root: the table, the code-seal and carrier keys, the providers' senders. */
import { deferredKeyRing } from '../adapters/keyring';
import { deliverOverChannel } from '../core/delivery';
import { buildDeps } from '../wiring/deps';
import { taskEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { vonageCredentialsFromEnv } from '../wiring/provider-secrets';
import { awsSendersFromEnv } from '../wiring/provider-senders';
import { providersFromEnv } from '../wiring/providers';

export const handler = taskEntry(async () => {
  // The key secrets are read beside the task's first read (core/delivery.ts), not before it.
  const keys = deferredKeyRing(() => loadKeyRing(process.env));
  return {
    ...buildDeps(process.env, keys),
    providers: providersFromEnv(process.env, keys, {
      aws: awsSendersFromEnv(process.env),
      vonageCredentials: vonageCredentialsFromEnv(process.env),
    }),
  };
}, deliverOverChannel);
