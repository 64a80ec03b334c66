/**
 * The admin command against a deployed stack seals webhook secrets with the stack's webhook key secret, read
 * from Secrets Manager (`--secret-arn`, the output WebhookKeySecretArn), and refuses any other key secret.
 * Secrets Manager is played by a local HTTP server the SDK is pointed at (AWS_ENDPOINT_URL_SECRETS_MANAGER).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import { groupKeyRing } from '../../functions/adapters/keyring';
import { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import { runAdminCommand } from '../support/admin-cli';
import { BY_TEST } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

const WEBHOOK_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:WebhookKey-abc';
const CARRIER_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:CarrierKey-abc';
const webhookRoot = randomBytes(32).toString('base64url');
const SECRETS: Record<string, string> = {
  [WEBHOOK_ARN]: JSON.stringify({ purpose: 'webhook', key: webhookRoot }),
  [CARRIER_ARN]: JSON.stringify({ purpose: 'carrier', key: randomBytes(32).toString('base64url') }),
};

let server: Server;
const asked: string[] = [];
const savedEnv = { ...process.env };
let table: TestTable;
let serviceSid: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const id = (JSON.parse(body) as { SecretId: string }).SecretId;
      asked.push(`${String(req.headers['x-amz-target'])} ${id}`);
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      const value = SECRETS[id];
      if (value === undefined) {
        res.statusCode = 400;
        res.end(JSON.stringify({ __type: 'ResourceNotFoundException', message: 'no such secret' }));
        return;
      }
      res.end(JSON.stringify({ ARN: id, Name: id.split(':').pop(), SecretString: value }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
  delete process.env.AWS_PROFILE;

  table = await freshTable('admin-keys');
  serviceSid = (
    await dynamoAccounts(table.documents, table.name).createService(BY_TEST, {
      name: 'Keys',
      balance: 0,
      channels: ['sms'],
    })
  ).sid;
}, 30_000);

afterAll(async () => {
  process.env = savedEnv;
  table?.close();
  await new Promise((resolve) => server.close(resolve));
});

/** No master key: the command must find the key secret it seals with. */
const admin = (args: string[], env: Record<string, string> = {}) =>
  runAdminCommand(args, { tableName: table.name }, { env });

test('webhook add --secret-arn seals with the webhook key secret: the sender, holding only that key, opens it', async () => {
  const run = await admin([
    'webhook',
    'add',
    serviceSid,
    'http://127.0.0.1:9/hooks',
    '--secret-arn',
    WEBHOOK_ARN,
    '--json',
  ]);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  expect(asked).toEqual([`secretsmanager.GetSecretValue ${WEBHOOK_ARN}`]);
  const printed = JSON.parse(run.stdout) as { endpointSid: string; secret: string };
  const endpoint = await new DynamoWebhookEndpoints(table.documents, table.name).getEndpoint(
    serviceSid,
    printed.endpointSid,
  );
  // What the WebhookSender does with its ring (webhook key only).
  const vault = new WebhookSecretVault(groupKeyRing({ webhook: webhookRoot }));
  expect(vault.open(serviceSid, printed.endpointSid, endpoint!.sealedSecret)).toBe(printed.secret);
});

test('OTP_WEBHOOK_SECRET_ARN names the same secret', async () => {
  asked.length = 0;
  const run = await admin(['webhook', 'add', serviceSid, 'http://127.0.0.1:9/other', '--json'], {
    OTP_WEBHOOK_SECRET_ARN: WEBHOOK_ARN,
  });
  expect(run.code).toBe(0);
  expect(asked).toEqual([`secretsmanager.GetSecretValue ${WEBHOOK_ARN}`]);
});

test('another key secret is refused before anything is written', async () => {
  const before = (await new DynamoWebhookEndpoints(table.documents, table.name).listEndpoints(serviceSid))
    .length;
  const run = await admin([
    'webhook',
    'add',
    serviceSid,
    'http://127.0.0.1:9/x',
    '--secret-arn',
    CARRIER_ARN,
  ]);
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(/holds the carrier key, not the webhook key.*WebhookKeySecretArn/);
  expect(
    (await new DynamoWebhookEndpoints(table.documents, table.name).listEndpoints(serviceSid)).length,
  ).toBe(before);
});

test('without a secret or master key the command says which output to pass', async () => {
  const run = await admin(['webhook', 'add', serviceSid, 'http://127.0.0.1:9/y']);
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(/WebhookKeySecretArn.*OTP_WEBHOOK_SECRET_ARN/);
});
