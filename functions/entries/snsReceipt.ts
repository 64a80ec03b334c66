/** The SNS receipt function's composition root: the table only (no key, no provider SDK). */
import type { Context, SNSEvent } from 'aws-lambda';
import { groupKeyRing } from '../adapters/keyring';
import { buildDeps } from '../wiring/deps';
import { coldStart, observed } from '../wiring/entries';
import { buildSnsReceiptHandler } from '../receipts/handlers';

const handle = coldStart(async () => buildSnsReceiptHandler(buildDeps(process.env, groupKeyRing({}))));

export const handler = (event: SNSEvent, context?: Context) =>
  observed(context, async () => (await handle())(event));
