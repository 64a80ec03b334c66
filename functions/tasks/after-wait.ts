import { afterWaitOrSettle } from '../core/delivery';
import { taskEntry } from '../runtime';

/** AfterWait after a receipt wait, and (input `settle: true`) the settling step of the state machine's Catch. */
export const handler = taskEntry(afterWaitOrSettle);
