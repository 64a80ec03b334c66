import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoAccounts } from '../functions/wiring/accounts';
import { UNITS_PER_USD } from '../functions/core/money';
import { CHANNELS } from '../functions/core/routing';

/** The seed's changes, as the audit trail shows them. */
const BY_SEED = { actor: 'local:seed' };

export interface DemoAccount {
  serviceSid: string;
  apiKey: string;
}

/** The demo service's console member: sign in at /console with this address (local sign-in). */
export const DEMO_CONSOLE_USER = 'demo@example.com';

/**
 * A demo service with $100, a default template and all five channels, and one API key, tagged under the stack's
 * master key as the stack's own key ring tags keys.
 */
export async function seedDemoAccount(
  client: DynamoDBDocumentClient,
  tableName: string,
  masterKey: string,
): Promise<DemoAccount> {
  const accounts = dynamoAccounts(client, tableName, { apiKeyTag: masterKey });
  const service = await accounts.createService(BY_SEED, {
    name: 'Demo',
    balance: 100 * UNITS_PER_USD,
    channels: [...CHANNELS],
    defaultTemplateBody: 'Your Demo verification code is {code}. It expires in 5 minutes.',
  });
  const { apiKey } = await accounts.issueApiKey(BY_SEED, service.sid);
  await accounts.addMember(BY_SEED, service.sid, DEMO_CONSOLE_USER, DEMO_CONSOLE_USER);
  return { serviceSid: service.sid, apiKey };
}
