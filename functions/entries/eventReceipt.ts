/** The EventBridge receipt function's composition root: the table only (no key, no provider SDK). */
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { groupKeyRing } from '../adapters/keyring';
import { buildDeps } from '../wiring/deps';
import { coldStart, observed } from '../wiring/entries';
import { buildEventBridgeReceiptHandler } from '../receipts/handlers';

const handle = coldStart(async () =>
  buildEventBridgeReceiptHandler(buildDeps(process.env, groupKeyRing({}))),
);

export const handler = (event: EventBridgeEvent<string, unknown>, context?: Context) =>
  observed(context, async () => (await handle())(event));
