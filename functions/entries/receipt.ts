/**
 * The receipt function's composition root: the table, the carrier key (receipt signatures), Vonage's signature
 * secret (`OTP_VONAGE_SECRET_ARN`, read on the first Vonage callback) and its spent-token guard.
 */
import { DynamoReplayGuard } from '../adapters/dynamodb/receipt-tokens';
import { buildReceiptHandler } from '../http/api';
import { buildDeps } from '../wiring/deps';
import { tableFromEnv } from '../wiring/dynamo';
import { RECEIPT_ROUTE } from '../http/routes';
import { apiEntry, servingOwnUrl } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { vonageCredentialsFromEnv } from '../wiring/provider-secrets';
import { providersFromEnv } from '../wiring/providers';

// Reached through the HTTP API's receipt route, or at the function's own URL (`otp:receiptFunctionUrl`).
export const handler = servingOwnUrl(
  apiEntry(async () => {
    const keys = await loadKeyRing(process.env);
    const deps = buildDeps(process.env, keys);
    const { client, tableName } = tableFromEnv(process.env);
    return buildReceiptHandler({
      ...deps,
      providers: providersFromEnv(process.env, keys, {
        vonageCredentials: vonageCredentialsFromEnv(process.env),
        replays: new DynamoReplayGuard(client, tableName),
      }),
    });
  }),
  RECEIPT_ROUTE,
);
