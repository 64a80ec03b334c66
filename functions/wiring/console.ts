/**
 * The console function's dependencies from its environment: the stores the admin command uses, the activity
 * reader, the webhook key (to seal new signing secrets), the API key tag's key (to issue keys), and what the page
 * is told about signing in.
 */
import { ActivityReader } from '../adapters/dynamodb/activity';
import { DynamoConsoleRequests } from '../adapters/dynamodb/console-requests';
import { DynamoGuardAdmin } from '../adapters/dynamodb/guard';
import { DynamoWebhookDeliveries, DynamoWebhookEndpoints } from '../adapters/dynamodb/webhooks';
import { WebhookSecretVault } from '../adapters/webhooks/secrets';
import { cryptoRandom, systemClock } from '../adapters/crypto';
import { toKeyRing, type KeySource } from '../adapters/keyring';
import type { Logger } from '../adapters/logger';
import type { ConsoleAssets, ConsoleDeps } from '../console/routes';
import { settingsFromEnv } from '../core/settings';
import { dynamoAccounts } from './accounts';
import type { TableAccess } from './dynamo';
import type { Env } from './env';

/**
 * What the page reads from `/console/config.json`: on AWS the Cognito hosted sign-in (`CONSOLE_AUTH_URL`, the user
 * pool domain, and `CONSOLE_CLIENT_ID`); without them, the local stack's loopback sign-in.
 */
function consolePublicConfig(env: Env): Record<string, string> {
  if (env.CONSOLE_AUTH_URL && env.CONSOLE_CLIENT_ID) {
    return {
      mode: 'cognito',
      authUrl: env.CONSOLE_AUTH_URL,
      authOrigin: new URL(env.CONSOLE_AUTH_URL).origin,
      clientId: env.CONSOLE_CLIENT_ID,
    };
  }
  return { mode: 'local' };
}

export function buildConsoleDeps(
  env: Env,
  table: TableAccess,
  /** The webhook and API key tag keys (a master key on the local stack). */
  keySource: KeySource,
  logger: Logger,
  assets: () => Promise<ConsoleAssets>,
  overrides: Partial<Pick<ConsoleDeps, 'clock' | 'webhookAllowPrivate'>> = {},
): ConsoleDeps {
  let vault: WebhookSecretVault | undefined;
  const keys = toKeyRing(keySource);
  const clock = overrides.clock ?? systemClock;
  return {
    accounts: dynamoAccounts(table.client, table.tableName, { clock, apiKeyTag: keys }),
    activity: new ActivityReader(table.client, table.tableName),
    guard: new DynamoGuardAdmin(table.client, table.tableName),
    webhooks: new DynamoWebhookEndpoints(table.client, table.tableName),
    webhookDeliveries: new DynamoWebhookDeliveries(table.client, table.tableName),
    requests: new DynamoConsoleRequests(table.client, table.tableName),
    webhookVault: async () => {
      await keys.ready?.();
      return (vault ??= new WebhookSecretVault(keys));
    },
    random: cryptoRandom,
    clock,
    settings: settingsFromEnv(env),
    logger,
    webhookAllowPrivate: env.OTP_WEBHOOK_ALLOW_PRIVATE === 'true',
    publicConfig: consolePublicConfig(env),
    assets,
    ...overrides,
  };
}
