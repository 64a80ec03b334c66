/**
 * A function's keys at cold start. Only the functions whose manifest entry names key groups (lib/functions.ts)
 * import this module, so only their bundles hold the Secrets Manager client.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import {
  KEY_GROUPS,
  KEY_GROUP_NAMES,
  groupKeyRing,
  keySecretRoot,
  masterKeyRing,
  type KeyGroup,
  type KeyRing,
} from '../adapters/keyring';
import type { Env } from './env';

/**
 * This function's keys. On AWS: the key secrets its environment names (`KEY_GROUPS[group].env`), read once, in
 * parallel, at cold start; the stack names only the groups the function needs and its role may read only those,
 * so asking for any other purpose throws. Without any of them (the local stack, tests, the bench):
 * `OTP_MASTER_KEY`, from which every purpose is derived as before.
 */
export async function loadKeyRing(env: Env, secrets?: SecretsManagerClient): Promise<KeyRing> {
  const given = KEY_GROUP_NAMES.filter((group) => env[KEY_GROUPS[group].env]);
  if (given.length === 0) return env.OTP_MASTER_KEY ? masterKeyRing(env.OTP_MASTER_KEY) : groupKeyRing({});
  const client = secrets ?? new SecretsManagerClient({});
  const roots = await Promise.all(
    given.map(async (group): Promise<[KeyGroup, string]> => {
      const secretId = env[KEY_GROUPS[group].env]!;
      const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      return [group, keySecretRoot(group, SecretString, secretId)];
    }),
  );
  return groupKeyRing(Object.fromEntries(roots));
}
