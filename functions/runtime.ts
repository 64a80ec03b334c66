/**
 * The composition root of the Lambda functions: reads the environment once, fails fast on a bad setting,
 * and builds the adapters at cold start. Local stack and tests wire the same handlers themselves.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { DeliveryDeps, DeliveryTaskInput, DeliveryTaskOutput } from './core/delivery';
import type { UnsettledDeliveryStore } from './core/ports';
import { CHANNELS, isChannel, type Channel } from './core/routing';
import { settingsFromEnv } from './core/settings';
import { restartStalledDeliveries, settleOverdueDeliveries } from './core/sweeper';
import { webhookSettingsFromEnv, type WebhookEventsDeps, type WebhookSenderDeps } from './core/webhooks';
import { CryptoCodeVault, cryptoRandom, systemClock } from './adapters/crypto';
import { createDocumentClient } from './adapters/dynamodb/client';
import { DynamoStore } from './adapters/dynamodb/store';
import { DynamoWebhookEndpoints } from './adapters/dynamodb/webhooks';
import {
  KEY_GROUPS,
  KEY_GROUP_NAMES,
  groupKeyRing,
  keySecretRoot,
  masterKeyRing,
  toKeyRing,
  type KeyGroup,
  type KeyRing,
  type KeySource,
} from './adapters/keyring';
import { jsonLogger, type Logger } from './adapters/logger';
import { HttpCarrierProvider, singleProviderRegistry } from './adapters/providers/http-carrier';
import { StepFunctionsWorkflow } from './adapters/sfn-workflow';
import { HttpWebhookTransport } from './adapters/webhooks/http-transport';
import { EndpointSigner, WebhookSecretVault } from './adapters/webhooks/secrets';
import { SqsWebhookQueue, handleWebhookQueueBatch } from './adapters/webhooks/sqs-queue';
import { handleVerificationStream } from './adapters/webhooks/stream';
import type { ApiDeps, ApiHandler } from './http/api';
import type { ApiContext, ApiEvent } from './http/middleware';

type Env = Readonly<Record<string, string | undefined>>;

function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`Missing environment variable ${name}`);
  return value;
}

/**
 * This function's keys. On AWS: the key secrets its environment names (`KEY_GROUPS[group].env`), read once, in
 * parallel, at cold start; the stack names only the groups the function needs and its role may read only those,
 * so asking for any other purpose throws. Without any of them (the local stack, tests, the bench):
 * `OTP_MASTER_KEY`, from which every purpose is derived as before. A function that needs no key at all (fetch,
 * the sweeper) gets an empty ring.
 */
export async function loadKeyRing(env: Env, secrets?: SecretsManagerClient): Promise<KeyRing> {
  const given = KEY_GROUP_NAMES.filter((group) => env[KEY_GROUPS[group].env]);
  if (given.length === 0) return env.OTP_MASTER_KEY ? masterKeyRing(env.OTP_MASTER_KEY) : groupKeyRing({});
  const client = secrets ?? new SecretsManagerClient({});
  const roots = await Promise.all(
    given.map(async (group): Promise<[KeyGroup, string]> => {
      const secretId = env[KEY_GROUPS[group].env]!;
      const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      return [group, keySecretRoot(group, SecretString, secretId)];
    }),
  );
  return groupKeyRing(Object.fromEntries(roots));
}

/** The sweeper also lists unsettled deliveries (the same DynamoStore). */
export type Deps = ApiDeps & DeliveryDeps & { store: UnsettledDeliveryStore };

/**
 * Builds every dependency from an environment and the keys (a key ring, or a master key: local stack, tests);
 * shared with the local stack. Keys are taken from the ring on first use, so a function whose ring lacks a
 * purpose works as long as its handler never needs it.
 */
export function buildDeps(
  env: Env,
  keySource: KeySource,
  logger: Logger = jsonLogger(),
  /** A DynamoDB client built elsewhere: the reliability tests pass one that fails chosen calls. */
  dynamoClient?: DynamoDBDocumentClient,
): Omit<Deps, 'workflow'> {
  const store = new DynamoStore(
    dynamoClient ?? createDocumentClient({ endpoint: env.DYNAMODB_ENDPOINT, region: env.AWS_REGION }),
    required(env, 'TABLE_NAME'),
  );
  const keys = toKeyRing(keySource);
  const carrier = new HttpCarrierProvider({ baseUrl: env.OTP_CARRIER_URL, keys });
  return {
    store,
    providers: singleProviderRegistry(carrier),
    vault: new CryptoCodeVault(keys),
    random: cryptoRandom,
    clock: systemClock,
    settings: settingsFromEnv(env),
    allowedChannels: allowedChannelsFromEnv(env),
    logger,
  };
}

/** `OTP_ALLOWED_CHANNELS`: a comma list of channels; unset means all five. */
export function allowedChannelsFromEnv(env: Env): Channel[] {
  const raw = env.OTP_ALLOWED_CHANNELS;
  if (!raw) return [...CHANNELS];
  const channels = raw.split(',').map((name) => name.trim());
  const unknown = channels.filter((name) => !isChannel(name));
  if (unknown.length > 0) throw new Error(`OTP_ALLOWED_CHANNELS has unknown channels: ${unknown.join(', ')}`);
  return channels as Channel[];
}

let deps: Promise<Deps> | undefined;

/** Built once per cold start, on the first invocation (the secret read is asynchronous). */
function lambdaDeps(): Promise<Deps> {
  deps ??= loadKeyRing(process.env).then((keys) => {
    const base = buildDeps(process.env, keys);
    const stateMachineArn = process.env.STATE_MACHINE_ARN;
    return {
      ...base,
      workflow: stateMachineArn
        ? new StepFunctionsWorkflow(stateMachineArn)
        : {
            start: () => Promise.reject(new Error('STATE_MACHINE_ARN is not set for this function')),
          },
    };
  });
  // A failed cold start (say, Secrets Manager briefly unreachable) must not poison the container.
  deps.catch(() => {
    deps = undefined;
  });
  return deps;
}

/** A Lambda entry for an HTTP route. */
export function apiEntry(pick: (deps: Deps) => ApiHandler) {
  let handler: ApiHandler | undefined;
  return async (event: ApiEvent, context: ApiContext) => {
    handler ??= pick(await lambdaDeps());
    return handler(event, context);
  };
}

/**
 * The scheduled sweeper's Lambda entry: restarts deliveries whose workflow did not start, and settles those
 * claimed but never ended by their deadline. Each half runs even when the other fails; the run then fails
 * (the function's error alarm) with both errors.
 */
export function sweeperEntry() {
  return async (): Promise<{ restarted: number; settled: number }> => {
    const resolved = await lambdaDeps();
    const [restarted, settled] = await Promise.allSettled([
      restartStalledDeliveries(resolved),
      settleOverdueDeliveries(resolved),
    ]);
    if (restarted.status === 'fulfilled' && restarted.value.length > 0) {
      resolved.logger.log('warn', 'sweeper.restarted', { count: restarted.value.length });
    }
    if (settled.status === 'fulfilled') logSettled(resolved.logger, settled.value);
    const failures = [restarted, settled].flatMap((result) =>
      result.status === 'rejected' ? [result.reason as unknown] : [],
    );
    if (failures.length > 0) throw new AggregateError(failures, 'sweeper run failed');
    return {
      restarted: restarted.status === 'fulfilled' ? restarted.value.length : 0,
      settled: settled.status === 'fulfilled' ? settled.value.length : 0,
    };
  };
}

/**
 * One `delivery.ended` line per delivery the sweeper settled, as the task functions write (the FAILED-deliveries
 * metric counts them in the sweeper's log group too), and a warning: something stopped a workflow.
 */
export function logSettled(logger: Logger, settled: DeliveryTaskOutput[]): void {
  for (const output of settled) {
    logger.log('info', 'delivery.ended', { sid: output.sid, deliveryStatus: output.deliveryStatus });
  }
  if (settled.length > 0) logger.log('warn', 'sweeper.settled', { count: settled.length });
}

/** A Lambda entry for a state machine task; logs how each delivery ended (the FAILED alarm counts these). */
export function taskEntry(task: (deps: Deps, input: DeliveryTaskInput) => Promise<DeliveryTaskOutput>) {
  return async (input: DeliveryTaskInput, _context?: Context): Promise<DeliveryTaskOutput> => {
    const resolved = await lambdaDeps();
    const output = await task(resolved, input);
    if (output.next === 'end') {
      resolved.logger.log('info', 'delivery.ended', {
        sid: output.sid,
        deliveryStatus: output.deliveryStatus,
      });
    }
    return output;
  };
}

/**
 * The webhook events function: the table's change stream in, webhook jobs out. It signs nothing, so it has no
 * key (and no permission to read any key secret).
 */
export function webhookEventsEntry() {
  let events: WebhookEventsDeps | undefined;
  const logger = jsonLogger();
  return async (event: DynamoDBStreamEvent): Promise<void> => {
    const env = process.env;
    events ??= {
      endpoints: new DynamoWebhookEndpoints(
        createDocumentClient({ region: env.AWS_REGION }),
        required(env, 'TABLE_NAME'),
      ),
      queue: new SqsWebhookQueue(required(env, 'WEBHOOK_QUEUE_URL'), undefined),
      clock: systemClock,
    };
    const published = await handleVerificationStream(events, event);
    if (published.jobs > 0) logger.log('info', 'webhook.published', { ...published });
  };
}

/** Everything the webhook sender needs: endpoints, the sealed secrets' key, the queue, the store for expiry. */
export function buildWebhookSenderDeps(
  env: Env,
  keys: KeySource,
  /** A DynamoDB client built elsewhere (tests: one that enforces the function's IAM grants). */
  dynamoClient?: DynamoDBDocumentClient,
): WebhookSenderDeps {
  const client =
    dynamoClient ?? createDocumentClient({ endpoint: env.DYNAMODB_ENDPOINT, region: env.AWS_REGION });
  const tableName = required(env, 'TABLE_NAME');
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
  };
}

/** The webhook sender function: jobs from SQS, failed ones reported back for redelivery. */
export function webhookSenderEntry() {
  let sender: Promise<WebhookSenderDeps> | undefined;
  const logger = jsonLogger();
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    sender ??= loadKeyRing(process.env).then((keys) => buildWebhookSenderDeps(process.env, keys));
    // A failed cold start (the secret briefly unreadable) must not poison the container.
    sender.catch(() => {
      sender = undefined;
    });
    return handleWebhookQueueBatch(await sender, event, logger);
  };
}
