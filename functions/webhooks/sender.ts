/**
 * The webhook sender's composition root: the table, the webhook key, both webhook queues. Webhook jobs from
 * the SQS queue: sign and POST each event, retry on the schedule, expire codes on time.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { jsonLogger } from '../adapters/logger';
import { handleWebhookQueueBatch } from '../adapters/webhooks/sqs-queue';
import { coldStart } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { buildWebhookSenderDeps } from '../wiring/webhook-sender';

const logger = jsonLogger();
const sender = coldStart(async () => buildWebhookSenderDeps(process.env, await loadKeyRing(process.env)));

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> =>
  handleWebhookQueueBatch(await sender(), event, logger);
