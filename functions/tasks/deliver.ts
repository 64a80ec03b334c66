/** The deliver task's composition root: the table, the code-seal and carrier keys. */
import { deliverOverChannel } from '../core/delivery';
import { buildDeps } from '../wiring/deps';
import { taskEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';

export const handler = taskEntry(
  async () => buildDeps(process.env, await loadKeyRing(process.env)),
  deliverOverChannel,
);
