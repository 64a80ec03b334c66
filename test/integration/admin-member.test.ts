/**
 * `npm run admin -- member add|remove|list` writes the memberships the console reads: a user added sees the
 * service at its next console request, a user removed is refused at its next one.
 */
import { DynamoAccountStore } from '../../functions/adapters/dynamodb/accounts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { adminJson, runAdminCommand } from '../support/admin-cli';
import { dynamoEndpoint, startHarness, type Account, type Harness } from '../support/harness';

let harness: Harness;
let account: Account;

beforeAll(async () => {
  harness = await startHarness();
  account = await harness.createAccount();
});
afterAll(() => harness.close());

const admin = (...args: string[]) => runAdminCommand(args, harness);

async function consoleAs(email: string, path: string): Promise<number> {
  const token = await harness.consoleToken(email);
  const response = await fetch(`${harness.stack.url}/console/api${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return response.status;
}

test('member add gives a console user the service; member remove takes it away', async () => {
  const user = 'carol@example.com';
  expect(await consoleAs(user, `/services/${account.serviceSid}`)).toBe(403);

  const added = await adminJson(['member', 'add', account.serviceSid, user], harness);
  expect(added).toMatchObject({ userId: user, serviceSid: account.serviceSid });
  expect(await consoleAs(user, `/services/${account.serviceSid}`)).toBe(200);

  const listed = await adminJson<{ members: { userId: string }[] }>(
    ['member', 'list', account.serviceSid],
    harness,
  );
  expect(listed.members.map((m) => m.userId)).toEqual([user]);

  expect((await admin('member', 'remove', account.serviceSid, user)).code).toBe(0);
  expect(await consoleAs(user, `/services/${account.serviceSid}`)).toBe(403);
  expect((await admin('member', 'remove', account.serviceSid, user)).code).toBe(1);
});

test('a malformed user id or service is a usage error (exit 2), an unknown service exit 1', async () => {
  expect((await admin('member', 'add', account.serviceSid, 'bad id')).code).toBe(2);
  expect((await admin('member', 'add', 'VA123', 'x@example.com')).code).toBe(2);
  expect((await admin('member', 'add', 'VA0123456789abcdef0123456789abcdef', 'x@example.com')).code).toBe(1);
});

test('the console reads membership and operator rights strongly consistent: a removal holds at once', async () => {
  const client = createDocumentClient({ endpoint: dynamoEndpoint() });
  const reads: unknown[] = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      reads.push((args.input as { ConsistentRead?: boolean }).ConsistentRead);
      return next(args);
    },
    { step: 'initialize', name: 'recordConsistentRead' },
  );
  const store = new DynamoAccountStore(client, harness.tableName);
  await store.isMember('dave@example.com', account.serviceSid);
  await store.isOperator('dave@example.com');
  client.destroy();
  // DynamoDB Local always reads consistently, so the request itself is what can be checked.
  expect(reads).toEqual([true, true]);
});
