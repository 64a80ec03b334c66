/** The accounts core over the table: what the console, the admin command, the local stack and the tests use. */
import { Accounts } from '../core/accounts/accounts';
import type { Clock, Random } from '../core/ports';
import { DynamoAccountStore } from '../adapters/dynamodb/accounts';
import { cryptoApiKeys, cryptoRandom, systemClock } from '../adapters/crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export function dynamoAccounts(
  client: DynamoDBDocumentClient,
  tableName: string,
  { clock = systemClock, random = cryptoRandom }: { clock?: Clock; random?: Random } = {},
): Accounts {
  return new Accounts({
    store: new DynamoAccountStore(client, tableName),
    keys: cryptoApiKeys,
    clock,
    random,
  });
}
