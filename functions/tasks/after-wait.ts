/** The after-wait task's composition root: the table, the code-seal and carrier keys. */
import { afterWaitOrSettle } from '../core/delivery';
import { buildDeps } from '../wiring/deps';
import { taskEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';

/** AfterWait after a receipt wait, and (input `settle: true`) the settling step of the state machine's Catch. */
export const handler = taskEntry(
  async () => buildDeps(process.env, await loadKeyRing(process.env)),
  afterWaitOrSettle,
);
