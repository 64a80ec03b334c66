/**
 * The webhook sender's composition root: the table, the webhook key, both webhook queues. Webhook jobs from
 * the SQS queue: sign and POST each event, retry on the schedule, expire codes on time.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { lambdaLogger } from '../adapters/logger';
import { lambdaMetrics } from '../adapters/metrics';
import { handleWebhookQueueBatch } from '../adapters/webhooks/sqs-queue';
import { coldStart, observed } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { buildWebhookSenderDeps } from '../wiring/webhook-sender';

const logger = lambdaLogger();
const sender = coldStart(async () =>
  buildWebhookSenderDeps(process.env, await loadKeyRing(process.env), undefined, logger),
);

export const handler = async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> =>
  observed(context, async () => handleWebhookQueueBatch(await sender(), event, logger, lambdaMetrics()));
