/** `key issue`, `key list`, `key revoke`, `key limit`: API keys, shown once, stored as their hash. */
import { rows, table } from '../format';
import * as parse from '../validate';
import { AdminError, command, type Command } from '../framework';
import { apiKeyLimit } from '../../../functions/core/accounts/accounts';
import { DEFAULT_API_KEY_LIMIT } from '../../../functions/core/accounts/formats';
import { VA, loadService, sidOnly } from './common';

export const keyText = (apiKey: string, keyId: string) =>
  rows([
    ['API key', `${apiKey}   (shown once: store it now)`],
    ['Key id', `${keyId}   (for key list and key revoke)`],
  ]);

const keyIssue = command({
  words: ['key', 'issue'],
  args: ['<VA>'],
  options: ['secret-arn'],
  optionsUsage: '[--secret-arn ARN]',
  summary: 'Issue an API key (shown once; only its hash is stored)',
  details: [
    "A key carries a tag under the deployment's key: the local stack provides it; a deployed table needs",
    '--secret-arn ARN (the stack output ApiKeyTagSecretArn, read with your AWS credentials).',
  ],
  examples: [`key issue ${VA}`, `key issue ${VA} --json | jq -r .apiKey`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const { apiKey, keyId } = await context.accounts.issueApiKey(context.change, sid);
    return { json: { serviceSid: sid, keyId, apiKey }, text: keyText(apiKey, keyId) };
  },
});

const keyList = command({
  words: ['key', 'list'],
  args: ['<VA>'],
  summary: "List a service's API keys by id, with when each was last used",
  examples: [`key list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    // With each key's last use, as the console lists them: what shows an old key has fallen silent.
    const keys = (await context.accounts.store.listApiKeysWithUse(sid)).sort((a, b) =>
      a.createdAt.localeCompare(b.createdAt),
    );
    const active = keys.filter((key) => !key.revokedAt).length;
    const limit = apiKeyLimit(service);
    return {
      json: {
        serviceSid: sid,
        keys: keys.map((key) => ({
          ...key,
          revokedAt: key.revokedAt ?? null,
          lastUsedAt: key.lastUsedAt ?? null,
          active: !key.revokedAt,
        })),
        activeKeys: active,
        keyLimit: limit,
      },
      text:
        `${active} active of at most ${limit} (key limit).\n` +
        (keys.length === 0
          ? 'No API keys.'
          : table(
              ['Key id', 'Created', 'Last used', 'Status'],
              keys.map((key) => [
                key.keyId,
                key.createdAt,
                key.lastUsedAt ?? 'never',
                key.revokedAt ? `revoked ${key.revokedAt}` : 'active',
              ]),
            )),
    };
  },
});

const keyRevoke = command({
  words: ['key', 'revoke'],
  args: ['<VA>', '<keyId>'],
  summary: 'Revoke an API key by its whole id (the next request with it is refused)',
  examples: [`key revoke ${VA} 3f2a9c41d07e`],
  parse: ([sid, id]) => ({ sid: parse.serviceSid(sid!), keyId: parse.keyId(id!) }),
  run: async (context, { sid, keyId }) => {
    await loadService(context, sid);
    // The whole id only: a prefix could name a key the operator did not mean.
    const key = (await context.accounts.listApiKeys(sid)).find((candidate) => candidate.keyId === keyId);
    if (!key) throw new AdminError(`No API key ${keyId} in service ${sid}`);
    if (key.revokedAt) {
      return {
        json: { serviceSid: sid, keyId: key.keyId, revokedAt: key.revokedAt, alreadyRevoked: true },
        text: `Key ${key.keyId} was already revoked at ${key.revokedAt}.`,
      };
    }
    const { revokedAt } = await context.accounts.revokeApiKey(context.change, sid, key.keyId);
    return {
      json: { serviceSid: sid, keyId: key.keyId, revokedAt, alreadyRevoked: false },
      text: `Revoked key ${key.keyId}. The next request with it is refused.`,
    };
  },
});

const keyLimit = command({
  words: ['key', 'limit'],
  args: ['<VA>', '<count|default>'],
  summary: `Set how many active API keys a service may hold (default ${DEFAULT_API_KEY_LIMIT}; each key makes up to its per-minute limit)`,
  details: [
    "A service's keys bound its share of the API every service shares: each key may make the per-key limit's",
    'requests a minute. Keys already over a lowered limit keep working; no new one is issued until below it.',
  ],
  examples: [`key limit ${VA} 50`, `key limit ${VA} default`],
  parse: ([sid, limit]) => ({
    sid: parse.serviceSid(sid!),
    limit: limit === 'default' ? undefined : parse.apiKeyLimit(limit!),
  }),
  run: async (context, { sid, limit }) => {
    const effective = await context.accounts.setApiKeyLimit(context.change, sid, limit);
    return {
      json: { serviceSid: sid, keyLimit: effective },
      text: `This service may hold up to ${effective} active API key${effective === 1 ? '' : 's'}.`,
    };
  },
});

export const keyCommands: readonly Command[] = [keyIssue, keyList, keyRevoke, keyLimit];
