/**
 * A service's active API keys and their limit (docs/adr/0018-api-keys-per-service.md): each key may make the
 * per-key limit's requests a minute, so the count of keys bounds what one service can ask of the API every service
 * shares. The count lives on the service item and moves in each key's own transaction, so concurrent issues never
 * pass the limit and a key revoked twice is counted off once; a service made before the count is counted from its
 * keys' items at its next key change. DynamoDB Local, the accounts core and the admin command.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import type { Accounts } from '../../functions/core/accounts/accounts';
import { DEFAULT_API_KEY_LIMIT } from '../../functions/core/accounts/formats';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { TABLE_SCHEMA, keys } from '../../functions/adapters/dynamodb/keys';
import { REVOKED_KEY_DAYS } from '../../functions/adapters/dynamodb/accounts';
import { DynamoStore } from '../../functions/adapters/dynamodb/store';
import { HmacApiKeyTagger, hashApiKey, systemClock } from '../../functions/adapters/crypto';
import { silentLogger } from '../../functions/adapters/logger';
import { buildFetchHandler } from '../../functions/http/api';
import { ApiKeyGuard } from '../../functions/http/middleware';
import { fetchEvent, lambdaContext } from '../../bench/events';
import { adminJson, runAdminCommand } from '../support/admin-cli';
import { DynamoFaults } from '../support/faults';
import { BY_TEST, dynamoEndpoint } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

/** A verification that does not exist: a request whose key passed answers 404. */
const SID = 'VE0123456789abcdef0123456789abcdef';
const masterKey = randomBytes(32).toString('base64url');

let table: TestTable;
let accounts: Accounts;

beforeAll(async () => {
  table = await freshTable('keylimit');
  accounts = dynamoAccounts(table.documents, table.name, { apiKeyTag: masterKey });
});
afterAll(() => table?.close());

const newService = async () =>
  (await accounts.createService(BY_TEST, { name: 'Keys', balance: 0, channels: ['sms'] })).sid;

const issue = (sid: string) => accounts.issueApiKey(BY_TEST, sid);

/** What issuing settled to: the keys issued and the refusals' codes. */
async function issueAll(sid: string, count: number) {
  const outcomes = await Promise.allSettled(Array.from({ length: count }, () => issue(sid)));
  return {
    issued: outcomes.filter((o) => o.status === 'fulfilled').map((o) => o.value),
    refused: outcomes.filter((o) => o.status === 'rejected').map((o) => (o.reason as { code?: string }).code),
  };
}

const countOnItem = async (sid: string) =>
  (await table.documents.send(new GetCommand({ TableName: table.name, Key: keys.service(sid) }))).Item
    ?.active_api_keys as number | undefined;

const activeItems = async (sid: string) =>
  (await accounts.store.listApiKeys(sid)).filter((key) => !key.revokedAt).length;

/** Whether the API takes the key (a fetch of a verification that does not exist: 404 past the key, 401 refused). */
async function apiTakes(serviceSid: string, apiKey: string): Promise<boolean> {
  const handler = buildFetchHandler(
    {
      store: new DynamoStore(table.documents, table.name),
      clock: systemClock,
      settings: { keyRequestsPerMinute: 120 },
      apiKeyTagger: new HmacApiKeyTagger(masterKey),
      logger: silentLogger,
    },
    new ApiKeyGuard(),
  );
  const { statusCode } = await handler(fetchEvent({ serviceSid, apiKey }, SID), lambdaContext('fetch'));
  return statusCode === 404;
}

describe('API keys per service', () => {
  it(`a new service holds at most ${DEFAULT_API_KEY_LIMIT} active keys; a revoked one frees its place`, async () => {
    const sid = await newService();
    const before = (await accounts.auditTrail(sid, 100)).length;
    const { issued, refused } = await issueAll(sid, DEFAULT_API_KEY_LIMIT);
    expect(issued).toHaveLength(DEFAULT_API_KEY_LIMIT);
    expect(refused).toEqual([]);
    await expect(issue(sid)).rejects.toMatchObject({
      code: 'too_many',
      message: expect.stringContaining(
        `has ${DEFAULT_API_KEY_LIMIT} active API keys and may hold ${DEFAULT_API_KEY_LIMIT}`,
      ),
    });
    // The refusal wrote nothing: no key, no audit record.
    expect(await activeItems(sid)).toBe(DEFAULT_API_KEY_LIMIT);
    expect(await accounts.auditTrail(sid, 100)).toHaveLength(before + DEFAULT_API_KEY_LIMIT);

    const { revokedAt } = await accounts.revokeApiKey(BY_TEST, sid, issued[0]!.keyId);
    expect(await countOnItem(sid)).toBe(DEFAULT_API_KEY_LIMIT - 1);
    // Its items go (the table's TTL) REVOKED_KEY_DAYS after: keys issued and revoked without end stay bounded.
    const hash = hashApiKey(issued[0]!.apiKey);
    const expires = Math.ceil(Date.parse(revokedAt) / 1000) + REVOKED_KEY_DAYS * 86_400;
    for (const key of [keys.apiKey(hash), keys.serviceApiKey(sid, hash)]) {
      const { Item } = await table.documents.send(new GetCommand({ TableName: table.name, Key: key }));
      expect([Item?.revoked_at, Item?.[TABLE_SCHEMA.ttlAttribute]]).toEqual([revokedAt, expires]);
    }
    expect(await apiTakes(sid, (await issue(sid)).apiKey)).toBe(true);
    await expect(issue(sid)).rejects.toMatchObject({ code: 'too_many' });
  });

  it('concurrent issues never pass the limit, and a key revoked twice at once is counted off once', async () => {
    const sid = await newService();
    await accounts.setApiKeyLimit(BY_TEST, sid, 3);
    const { issued, refused } = await issueAll(sid, 12);
    expect(issued).toHaveLength(3);
    expect(refused).toEqual(Array(9).fill('too_many'));
    expect(await activeItems(sid)).toBe(3);

    const twice = await Promise.all(
      [0, 1, 2].map(() => accounts.revokeApiKey(BY_TEST, sid, issued[0]!.keyId)),
    );
    expect(twice.filter((revoke) => !revoke.alreadyRevoked)).toHaveLength(1);
    expect(await countOnItem(sid)).toBe(2);
    expect((await issueAll(sid, 4)).issued).toHaveLength(1);
    expect(await countOnItem(sid)).toBe(await activeItems(sid));
  });

  it('a limit lowered under the active keys keeps them working and issues none until below it', async () => {
    const sid = await newService();
    const { issued } = await issueAll(sid, 4);
    await accounts.setApiKeyLimit(BY_TEST, sid, 2);
    for (const key of issued) expect(await apiTakes(sid, key.apiKey)).toBe(true);
    await expect(issue(sid)).rejects.toMatchObject({ code: 'too_many' });
    await accounts.revokeApiKey(BY_TEST, sid, issued[0]!.keyId);
    await accounts.revokeApiKey(BY_TEST, sid, issued[1]!.keyId);
    await expect(issue(sid)).rejects.toMatchObject({ code: 'too_many' });
    await accounts.revokeApiKey(BY_TEST, sid, issued[2]!.keyId);
    await issue(sid);
    await accounts.setApiKeyLimit(BY_TEST, sid, undefined);
    expect((await accounts.getService(sid))?.apiKeyLimit).toBeUndefined();
    expect((await issueAll(sid, DEFAULT_API_KEY_LIMIT)).issued).toHaveLength(DEFAULT_API_KEY_LIMIT - 2);
  });

  it("a service made before the count is counted from its keys' items, even by concurrent first changes", async () => {
    const sid = await newService();
    await accounts.setApiKeyLimit(BY_TEST, sid, 20);
    const legacy = (await issueAll(sid, 14)).issued;
    // As a service made before this change: keys, and no count on its item.
    await table.documents.send(
      new UpdateCommand({
        TableName: table.name,
        Key: keys.service(sid),
        UpdateExpression: 'REMOVE active_api_keys',
      }),
    );
    await accounts.setApiKeyLimit(BY_TEST, sid, 12);
    await expect(issue(sid)).rejects.toMatchObject({ code: 'too_many' });
    expect(await countOnItem(sid)).toBeUndefined();
    // Three revokes and four issues at once: whichever writes the first count, the others move it from there.
    const changes = await Promise.allSettled([
      ...legacy.slice(0, 3).map((key) => accounts.revokeApiKey(BY_TEST, sid, key.keyId)),
      ...Array.from({ length: 4 }, () => issue(sid)),
    ]);
    expect(changes.slice(0, 3).every((change) => change.status === 'fulfilled')).toBe(true);
    const issuedNow = changes.slice(3).filter((change) => change.status === 'fulfilled').length;
    expect(issuedNow).toBeLessThanOrEqual(1);
    expect(await countOnItem(sid)).toBe(await activeItems(sid));
    expect(await activeItems(sid)).toBe(11 + issuedNow);
  });

  it.each(['attempt', 'call'] as const)(
    'a key change whose answer is lost (%s layer) is counted once',
    async (layer) => {
      const faulty = createDocumentClient({ endpoint: dynamoEndpoint() });
      const faults = new DynamoFaults();
      faults.install(faulty);
      const faultyAccounts = dynamoAccounts(faulty, table.name, { apiKeyTag: masterKey });
      const sid = await newService();
      const lose = () =>
        faults.inject({ operation: 'TransactWriteItems', kind: 'internal', timing: 'after', layer });
      try {
        // 'attempt': the SDK sends the same transaction again; 'call': the caller gets the error.
        const lost = lose();
        const issued = await faultyAccounts.issueApiKey(BY_TEST, sid).catch(() => undefined);
        expect(lost.fired).toBe(1);
        expect(issued === undefined).toBe(layer === 'call');
        expect(await activeItems(sid)).toBe(1);
        expect(await countOnItem(sid)).toBe(1);
        const [key] = await accounts.store.listApiKeys(sid);
        const lostRevoke = lose();
        await faultyAccounts.revokeApiKey(BY_TEST, sid, key!.keyId).catch(() => undefined);
        expect(lostRevoke.fired).toBe(1);
        expect(await activeItems(sid)).toBe(0);
        expect(await countOnItem(sid)).toBe(0);
        // Revoked once, counted off once: a retry of the revoke finds it revoked.
        expect(await faultyAccounts.revokeApiKey(BY_TEST, sid, key!.keyId)).toMatchObject({
          alreadyRevoked: true,
        });
        expect(await countOnItem(sid)).toBe(0);
      } finally {
        faulty.destroy();
      }
    },
  );

  it('an issue on a counted service reads its item and writes one transaction; a revoke also reads the keys', async () => {
    const logged = createDocumentClient({ endpoint: dynamoEndpoint() });
    const log = new DynamoFaults();
    log.install(logged);
    const loggedAccounts = dynamoAccounts(logged, table.name, { apiKeyTag: masterKey });
    try {
      const sid = await newService();
      log.reset();
      const { keyId } = await loggedAccounts.issueApiKey(BY_TEST, sid);
      expect(log.calls.map((call) => call.operation)).toEqual(['GetItem', 'TransactWriteItems']);
      log.reset();
      await loggedAccounts.revokeApiKey(BY_TEST, sid, keyId);
      expect(log.calls.map((call) => call.operation).sort()).toEqual([
        'GetItem',
        'Query',
        'TransactWriteItems',
      ]);
    } finally {
      logged.destroy();
    }
  });

  it('the admin command sets the limit (audited) and lists the keys with their count', async () => {
    const sid = await newService();
    const target = { tableName: table.name, masterKey };
    expect(await adminJson(['key', 'limit', sid, '2'], target)).toEqual({ serviceSid: sid, keyLimit: 2 });
    await adminJson(['key', 'issue', sid], target);
    await adminJson(['key', 'issue', sid], target);
    const refused = await runAdminCommand(['key', 'issue', sid], target);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('has 2 active API keys and may hold 2');
    expect(await adminJson(['key', 'list', sid], target)).toMatchObject({ activeKeys: 2, keyLimit: 2 });
    expect((await runAdminCommand(['key', 'limit', sid, '0'], target)).code).toBe(2);
    expect((await runAdminCommand(['key', 'limit', sid, '2001'], target)).code).toBe(2);
    expect(await adminJson(['key', 'limit', sid, 'default'], target)).toEqual({
      serviceSid: sid,
      keyLimit: DEFAULT_API_KEY_LIMIT,
    });
    const limits = (await accounts.auditTrail(sid, 20)).filter((record) => record.action === 'key.limit');
    expect(limits.map((record) => [record.before, record.after])).toEqual([
      [{ apiKeyLimit: 2 }, { apiKeyLimit: DEFAULT_API_KEY_LIMIT }],
      [{ apiKeyLimit: DEFAULT_API_KEY_LIMIT }, { apiKeyLimit: 2 }],
    ]);
  });
});
