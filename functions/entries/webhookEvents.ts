/**
 * The webhook events function's composition root: the table (endpoints) and the webhook queue. It signs
 * nothing, so it has no key (and no permission to read any key secret). The table's DynamoDB stream
 * (verification items only, by the event source's filter) to webhook jobs.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type { WebhookEventsDeps } from '../core/webhooks';
import { systemClock } from '../adapters/crypto';
import { DynamoWebhookEndpoints } from '../adapters/dynamodb/webhooks';
import { lambdaLogger } from '../adapters/logger';
import { SqsWebhookQueue } from '../adapters/webhooks/sqs-queue';
import { handleVerificationStream } from '../adapters/webhooks/stream';
import { tableFromEnv } from '../wiring/dynamo';
import { required } from '../wiring/env';

const logger = lambdaLogger();
let events: WebhookEventsDeps | undefined;

export const handler = async (event: DynamoDBStreamEvent): Promise<void> => {
  if (!events) {
    const { client, tableName } = tableFromEnv(process.env);
    events = {
      endpoints: new DynamoWebhookEndpoints(client, tableName),
      queue: new SqsWebhookQueue(required(process.env, 'WEBHOOK_QUEUE_URL'), undefined),
      clock: systemClock,
    };
  }
  const published = await handleVerificationStream(events, event);
  if (published.jobs > 0) logger.log('info', 'webhook.published', { ...published });
};
