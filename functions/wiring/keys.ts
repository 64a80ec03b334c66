/**
 * A function's keys at cold start. Only the functions whose manifest entry names key groups (lib/functions.ts)
 * import this module, so only their bundles hold the Secrets Manager client.
 */
import {
  BatchGetSecretValueCommand,
  GetSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { awsClientConfig } from '../adapters/aws-client-config';
import {
  KEY_GROUPS,
  KEY_GROUP_NAMES,
  groupKeyRing,
  keySecretRoot,
  masterKeyRing,
  type KeyRing,
} from '../adapters/keyring';
import type { Env } from './env';

/**
 * This function's keys. On AWS: the key secrets its environment names (`KEY_GROUPS[group].env`), read once, in
 * one request, at cold start; the stack names only the groups the function needs and its role may read only
 * those, so asking for any other purpose throws. Without any of them (the local stack, tests, the bench):
 * `OTP_MASTER_KEY`, from which every purpose is derived as before.
 */
export async function loadKeyRing(env: Env, secrets?: SecretsManagerClient): Promise<KeyRing> {
  const given = KEY_GROUP_NAMES.filter((group) => env[KEY_GROUPS[group].env]);
  if (given.length === 0) return env.OTP_MASTER_KEY ? masterKeyRing(env.OTP_MASTER_KEY) : groupKeyRing({});
  const secretIds = given.map((group) => env[KEY_GROUPS[group].env]!);
  const values = await readSecretStrings(
    secrets ?? new SecretsManagerClient({ ...awsClientConfig('@aws-sdk/client-secrets-manager') }),
    secretIds,
  );
  return groupKeyRing(
    Object.fromEntries(given.map((group, i) => [group, keySecretRoot(group, values[i], secretIds[i]!)])),
  );
}

/**
 * The values of `secretIds`, in their order. Two or more in one `BatchGetSecretValue` (the functions that read
 * several key secrets, lib/functions.ts): one request and one connection at cold start instead of one each, which on Lambda
 * is also a TLS handshake less. The role needs `BatchGetSecretValue` (no resource-level permission) besides
 * `GetSecretValue` on each secret, which still decides what it may read. One secret: `GetSecretValue`, and no
 * batch permission.
 */
async function readSecretStrings(
  client: SecretsManagerClient,
  secretIds: string[],
): Promise<(string | undefined)[]> {
  if (secretIds.length === 1) {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretIds[0] }));
    return [SecretString];
  }
  const { SecretValues = [], Errors = [] } = await client.send(
    new BatchGetSecretValueCommand({ SecretIdList: secretIds }),
  );
  // A secret it may not read, or that is gone, comes back in `Errors`, not as a failed request.
  if (Errors.length > 0) {
    const reasons = Errors.map((error) =>
      `${error.SecretId}: ${error.ErrorCode} ${error.Message ?? ''}`.trim(),
    );
    throw new Error(`Reading the key secrets failed: ${reasons.join('; ')}`);
  }
  return secretIds.map((id) => {
    // Asked by full ARN (what the stack puts in the environment) or by name; answered with both.
    const value = SecretValues.find((entry) => entry.ARN === id || entry.Name === id);
    if (!value) throw new Error(`The key secret ${id} was not in Secrets Manager's answer`);
    return value.SecretString;
  });
}
