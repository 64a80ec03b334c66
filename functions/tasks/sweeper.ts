import { sweeperEntry } from '../runtime';

/** Runs every minute (EventBridge schedule): the drain of the pending-delivery outbox. */
export const handler = sweeperEntry();
