/**
 * The send function's composition root: the table, the code-hash and code-seal keys, the delivery workflow, the
 * deployment's channels. No provider registry: a send plans channels and starts the workflow; the deliver task
 * calls the providers.
 */
import { buildSendHandler } from '../http/api';
import { deployableChannels } from '../wiring/channels';
import { tableFromEnv } from '../wiring/dynamo';
import { apiEntry } from '../wiring/entries';
import { deferredKeyRing } from '../adapters/keyring';
import { loadKeyRing } from '../wiring/keys';
import { buildStoreDeps } from '../wiring/store-deps';
import { workflowFromEnv } from '../wiring/workflow';

export const handler = apiEntry(async () => {
  const env = process.env;
  // The key secrets are read beside the first request's authentication and reads, not before them.
  const deps = buildStoreDeps(
    env,
    deferredKeyRing(() => loadKeyRing(env)),
    tableFromEnv(env),
  );
  return buildSendHandler({
    ...deps,
    allowedChannels: deployableChannels(env),
    workflow: workflowFromEnv(env),
  });
});
