/** The receipt function's composition root: the table and the carrier key (receipt signatures). */
import { buildReceiptHandler } from '../http/api';
import { buildDeps } from '../wiring/deps';
import { apiEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';

export const handler = apiEntry(async () =>
  buildReceiptHandler(buildDeps(process.env, await loadKeyRing(process.env))),
);
