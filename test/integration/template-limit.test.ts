/**
 * A service holds at most `MAX_TEMPLATES_PER_SERVICE` templates: any member may add them, and each is an item of
 * the table every service shares and a line of the service's templates page. The count lives on the service item
 * and moves in each template's own transaction (as the API keys' count does, ADR 0018): concurrent adds never pass
 * the limit, a template deleted twice is counted off once, and a service made before the count is counted from
 * its templates' items at its next template change. DynamoDB Local and the accounts core.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { MAX_TEMPLATES_PER_SERVICE, type Accounts } from '../../functions/core/accounts/accounts';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { BY_TEST } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

let table: TestTable;
let accounts: Accounts;

beforeAll(async () => {
  table = await freshTable('templimit');
  accounts = dynamoAccounts(table.documents, table.name, {
    apiKeyTag: randomBytes(32).toString('base64url'),
  });
});
afterAll(() => table?.close());

/** A new service, with its default template (counted). */
const newService = async () =>
  (await accounts.createService(BY_TEST, { name: 'Templates', balance: 0, channels: ['sms'] })).sid;

const add = (sid: string, n: number) => accounts.addTemplate(BY_TEST, sid, { body: `Code {code} (${n})` });

async function addAll(sid: string, count: number) {
  const outcomes = await Promise.allSettled(Array.from({ length: count }, (_, i) => add(sid, i)));
  return {
    added: outcomes.filter((o) => o.status === 'fulfilled').length,
    refused: outcomes.filter((o) => o.status === 'rejected').map((o) => (o.reason as { code?: string }).code),
  };
}

const stored = async (sid: string) => (await accounts.store.listTemplates(sid)).length;
const counted = async (sid: string) =>
  (await table.documents.send(new GetCommand({ TableName: table.name, Key: keys.service(sid) }))).Item
    ?.template_count;

test('the limit holds under concurrent adds; past it, too_many and nothing written', async () => {
  const sid = await newService();
  const before = await stored(sid);
  expect(await counted(sid)).toBe(before);
  for (let i = before; i < MAX_TEMPLATES_PER_SERVICE - 4; i++) await add(sid, i);
  // Four places left, twelve adds at once.
  expect(await addAll(sid, 12)).toEqual({ added: 4, refused: Array(8).fill('too_many') });
  expect([await stored(sid), await counted(sid)]).toEqual([
    MAX_TEMPLATES_PER_SERVICE,
    MAX_TEMPLATES_PER_SERVICE,
  ]);
  await expect(add(sid, 0)).rejects.toMatchObject({
    code: 'too_many',
    message: expect.stringContaining(`may hold ${MAX_TEMPLATES_PER_SERVICE}`),
  });
  // One deleted makes room for one.
  const [first] = await accounts.store.listTemplates(sid);
  await accounts.deleteTemplate(BY_TEST, sid, first!.sid);
  await add(sid, 1);
  expect(await stored(sid)).toBe(MAX_TEMPLATES_PER_SERVICE);
});

test('a template deleted by two requests at once is counted off once', async () => {
  const sid = await newService();
  const template = await add(sid, 1);
  const before = await counted(sid);
  const outcomes = await Promise.allSettled(
    [1, 2, 3].map(() => accounts.deleteTemplate(BY_TEST, sid, template.sid)),
  );
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
  expect(
    outcomes.filter((o) => o.status === 'rejected').map((o) => (o.reason as { code?: string }).code),
  ).toEqual(['not_found', 'not_found']);
  expect(await counted(sid)).toBe((before as number) - 1);
  expect(await counted(sid)).toBe(await stored(sid));
});

test('a service made before the count is counted from its items at its next change, once', async () => {
  const sid = await newService();
  await add(sid, 1);
  await add(sid, 2);
  await table.documents.send(
    new UpdateCommand({
      TableName: table.name,
      Key: keys.service(sid),
      UpdateExpression: 'REMOVE template_count',
    }),
  );
  expect(await counted(sid)).toBeUndefined();
  // Several first changes at once: one begins the count, the others read it again and move it.
  expect(await addAll(sid, 4)).toEqual({ added: 4, refused: [] });
  expect(await counted(sid)).toBe(await stored(sid));
});
