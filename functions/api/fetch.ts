/** The fetch function's composition root: the table alone (it reads a record and shows it: no key, no workflow). */
import { groupKeyRing } from '../adapters/keyring';
import { buildApi } from '../http/api';
import { NO_WORKFLOW, buildDeps } from '../wiring/deps';
import { apiEntry } from '../wiring/entries';

export const handler = apiEntry(async () => {
  const deps = buildDeps(process.env, groupKeyRing({}));
  return buildApi({ ...deps, workflow: NO_WORKFLOW }).fetch;
});
