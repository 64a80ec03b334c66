/** What the webhook sender is built from; shared by its Lambda root and the local stack. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { EndpointPauses, webhookSettingsFromEnv, type WebhookSenderDeps } from '../core/webhooks';
import { systemClock } from '../adapters/crypto';
import { DynamoStore } from '../adapters/dynamodb/store';
import { DynamoWebhookDeliveries, DynamoWebhookEndpoints } from '../adapters/dynamodb/webhooks';
import type { Logger } from '../adapters/logger';
import type { KeySource } from '../adapters/keyring';
import { HttpWebhookTransport } from '../adapters/webhooks/http-transport';
import { EndpointSigner, WebhookSecretVault } from '../adapters/webhooks/secrets';
import { SqsWebhookQueue } from '../adapters/webhooks/sqs-queue';
import { tableFromEnv } from './dynamo';
import { required, type Env } from './env';

/**
 * Everything the webhook sender needs: endpoints, the sealed secrets' key, the queue, the store for expiry, the
 * delivery records.
 */
export function buildWebhookSenderDeps(
  env: Env,
  keys: KeySource,
  /** A DynamoDB client built elsewhere (tests: one that enforces the function's IAM grants). */
  dynamoClient?: DynamoDBDocumentClient,
  /** Where a failed write of a delivery record is reported (the delivery goes on). */
  logger?: Logger,
): WebhookSenderDeps {
  const { client, tableName } = tableFromEnv(env, dynamoClient);
  const settings = webhookSettingsFromEnv(env);
  return {
    endpoints: new DynamoWebhookEndpoints(client, tableName),
    signer: new EndpointSigner(new WebhookSecretVault(keys)),
    transport: new HttpWebhookTransport({ allowPrivateTargets: settings.allowPrivateTargets }),
    queue: new SqsWebhookQueue(
      required(env, 'WEBHOOK_QUEUE_URL'),
      required(env, 'WEBHOOK_DEAD_LETTER_QUEUE_URL'),
    ),
    store: new DynamoStore(client, tableName),
    clock: systemClock,
    settings,
    deliveries: new DynamoWebhookDeliveries(client, tableName, logger),
    // Built once per instance (the entry's cold start), so it remembers endpoints across batches.
    pauses: new EndpointPauses(),
  };
}
