import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AccountStore } from '../functions/adapters/dynamodb/accounts';
import { cryptoRandom } from '../functions/adapters/crypto';
import { UNITS_PER_USD } from '../functions/core/money';
import type { ApiKeyTagger } from '../functions/core/ports';
import { CHANNELS } from '../functions/core/routing';

export interface DemoAccount {
  serviceSid: string;
  apiKey: string;
}

/** The demo service's console member: sign in at /console with this address (local sign-in). */
export const DEMO_CONSOLE_USER = 'demo@example.com';

/**
 * A demo service with $100, a default template and all five channels, and one API key (tagged with `tagger`, as
 * the stack's own key ring tags them; the legacy format without it).
 */
export async function seedDemoAccount(
  client: DynamoDBDocumentClient,
  tableName: string,
  tagger?: ApiKeyTagger,
): Promise<DemoAccount> {
  const accounts = new AccountStore(client, tableName, cryptoRandom, tagger);
  const service = await accounts.createService({
    name: 'Demo',
    balance: 100 * UNITS_PER_USD,
    channels: [...CHANNELS],
    defaultTemplateBody: 'Your Demo verification code is {code}. It expires in 5 minutes.',
  });
  const { apiKey } = await accounts.issueApiKey(service.sid);
  await accounts.addMember(service.sid, DEMO_CONSOLE_USER, DEMO_CONSOLE_USER);
  return { serviceSid: service.sid, apiKey };
}
