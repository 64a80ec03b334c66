/** The send function's composition root: the table, the code-hash and code-seal keys, the delivery workflow. */
import { buildSendHandler } from '../http/api';
import { buildDeps } from '../wiring/deps';
import { apiEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { workflowFromEnv } from '../wiring/workflow';

export const handler = apiEntry(async () => {
  const env = process.env;
  const deps = buildDeps(env, await loadKeyRing(env));
  return buildSendHandler({ ...deps, workflow: workflowFromEnv(env) });
});
