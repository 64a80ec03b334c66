/**
 * The dependencies of the HTTP handlers and the delivery tasks, built from an environment and the keys. No AWS
 * client but DynamoDB's: the workflow (SFN) and the keys (Secrets Manager) are given by the caller, so each
 * function's bundle holds only the clients its own root adds (functions/entries/).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DeliveryDeps } from '../core/delivery';
import type { DeliverySweepStore } from '../core/ports';
import { settingsFromEnv } from '../core/settings';
import { CryptoCodeVault, HmacApiKeyTagger, cryptoRandom, systemClock } from '../adapters/crypto';
import { DynamoStore } from '../adapters/dynamodb/store';
import { toKeyRing, type KeySource } from '../adapters/keyring';
import { noMetrics, type Metrics } from '../core/metrics';
import { lambdaLogger, type Logger } from '../adapters/logger';
import { lambdaMetrics } from '../adapters/metrics';
import { DynamoReplayGuard } from '../adapters/dynamodb/receipt-tokens';
import type { ApiDeps } from '../http/api';
import { tableFromEnv } from './dynamo';
import { deployableChannels } from './channels';
import { legacyApiKeysUntilFromEnv, type Env } from './env';
import { providersFromEnv } from './providers';

/** The sweeper also lists the deliveries not yet ended (the same DynamoStore). */
export type Deps = ApiDeps & DeliveryDeps & { store: DeliverySweepStore };

/**
 * Builds every dependency but the workflow from an environment and the keys (a key ring, or a master key: local
 * stack, tests). Keys are taken from the ring on first use, so a function whose ring lacks a purpose works as
 * long as its handler never needs it. Without a logger (the Lambda entries): the container's Powertools logger
 * and EMF metrics, which the entry flushes once per invocation (wiring/entries.ts); with one, no metrics unless
 * given.
 */
export function buildDeps(
  env: Env,
  keySource: KeySource,
  logger?: Logger,
  /** A DynamoDB client built elsewhere: the reliability tests pass one that fails chosen calls. */
  dynamoClient?: DynamoDBDocumentClient,
  metrics?: Metrics,
): Omit<Deps, 'workflow'> {
  const { client, tableName } = tableFromEnv(env, dynamoClient);
  const keys = toKeyRing(keySource);
  return {
    store: new DynamoStore(client, tableName),
    // AWS providers by name only; the deliver task's root adds their senders (wiring/provider-senders.ts).
    providers: providersFromEnv(env, keys, { replays: new DynamoReplayGuard(client, tableName) }),
    vault: new CryptoCodeVault(keys),
    apiKeyTagger: new HmacApiKeyTagger(keys),
    legacyApiKeysUntil: legacyApiKeysUntilFromEnv(env),
    random: cryptoRandom,
    clock: systemClock,
    settings: settingsFromEnv(env),
    allowedChannels: deployableChannels(env),
    logger: logger ?? lambdaLogger(),
    metrics: metrics ?? (logger ? noMetrics : lambdaMetrics()),
  };
}
