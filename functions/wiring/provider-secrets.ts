/** Vonage's credentials from Secrets Manager: the deliver and receipt roots only (they hold that client already). */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { awsClientConfig } from '../adapters/aws-client-config';
import { readVonageCredentials, type VonageCredentials } from '../adapters/providers/vonage';
import type { Env } from './env';
import { VONAGE_SECRET_ENV, inlineVonageCredentials } from './providers';

/**
 * `OTP_VONAGE_SECRET_ARN`'s credentials, read on first use and kept for the container's life (a failed read is
 * retried next time). Without that variable: `OTP_VONAGE_CREDENTIALS` (local stack, tests). The values are never
 * logged: an invalid secret is reported by its ARN only.
 */
export function vonageCredentialsFromEnv(
  env: Env,
  secrets?: SecretsManagerClient,
): () => Promise<VonageCredentials> {
  const secretId = env[VONAGE_SECRET_ENV];
  if (!secretId) return inlineVonageCredentials(env);
  let loaded: Promise<VonageCredentials> | undefined;
  return () => {
    loaded ??= (async () => {
      const client =
        secrets ?? new SecretsManagerClient({ ...awsClientConfig('@aws-sdk/client-secrets-manager') });
      const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      let json: unknown;
      try {
        json = JSON.parse(SecretString ?? '');
      } catch {
        throw new Error(`The secret ${secretId} is not JSON`);
      }
      const credentials = readVonageCredentials(json);
      if (!credentials) throw new Error(`The secret ${secretId} is not a Vonage secret`);
      return credentials;
    })();
    loaded.catch(() => {
      loaded = undefined;
    });
    return loaded;
  };
}
