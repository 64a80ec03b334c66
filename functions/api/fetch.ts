/**
 * The fetch function's composition root: the table alone (it reads a record and shows it: no key, no workflow,
 * no provider), and its bundle only the fetch endpoint.
 */
import { groupKeyRing } from '../adapters/keyring';
import { buildFetchHandler } from '../http/api';
import { tableFromEnv } from '../wiring/dynamo';
import { apiEntry } from '../wiring/entries';
import { buildStoreDeps } from '../wiring/store-deps';

export const handler = apiEntry(async () =>
  buildFetchHandler(buildStoreDeps(process.env, groupKeyRing({}), tableFromEnv(process.env))),
);
