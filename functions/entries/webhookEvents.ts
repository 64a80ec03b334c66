/**
 * The webhook events function's composition root: the table (endpoints) and the webhook queue. It signs
 * nothing, so it has no key (and no permission to read any key secret). The table's DynamoDB stream
 * (verification items only, by the event source's filter) to webhook jobs.
 */
import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { systemClock } from '../adapters/crypto';
import { DynamoWebhookEndpoints } from '../adapters/dynamodb/webhooks';
import { lambdaLogger } from '../adapters/logger';
import { SqsWebhookQueue } from '../adapters/webhooks/sqs-queue';
import { handleVerificationStream } from '../adapters/webhooks/stream';
import type { WebhookEventsDeps } from '../core/webhooks';
import { tableFromEnv } from '../wiring/dynamo';
import { coldStart, observed } from '../wiring/entries';
import { required } from '../wiring/env';

const logger = lambdaLogger();
const deps = coldStart((): Promise<WebhookEventsDeps> => {
  const { client, tableName } = tableFromEnv(process.env);
  return Promise.resolve({
    endpoints: new DynamoWebhookEndpoints(client, tableName),
    queue: new SqsWebhookQueue(required(process.env, 'WEBHOOK_QUEUE_URL'), undefined),
    clock: systemClock,
  });
});

export const handler = (event: DynamoDBStreamEvent, context?: Context): Promise<void> =>
  observed(context, async () => {
    const published = await handleVerificationStream(await deps(), event);
    if (published.jobs > 0) logger.log('info', 'webhook.published', { ...published });
  });
