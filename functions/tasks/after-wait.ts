/**
 * The after-wait task's composition root: the table only. It reads the record and moves on to the next channel
 * (the deliver task sends) or ends the delivery, as the sweeper settles one: no code is opened and no provider
 * called, so it holds no key (a ring of none throws if one is ever asked for) and reads no key secret.
 */
import { groupKeyRing } from '../adapters/keyring';
import { afterWaitOrSettle } from '../core/delivery';
import { buildDeps } from '../wiring/deps';
import { taskEntry } from '../wiring/entries';

/** AfterWait after a receipt wait, and (input `settle: true`) the settling step of the state machine's Catch. */
export const handler = taskEntry(
  () => Promise.resolve(buildDeps(process.env, groupKeyRing({}))),
  afterWaitOrSettle,
);
