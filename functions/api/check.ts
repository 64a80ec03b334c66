/** The check function's composition root: the table and the code-hash key; it starts no workflow. */
import { buildApi } from '../http/api';
import { NO_WORKFLOW, buildDeps } from '../wiring/deps';
import { apiEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';

export const handler = apiEntry(async () => {
  const deps = buildDeps(process.env, await loadKeyRing(process.env));
  return buildApi({ ...deps, workflow: NO_WORKFLOW }).check;
});
