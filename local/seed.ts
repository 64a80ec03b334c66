import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AccountStore } from '../functions/adapters/dynamodb/accounts';
import { cryptoRandom } from '../functions/adapters/crypto';
import { UNITS_PER_USD } from '../functions/core/money';
import { CHANNELS } from '../functions/core/routing';

export interface DemoAccount {
  serviceSid: string;
  apiKey: string;
}

/** A demo service with $100, a default template and all five channels, and one API key. */
export async function seedDemoAccount(
  client: DynamoDBDocumentClient,
  tableName: string,
): Promise<DemoAccount> {
  const accounts = new AccountStore(client, tableName, cryptoRandom);
  const service = await accounts.createService({
    name: 'Demo',
    balance: 100 * UNITS_PER_USD,
    channels: [...CHANNELS],
    defaultTemplateBody: 'Your Demo verification code is {code}. It expires in 5 minutes.',
  });
  const { apiKey } = await accounts.issueApiKey(service.sid);
  return { serviceSid: service.sid, apiKey };
}
