import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import {
  KEY_GROUPS,
  KEY_PURPOSES,
  deferredKeyRing,
  groupKeyRing,
  keyGroupOf,
  keySecretRoot,
  masterKeyRing,
  type KeyGroup,
  type KeyRing,
} from '../../functions/adapters/keyring';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { jsonLogger } from '../../functions/adapters/logger';
import { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import { buildConsoleDeps } from '../../functions/wiring/console';
import { loadKeyRing } from '../../functions/runtime';

const SID = 'VE0123456789abcdef0123456789abcdef';
const MASTER = 'master-key-for-tests-0123456789abcdef';
const root = (group: KeyGroup) => `${group}-root-0123456789abcdef0123456789abcdef`;
const secretValue = (group: string, key = root(group as KeyGroup)) => JSON.stringify({ purpose: group, key });

/**
 * Secrets Manager on loopback, speaking its wire protocol (awsJson1_1) for `GetSecretValue` and
 * `BatchGetSecretValue` from a map of ARN to value, recording each request as the client put it on the wire.
 * A secret not in the map is refused as AWS refuses one the role may not read.
 */
async function fakeSecretsManager(values: Record<string, string>) {
  const requests: { target: string; body: Record<string, unknown> }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target']);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      requests.push({ target, body });
      const entry = (arn: string) => ({ ARN: arn, Name: arn.split(':').pop(), SecretString: values[arn] });
      const denied = (id: string) => ({
        SecretId: id,
        ErrorCode: 'AccessDeniedException',
        Message: `not authorized to read ${id}`,
      });
      let status = 200;
      let answer: unknown;
      if (target === 'secretsmanager.GetSecretValue') {
        const id = body.SecretId as string;
        if (values[id] === undefined) {
          status = 400;
          answer = { __type: 'AccessDeniedException', message: `not authorized to read ${id}` };
        } else answer = entry(id);
      } else {
        const ids = body.SecretIdList as string[];
        // Answered in another order than asked: nothing may rely on the order.
        answer = {
          SecretValues: ids
            .filter((id) => values[id] !== undefined)
            .reverse()
            .map(entry),
          Errors: ids.filter((id) => values[id] === undefined).map(denied),
        };
      }
      response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new SecretsManagerClient({
    region: 'eu-west-1',
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  servers.push(server);
  return { client, requests };
}
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

describe('key rings', () => {
  it('a master-key ring keeps every key of before: data sealed by a master-key vault opens with it', () => {
    const sealed = new CryptoCodeVault(MASTER).seal(SID, '123456');
    const vault = new CryptoCodeVault(masterKeyRing(MASTER));
    expect(vault.open(SID, sealed)).toBe('123456');
    expect(vault.hash(SID, '123456')).toBe(new CryptoCodeVault(MASTER).hash(SID, '123456'));
    const webhookSealed = new WebhookSecretVault(MASTER).seal('VA1', 'WH1', 'whsec_x');
    expect(new WebhookSecretVault(masterKeyRing(MASTER)).open('VA1', 'WH1', webhookSealed)).toBe('whsec_x');
  });

  it('group roots equal to the master key give the same keys (a deployment can move its master key into them)', () => {
    const roots = Object.fromEntries(Object.keys(KEY_GROUPS).map((group) => [group, MASTER]));
    const ring = groupKeyRing(roots);
    for (const purpose of KEY_PURPOSES)
      expect(ring.key(purpose).equals(masterKeyRing(MASTER).key(purpose))).toBe(true);
  });

  it('every purpose belongs to exactly one group', () => {
    for (const purpose of KEY_PURPOSES) {
      const groups = Object.values(KEY_GROUPS).filter((group) =>
        (group.purposes as readonly string[]).includes(purpose),
      );
      expect(groups).toHaveLength(1);
      expect(KEY_GROUPS[keyGroupOf(purpose)]).toBe(groups[0]);
    }
  });

  it('a ring holds only its groups: another purpose throws, naming the secret it was not given', () => {
    const ring = groupKeyRing({ codeHash: root('codeHash') });
    expect(ring.key('code-hash')).toHaveLength(32);
    expect(() => ring.key('code-encryption')).toThrow(/code-encryption.*OTP_CODE_SEAL_SECRET_ARN/);
    expect(() => ring.key('webhook-secrets')).toThrow(/OTP_WEBHOOK_SECRET_ARN/);
    expect(() => groupKeyRing({}).key('carrier-token')).toThrow(/OTP_CARRIER_SECRET_ARN/);
  });

  it('a vault asks for each key on first use: hashing needs no seal key, opening no hash key', () => {
    const sealer = new CryptoCodeVault(groupKeyRing({ codeSeal: root('codeSeal') }));
    const sealed = sealer.seal(SID, '654321');
    expect(sealer.open(SID, sealed)).toBe('654321');
    expect(() => sealer.hash(SID, '654321')).toThrow(/code-hash/);

    const hasher = new CryptoCodeVault(groupKeyRing({ codeHash: root('codeHash') }));
    expect(hasher.hash(SID, '654321')).toMatch(/^[\w-]{43}$/);
    expect(() => hasher.open(SID, sealed)).toThrow(/code-encryption/);
  });

  it('different groups are independent keys: one group root opens nothing of another', () => {
    const a = new CryptoCodeVault(groupKeyRing({ codeSeal: root('codeSeal') }));
    const b = new CryptoCodeVault(groupKeyRing({ codeSeal: root('codeHash') }));
    expect(() => b.open(SID, a.seal(SID, '111111'))).toThrow();
  });
});

describe('key secrets', () => {
  it('takes the key of a secret of the right group', () => {
    expect(keySecretRoot('carrier', secretValue('carrier'), 'arn:c')).toBe(root('carrier'));
  });

  it.each([
    ['another group', secretValue('codeHash'), /holds the codeHash key, not the carrier key/],
    ['the old master-key format', JSON.stringify({ masterKey: MASTER }), /holds the undefined key/],
    ['no JSON', 'plain', /not the JSON of a key secret/],
    ['no key', JSON.stringify({ purpose: 'carrier' }), /has no key/],
    ['a short key', secretValue('carrier', 'short'), /has no key/],
  ])('refuses %s', (_case, value, message) => {
    expect(() => keySecretRoot('carrier', value, 'arn:c')).toThrow(message);
  });
});

describe('loadKeyRing (the Lambda cold start)', () => {
  const ARN = (name: string) => `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${name}-AbCdEf`;

  it('reads exactly the key secrets the environment names, two in one BatchGetSecretValue, and holds only their purposes', async () => {
    const secrets = await fakeSecretsManager({
      [ARN('seal')]: secretValue('codeSeal'),
      [ARN('carrier')]: secretValue('carrier'),
      [ARN('hash')]: secretValue('codeHash'),
      [ARN('webhook')]: secretValue('webhook'),
    });
    const ring = await loadKeyRing(
      {
        [KEY_GROUPS.codeSeal.env]: ARN('seal'),
        [KEY_GROUPS.carrier.env]: ARN('carrier'),
        // Ignored when key secrets are named: on AWS nothing falls back to a master key.
        OTP_MASTER_KEY: MASTER,
      },
      secrets.client,
    );
    expect(secrets.requests).toEqual([
      {
        target: 'secretsmanager.BatchGetSecretValue',
        body: { SecretIdList: [ARN('seal'), ARN('carrier')] },
      },
    ]);
    const sealed = new CryptoCodeVault(groupKeyRing({ codeSeal: root('codeSeal') })).seal(SID, '222222');
    expect(new CryptoCodeVault(ring).open(SID, sealed)).toBe('222222');
    expect(
      ring.key('receipt:carrier').equals(groupKeyRing({ carrier: root('carrier') }).key('receipt:carrier')),
    ).toBe(true);
    expect(() => ring.key('code-hash')).toThrow(/OTP_CODE_HASH_SECRET_ARN/);
    expect(() => ring.key('webhook-secrets')).toThrow(/OTP_WEBHOOK_SECRET_ARN/);
  });

  it('one key secret: one GetSecretValue (no batch permission needed)', async () => {
    const secrets = await fakeSecretsManager({ [ARN('hash')]: secretValue('codeHash') });
    const ring = await loadKeyRing({ [KEY_GROUPS.codeHash.env]: ARN('hash') }, secrets.client);
    expect(secrets.requests).toEqual([
      { target: 'secretsmanager.GetSecretValue', body: { SecretId: ARN('hash') } },
    ]);
    expect(ring.key('code-hash').equals(groupKeyRing({ codeHash: root('codeHash') }).key('code-hash'))).toBe(
      true,
    );
  });

  it('fails the cold start, naming the secret, when the batch answers a secret with an error', async () => {
    const secrets = await fakeSecretsManager({ [ARN('hash')]: secretValue('codeHash') });
    await expect(
      loadKeyRing(
        { [KEY_GROUPS.codeHash.env]: ARN('hash'), [KEY_GROUPS.codeSeal.env]: ARN('seal') },
        secrets.client,
      ),
    ).rejects.toThrow(`Reading the key secrets failed: ${ARN('seal')}: AccessDeniedException`);
  });

  it('fails the cold start when a named secret is of another group (a wrong ARN in the environment)', async () => {
    const secrets = await fakeSecretsManager({
      [ARN('hash')]: secretValue('codeHash'),
      [ARN('seal')]: secretValue('codeSeal'),
    });
    await expect(loadKeyRing({ [KEY_GROUPS.webhook.env]: ARN('hash') }, secrets.client)).rejects.toThrow(
      /holds the codeHash key, not the webhook key/,
    );
    // Swapped in the batch: each value is matched to the ARN it came from, not to its place in the answer.
    await expect(
      loadKeyRing(
        { [KEY_GROUPS.codeHash.env]: ARN('seal'), [KEY_GROUPS.codeSeal.env]: ARN('hash') },
        secrets.client,
      ),
    ).rejects.toThrow(/holds the codeSeal key, not the codeHash key/);
  });

  it('without key secrets: every purpose from OTP_MASTER_KEY (local stack), or none at all', async () => {
    const secrets = await fakeSecretsManager({});
    const local = await loadKeyRing({ OTP_MASTER_KEY: MASTER }, secrets.client);
    for (const purpose of KEY_PURPOSES)
      expect(local.key(purpose).equals(masterKeyRing(MASTER).key(purpose))).toBe(true);
    const none = await loadKeyRing({}, secrets.client);
    expect(() => none.key('code-hash')).toThrow(/no code-hash key/);
    expect(secrets.requests).toEqual([]);
  });
});

describe('deferredKeyRing (key secrets read beside the first request)', () => {
  it('starts the read unasked once the turn that built it is done, refuses a key before it is in, then gives the read ring’s keys', async () => {
    let reads = 0;
    let keysIn!: () => void;
    const read = new Promise<KeyRing>((resolve) => (keysIn = () => resolve(masterKeyRing(MASTER))));
    const ring = deferredKeyRing(() => (reads++, read));
    // Not in the building turn: the first request's own round trips go out first.
    await Promise.resolve();
    expect(reads).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toBe(1);
    expect(() => ring.key('code-hash')).toThrow(/before the key secrets were read/);
    keysIn();
    await ring.ready();
    expect(ring.key('code-hash')).toEqual(masterKeyRing(MASTER).key('code-hash'));
    await ring.ready();
    expect(reads).toBe(1);
  });

  it('not eager: reads at the first ready() only (the console, which rarely needs its key)', async () => {
    let reads = 0;
    const ring = deferredKeyRing(() => (reads++, Promise.resolve(masterKeyRing(MASTER))), { eager: false });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toBe(0);
    await ring.ready();
    await ring.ready();
    expect(reads).toBe(1);
    expect(ring.key('webhook-secrets')).toEqual(masterKeyRing(MASTER).key('webhook-secrets'));
  });

  it('reads again after a failed read, at the next ready()', async () => {
    const outcomes: (() => Promise<KeyRing>)[] = [
      () => Promise.reject(new Error('Secrets Manager unreachable')),
      () => Promise.resolve(masterKeyRing(MASTER)),
    ];
    let reads = 0;
    const ring = deferredKeyRing(() => outcomes[reads++]!());
    await expect(ring.ready()).rejects.toThrow('Secrets Manager unreachable');
    await ring.ready();
    expect(reads).toBe(2);
    expect(ring.key('code-encryption')).toEqual(masterKeyRing(MASTER).key('code-encryption'));
  });
});

describe("the console's webhook key", () => {
  it('is waited for only when a webhook secret is sealed, and then seals with the key read', async () => {
    let keysIn!: () => void;
    const read = new Promise<KeyRing>((resolve) => (keysIn = () => resolve(masterKeyRing(MASTER))));
    const deps = buildConsoleDeps(
      {},
      { client: createDocumentClient({ endpoint: 'http://127.0.0.1:9' }), tableName: 'unused' },
      deferredKeyRing(() => read),
      jsonLogger(() => undefined),
      () => Promise.resolve({ files: {} }),
    );
    let vault: WebhookSecretVault | undefined;
    const asked = deps.webhookVault().then((ready) => (vault = ready));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(vault).toBeUndefined();
    keysIn();
    await asked;
    const sealed = vault!.seal('VA1', 'WH1', 'whsec_test');
    expect(new WebhookSecretVault(MASTER).open('VA1', 'WH1', sealed)).toBe('whsec_test');
  });
});
