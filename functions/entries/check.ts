/**
 * The check function's composition root: the table and the code-hash key; it starts no workflow and holds no
 * provider, and its bundle only the check endpoint (no send path, no number parsing).
 */
import { buildCheckHandler } from '../http/api';
import { tableFromEnv } from '../wiring/dynamo';
import { apiEntry } from '../wiring/entries';
import { deferredKeyRing } from '../adapters/keyring';
import { loadKeyRing } from '../wiring/keys';
import { buildStoreDeps } from '../wiring/store-deps';

// The code-hash key secret is read beside the first check's key write, not before it (core/check.ts).
export const handler = apiEntry(async () =>
  buildCheckHandler(
    buildStoreDeps(
      process.env,
      deferredKeyRing(() => loadKeyRing(process.env)),
      tableFromEnv(process.env),
    ),
  ),
);
