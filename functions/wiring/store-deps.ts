/**
 * The dependencies of the functions that need the table and the keys alone (check, fetch): no provider
 * registry, so their bundles hold neither the provider configuration's parsing nor number parsing and its
 * metadata. `buildDeps` (wiring/deps.ts) adds those for the others.
 */
import type { ApiKeyTagger, Clock, CodeVault, Random } from '../core/ports';
import type { ProviderRegistry } from '../core/providers';
import { settingsFromEnv, type Settings } from '../core/settings';
import { noMetrics, type Metrics } from '../core/metrics';
import { CryptoCodeVault, HmacApiKeyTagger, cryptoRandom, systemClock } from '../adapters/crypto';
import { DynamoStore } from '../adapters/dynamodb/store';
import { toKeyRing, type KeySource } from '../adapters/keyring';
import { lambdaLogger, type Logger } from '../adapters/logger';
import { lambdaMetrics } from '../adapters/metrics';
import type { TableAccess } from './dynamo';
import { legacyApiKeysUntilFromEnv, type Env } from './env';

export interface StoreDeps {
  store: DynamoStore;
  vault: CodeVault;
  apiKeyTagger: ApiKeyTagger;
  legacyApiKeysUntil: Date | undefined;
  random: Random;
  clock: Clock;
  settings: Settings;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The table's store, the code vault over the keys (each taken on first use), the settings; without a logger (the
 * Lambda entries) the container's Powertools logger and EMF metrics, with one no metrics unless given.
 */
export function buildStoreDeps(
  env: Env,
  keySource: KeySource,
  { client, tableName }: TableAccess,
  logger?: Logger,
  metrics?: Metrics,
): StoreDeps {
  const keys = toKeyRing(keySource);
  return {
    store: new DynamoStore(client, tableName),
    vault: new CryptoCodeVault(keys),
    apiKeyTagger: new HmacApiKeyTagger(keys),
    legacyApiKeysUntil: legacyApiKeysUntilFromEnv(env),
    random: cryptoRandom,
    clock: systemClock,
    settings: settingsFromEnv(env),
    logger: logger ?? lambdaLogger(),
    metrics: metrics ?? (logger ? noMetrics : lambdaMetrics()),
  };
}

/**
 * The providers of a function that calls none (AfterWait, the sweeper: they move a delivery on or end it, the
 * deliver task sends): its bundle holds no provider adapter, and a call would be a bug, so it throws.
 */
export const NO_PROVIDERS: ProviderRegistry = {
  forChannel() {
    throw new Error('this function calls no delivery provider');
  },
  byName() {
    throw new Error('this function calls no delivery provider');
  },
};
