/**
 * The check function's composition root: the table and the code-hash key; it starts no workflow and holds no
 * provider, and its bundle only the check endpoint (no send path, no number parsing).
 */
import { buildCheckHandler } from '../http/api';
import { tableFromEnv } from '../wiring/dynamo';
import { apiEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { buildStoreDeps } from '../wiring/store-deps';

export const handler = apiEntry(async () =>
  buildCheckHandler(buildStoreDeps(process.env, await loadKeyRing(process.env), tableFromEnv(process.env))),
);
