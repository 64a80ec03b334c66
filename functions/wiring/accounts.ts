/** The accounts core over the table: what the console, the admin command, the local stack and the tests use. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Accounts } from '../core/accounts/accounts';
import type { ApiKeyMaker } from '../core/accounts/ports';
import type { Clock, Random } from '../core/ports';
import { DynamoAccountStore } from '../adapters/dynamodb/accounts';
import { HmacApiKeyTagger, cryptoRandom, systemClock, taggedApiKeys } from '../adapters/crypto';
import type { KeySource } from '../adapters/keyring';

/** Where no deployment key is at hand (reading, or changing anything but keys), issuing a key says why it cannot. */
const noKey = () =>
  Promise.reject(new Error('Issuing an API key needs the deployment key (api-key-tag) here'));
const noKeyMaker: ApiKeyMaker = { newKey: noKey, ready: noKey };

export function dynamoAccounts(
  client: DynamoDBDocumentClient,
  tableName: string,
  {
    apiKeyTag,
    clock = systemClock,
    random = cryptoRandom,
  }: {
    /** The key ring (or master key) holding the deployment's `api-key-tag` key: new keys are tagged with it. */
    apiKeyTag?: KeySource;
    clock?: Clock;
    random?: Random;
  } = {},
): Accounts {
  return new Accounts({
    store: new DynamoAccountStore(client, tableName),
    keys: apiKeyTag === undefined ? noKeyMaker : taggedApiKeys(new HmacApiKeyTagger(apiKeyTag)),
    clock,
    random,
  });
}
