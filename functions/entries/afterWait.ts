/**
 * The after-wait task's composition root: the table only. It reads the record and moves on to the next channel
 * (the deliver task sends) or ends the delivery, as the sweeper settles one: no code is opened and no provider
 * called, so it holds no key (a ring of none throws if one is ever asked for), reads no key secret and builds no
 * provider.
 */
import { groupKeyRing } from '../adapters/keyring';
import { afterWaitOrSettle } from '../core/delivery';
import { tableFromEnv } from '../wiring/dynamo';
import { taskEntry } from '../wiring/entries';
import { NO_PROVIDERS, buildStoreDeps } from '../wiring/store-deps';

/** AfterWait after a receipt wait, and (input `settle: true`) the settling step of the state machine's Catch. */
export const handler = taskEntry(
  () =>
    Promise.resolve({
      ...buildStoreDeps(process.env, groupKeyRing({}), tableFromEnv(process.env)),
      providers: NO_PROVIDERS,
    }),
  afterWaitOrSettle,
);
