/**
 * `balance audit` proves balance = credits − charges, and fails when money moved without its ledger line: a
 * charge line written without taking its price off the balance, or a balance raised without a credit line. (That
 * it holds after the money races is checked at the end of test/reliability/concurrency.test.ts.)
 */
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { runAdminCommand } from '../support/admin-cli';
import { BY_TEST, dynamoEndpoint, startHarness, type Account, type Harness } from '../support/harness';

const PRICE_US = 500;
let harness: Harness;
let client: DynamoDBDocumentClient;

beforeAll(async () => {
  harness = await startHarness();
  client = createDocumentClient({ endpoint: dynamoEndpoint() });
});
afterAll(async () => {
  client.destroy();
  await harness.close();
});

let counter = 0;
const freshUsNumber = () => `+1415555${String(6000 + ++counter).padStart(4, '0')}`;

async function adminBalance(
  verb: 'audit' | 'reconcile',
  sid: string,
): Promise<{ code: number; json: Record<string, unknown>; text: string }> {
  const run = async (json: boolean) => {
    const { code, stdout, stderr } = await runAdminCommand(
      ['balance', verb, sid, ...(json ? ['--json'] : [])],
      harness,
    );
    return { code, output: [stdout, stderr].filter(Boolean).join('\n') };
  };
  const json = await run(true);
  const text = verb === 'audit' ? await run(false) : json;
  expect(text.code).toBe(json.code);
  return { code: json.code, json: JSON.parse(json.output) as Record<string, unknown>, text: text.output };
}

/** A service that has sent once (one charge line) and been topped up once (a second credit line). */
async function usedAccount(): Promise<Account> {
  const account = await harness.createAccount({ balanceUsd: 1 });
  expect((await harness.client(account).send({ To: freshUsNumber() })).status).toBe(201);
  await harness.accounts.topUp(BY_TEST, account.serviceSid, 2_000);
  await harness.stack.workflow.idle();
  return account;
}

it('a service that sent and was topped up through the core is proven, by the core and the admin command', async () => {
  const { serviceSid } = await usedAccount();
  expect(await harness.accounts.balanceAudit(serviceSid)).toEqual({
    serviceSid,
    balance: 10_000 - PRICE_US + 2_000,
    credits: 12_000,
    charges: PRICE_US,
    difference: 0,
    creditLines: 2,
    chargeLines: 1,
  });
  const admin = await adminBalance('audit', serviceSid);
  expect(admin.code).toBe(0);
  expect(admin.json).toMatchObject({ proven: true, difference: '0.0000', creditLines: 2, chargeLines: 1 });
  expect(admin.text).toContain('proven by the ledger');
});

it('a charge line written without its balance change fails the audit (exit 1)', async () => {
  const { serviceSid } = await usedAccount();
  const at = harness.clock.now();
  await client.send(
    new PutCommand({
      TableName: harness.tableName,
      Item: {
        ...keys.charge(serviceSid, at, 'VE0123456789abcdef0123456789abcdef'),
        type: 'charge',
        verification_sid: 'VE0123456789abcdef0123456789abcdef',
        amount: PRICE_US,
        at: at.toISOString(),
      },
    }),
  );
  expect(await harness.accounts.balanceAudit(serviceSid)).toMatchObject({
    difference: -PRICE_US,
    chargeLines: 2,
  });
  const admin = await adminBalance('audit', serviceSid);
  expect(admin.code).toBe(1);
  expect(admin.json).toMatchObject({ proven: false, difference: '-0.0500' });
  expect(admin.text).toContain('NOT proven');
});

it('a balance raised without a credit line fails the audit; `balance reconcile` explains it once, audited', async () => {
  const { serviceSid } = await usedAccount();
  await client.send(
    new UpdateCommand({
      TableName: harness.tableName,
      Key: keys.service(serviceSid),
      UpdateExpression: 'ADD balance :units',
      ExpressionAttributeValues: { ':units': 700 },
    }),
  );
  const balance = (await harness.accounts.getService(serviceSid))!.balance;
  expect(await harness.accounts.balanceAudit(serviceSid)).toMatchObject({ difference: -700, creditLines: 2 });
  expect((await adminBalance('audit', serviceSid)).code).toBe(1);

  const reconciled = await adminBalance('reconcile', serviceSid);
  expect(reconciled).toMatchObject({ code: 0, json: { proven: true, creditLines: 3 } });
  expect((await harness.accounts.getService(serviceSid))!.balance).toBe(balance);
  const [record] = await harness.accounts.auditTrail(serviceSid, 1);
  expect(record).toMatchObject({
    action: 'balance.reconcile',
    actor: expect.stringMatching(/^cli:/),
    before: { balance },
    after: { credit: 700, balance },
  });
  // Once: a proven balance leaves nothing more to reconcile.
  await adminBalance('reconcile', serviceSid);
  expect((await harness.accounts.balanceAudit(serviceSid)).creditLines).toBe(3);
});
