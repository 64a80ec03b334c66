/**
 * `npm run admin`: each command changes what the API does, checked over HTTP against the same table.
 * The command runs in-process through `runAdmin` against DynamoDB Local with `--endpoint/--table`.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { HIGH_RISK_COUNTRIES, defaultAllowedCountries } from '../../functions/core/guard/high-risk-countries';
import type { Accounts } from '../../functions/core/accounts/accounts';
import type { AdminOptions } from '../../scripts/admin/cli';
import { COMMANDS } from '../../scripts/admin/commands';
import type { CommandContext } from '../../scripts/admin/framework';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { adminJson as adminJsonOn, runAdminCommand } from '../support/admin-cli';
import {
  BY_TEST,
  dynamoEndpoint,
  eventually,
  startHarness,
  type Account,
  type ApiClient,
  type Harness,
} from '../support/harness';

const GB_MOBILE = '+447400123456';
const NG_MOBILE = '+2348031234567';
const CUBA = '+5352123456'; // served, but no list price

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.close());

/**
 * Runs a command against the test table, as `npm run admin -- ...args --endpoint ... --table ...` would, with the
 * stack's master key as an operator of another DynamoDB Local passes it (new keys are tagged with it).
 */
const admin = (
  args: string[],
  { withTarget = true, ...options }: AdminOptions & { withTarget?: boolean } = {},
) => runAdminCommand(args, withTarget ? harness : undefined, options);

/** Runs a command with `--json`, expects success and returns the parsed output. */
const adminJson = <T = Record<string, unknown>>(args: string[]) => adminJsonOn<T>(args, harness);

interface Created {
  serviceSid: string;
  apiKey: string;
  keyId: string;
  balance: string;
  channels: string[];
  defaultTemplate: { sid: string; body: string } | null;
}

async function createService(extra: string[] = []): Promise<Created & Account> {
  return adminJson<Created>(['service', 'create', '--name', 'Acme', '--balance', '25', ...extra]);
}

/** The text of the first message delivered to a number; delivery runs after the 201, so wait for it. */
const deliveredBody = (api: ApiClient, to: string): Promise<string> =>
  eventually(async () => (await api.messages(to))[0]?.body);

/** A number no other test in this file sends to, so the per-number limits of one test do not touch another. */
let counter = 0;
const freshUsNumber = () => `+1415555${String(2000 + ++counter).padStart(4, '0')}`;

describe('service create', () => {
  it('creates a service whose issued key sends over HTTP, with the balance and default template asked for', async () => {
    const created = await createService(['--template', 'Your Acme code is {code}']);
    expect(created.serviceSid).toMatch(/^VA[0-9a-f]{32}$/);
    expect(created.apiKey).toMatch(/^otpk2_/);
    expect(created).toMatchObject({
      balance: '25.0000',
      channels: ['sms', 'whatsapp', 'viber', 'rcs', 'sna'],
    });

    const to = freshUsNumber();
    const response = await harness.client(created).send({ To: to });
    expect(response.status).toBe(201);
    expect(await deliveredBody(harness.client(created), to)).toMatch(/^Your Acme code is \d{6}$/);
    expect((await harness.accounts.getService(created.serviceSid))?.balance).toBe(25 * 10_000 - 500);
  });

  it('prints the SID and the key for a person, once', async () => {
    const run = await admin(['service', 'create', '--name', 'Readable Co', '--balance', '1.5']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Service SID\s+VA[0-9a-f]{32}/);
    expect(run.stdout).toMatch(/API key\s+otpk2_\S+\s+\(shown once/);
    expect(run.stdout).toContain('1.5000 USD');
  });

  it('without a default template, sends need a TemplateSid until one is added as default', async () => {
    const created = await createService(['--no-default-template']);
    expect(created.defaultTemplate).toBeNull();
    const api = harness.client(created);
    expect((await api.send({ To: freshUsNumber() })).body).toMatchObject({ code: 'no_default_template' });

    const template = await adminJson<{ sid: string; default: boolean }>([
      'template',
      'add',
      created.serviceSid,
      'Acme: {code}',
      '--default',
    ]);
    expect(template).toMatchObject({ sid: expect.stringMatching(/^HX/), default: true });
    const to = freshUsNumber();
    expect((await api.send({ To: to })).status).toBe(201);
    expect(await deliveredBody(api, to)).toMatch(/^Acme: \d{6}$/);
  });

  it('enables only the channels given', async () => {
    const created = await createService(['--channels', 'sms']);
    expect(created.channels).toEqual(['sms']);
    const response = await harness.client(created).send({ To: freshUsNumber() });
    expect(response.body).toMatchObject({ channel: 'sms' });
  });

  it('without the deployment key, service create makes nothing and says which key it needs', async () => {
    const before = (await harness.accounts.store.listAllServices()).length;
    const run = await admin(['service', 'create', '--name', 'Keyless'], { env: {} });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('ApiKeyTagSecretArn');
    expect(await harness.accounts.store.listAllServices()).toHaveLength(before);
  });

  it('--no-key creates the service without a key', async () => {
    const created = await createService(['--no-key']);
    expect(created.apiKey).toBeUndefined();
    const keys = await adminJson<{ keys: unknown[] }>(['key', 'list', created.serviceSid]);
    expect(keys.keys).toEqual([]);
  });
});

describe('API keys', () => {
  it('issues a working key and lists it without revealing it', async () => {
    const created = await createService();
    const issued = await adminJson<{ apiKey: string; keyId: string }>(['key', 'issue', created.serviceSid]);
    expect(issued.apiKey).not.toBe(created.apiKey);
    const api = harness.client({ serviceSid: created.serviceSid, apiKey: issued.apiKey });
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);

    const list = await admin(['key', 'list', created.serviceSid, '--json']);
    expect(list.stdout).not.toContain(issued.apiKey);
    const { keys } = JSON.parse(list.stdout) as {
      keys: { keyId: string; active: boolean; lastUsedAt: string | null }[];
    };
    expect(keys.map((key) => key.keyId).sort()).toEqual([created.keyId, issued.keyId].sort());
    expect(keys.every((key) => key.active)).toBe(true);
    // The key that sent was last used in the minute of its window; the other never.
    const used = keys.find((key) => key.keyId === issued.keyId)!.lastUsedAt;
    expect(used).toMatch(/:00\.000Z$/);
    expect(keys.find((key) => key.keyId === created.keyId)!.lastUsedAt).toBeNull();
    const text = (await admin(['key', 'list', created.serviceSid])).stdout.split('\n');
    expect(text[1]).toMatch(/^Key id +Created +Last used +Status$/);
    expect(text.find((line) => line.startsWith(issued.keyId))).toContain(` ${used!} `);
    expect(text.find((line) => line.startsWith(created.keyId))).toMatch(/ never +active$/);
  });

  it('a revoked key gets 401 (a key the API never cached)', async () => {
    const created = await createService();
    const revoked = await adminJson<{ revokedAt: string; alreadyRevoked: boolean }>([
      'key',
      'revoke',
      created.serviceSid,
      created.keyId,
    ]);
    expect(revoked.alreadyRevoked).toBe(false);
    const response = await harness.client(created).send({ To: freshUsNumber() });
    expect(response.status).toBe(401);

    const { keys } = await adminJson<{ keys: { active: boolean; revokedAt: string }[] }>([
      'key',
      'list',
      created.serviceSid,
    ]);
    expect(keys).toEqual([expect.objectContaining({ active: false, revokedAt: revoked.revokedAt })]);
    // Revoking again changes nothing and says so.
    const again = await adminJson(['key', 'revoke', created.serviceSid, created.keyId]);
    expect(again).toMatchObject({ alreadyRevoked: true, revokedAt: revoked.revokedAt });
  });

  it('a key in use stops working at once when revoked', async () => {
    const created = await createService();
    const api = harness.client(created);
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);
    expect((await admin(['key', 'revoke', created.serviceSid, created.keyId])).code).toBe(0);
    expect((await api.send({ To: freshUsNumber() })).status).toBe(401);
  });

  it('key revoke takes a whole key id, never a prefix', async () => {
    const created = await createService();
    const run = await admin(['key', 'revoke', created.serviceSid, created.keyId.slice(0, 8)]);
    expect(run.code).not.toBe(0);
    expect((await harness.client(created).send({ To: freshUsNumber() })).status).toBe(201);
  });

  it('revoking an unknown key id fails with exit code 1', async () => {
    const created = await createService();
    const run = await admin(['key', 'revoke', created.serviceSid, '0123456789ab']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('No API key 0123456789ab');
  });
});

describe('balance and charges', () => {
  it('topup adds to the balance, and balance show reads it', async () => {
    const created = await createService();
    expect(await adminJson(['balance', 'topup', created.serviceSid, '10.0050'])).toMatchObject({
      added: '10.0050',
      balance: '35.0050',
    });
    expect(await adminJson(['balance', 'show', created.serviceSid])).toEqual({
      serviceSid: created.serviceSid,
      balance: '35.0050',
      currency: 'USD',
    });
    const run = await admin(['balance', 'show', created.serviceSid]);
    expect(run.stdout).toBe('Balance of Acme: 35.0050 USD');
    // With --key, running it again (after an error, say) credits nothing more, and says nothing was added.
    const topUp = ['balance', 'topup', created.serviceSid, '5', '--key', 'invoice-2041'];
    expect(await adminJson(topUp)).toMatchObject({
      added: '5.0000',
      alreadyCredited: false,
      balance: '40.0050',
    });
    expect(await adminJson(topUp)).toMatchObject({
      added: '0.0000',
      alreadyCredited: true,
      balance: '40.0050',
    });
    expect((await admin(topUp)).stdout).toBe(
      'Key invoice-2041 was used by an earlier top-up of 5.0000 USD: nothing added. Balance: 40.0050 USD',
    );
  });

  it('a top-up lets a refused send through', async () => {
    const created = await adminJson<Created>(['service', 'create', '--name', 'Poor', '--balance', '0.01']);
    const api = harness.client(created);
    expect((await api.send({ To: freshUsNumber() })).body).toMatchObject({ code: 'insufficient_funds' });
    await adminJson(['balance', 'topup', created.serviceSid, '1']);
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);
  });

  it('charges lists one line per accepted send with the total', async () => {
    const created = await createService();
    const api = harness.client(created);
    const first = await api.send({ To: freshUsNumber() });
    const second = await api.send({ To: freshUsNumber() });
    const ledger = await adminJson<{
      count: number;
      total: string;
      charges: { verificationSid: string; amount: string }[];
    }>(['charges', created.serviceSid]);
    expect(ledger.count).toBe(2);
    expect(ledger.total).toBe('0.1000');
    expect(ledger.charges.map((line) => line.verificationSid).sort()).toEqual(
      [first.body.sid, second.body.sid].sort(),
    );
    expect(ledger.charges.every((line) => line.amount === '0.0500')).toBe(true);
    expect((await admin(['charges', created.serviceSid])).stdout).toContain('2 charges, total 0.1000 USD');
  });
});

describe('templates', () => {
  it('lists templates, marks the default and switches it', async () => {
    const created = await createService();
    const other = await adminJson<{ sid: string }>(['template', 'add', created.serviceSid, 'Other {code}']);
    const listed = await adminJson<{
      defaultTemplateSid: string;
      templates: { sid: string; default: boolean }[];
    }>(['template', 'list', created.serviceSid]);
    expect(listed.templates).toHaveLength(2);
    expect(listed.defaultTemplateSid).toBe(created.defaultTemplate?.sid);
    expect(listed.templates.find((t) => t.sid === other.sid)?.default).toBe(false);

    await adminJson(['template', 'default', created.serviceSid, other.sid]);
    const to = freshUsNumber();
    expect((await harness.client(created).send({ To: to })).status).toBe(201);
    expect(await deliveredBody(harness.client(created), to)).toMatch(/^Other \d{6}$/);

    await adminJson(['template', 'clear-default', created.serviceSid]);
    expect((await harness.client(created).send({ To: freshUsNumber() })).body).toMatchObject({
      code: 'no_default_template',
    });
  });

  it('refuses an unknown template as default (exit 1) and a text without {code} (exit 2)', async () => {
    const created = await createService();
    const unknown = await admin(['template', 'default', created.serviceSid, `HX${'0'.repeat(32)}`]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No template');
    const noCode = await admin(['template', 'add', created.serviceSid, 'No placeholder']);
    expect(noCode.code).toBe(2);
    expect(noCode.stderr).toContain('{code}');
  });

  it('removes a template (a send naming it: unknown_template), never the default one', async () => {
    const created = await createService();
    const other = await adminJson<{ sid: string }>(['template', 'add', created.serviceSid, 'Other {code}']);
    expect(await adminJson(['template', 'remove', created.serviceSid, other.sid])).toEqual({
      serviceSid: created.serviceSid,
      removed: other.sid,
    });
    const send = await harness.client(created).send({ To: freshUsNumber(), TemplateSid: other.sid });
    expect([send.status, send.body.code]).toEqual([404, 'unknown_template']);
    const again = await admin(['template', 'remove', created.serviceSid, other.sid]);
    expect(again.code).toBe(1);
    const theDefault = await admin(['template', 'remove', created.serviceSid, created.defaultTemplate!.sid]);
    expect([theDefault.code, theDefault.stderr]).toEqual([
      1,
      expect.stringContaining('is the default template'),
    ]);
    expect(
      (await adminJson<{ templates: unknown[] }>(['template', 'list', created.serviceSid])).templates,
    ).toHaveLength(1);
  });
});

describe('delivery rules', () => {
  it('block-country makes a send 403 blocked_by_policy; unblock-country lifts it', async () => {
    const created = await createService();
    const api = harness.client(created);
    const blocked = await adminJson(['rules', 'block-country', created.serviceSid, 'gb']);
    expect(blocked).toMatchObject({ changed: true, blockedCountries: ['GB'], blockedPrefixes: [] });
    const refused = await api.send({ To: GB_MOBILE });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'blocked_by_policy' });
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);

    expect(await adminJson(['rules', 'block-country', created.serviceSid, 'GB'])).toMatchObject({
      changed: false,
    });
    await adminJson(['rules', 'unblock-country', created.serviceSid, 'GB']);
    expect((await api.send({ To: GB_MOBILE })).status).toBe(201);
  });

  it('block-prefix blocks numbers starting with it, and only those', async () => {
    const created = await createService();
    const api = harness.client(created);
    await adminJson(['rules', 'block-prefix', created.serviceSid, '+1415555']);
    expect((await api.send({ To: freshUsNumber() })).body).toMatchObject({ code: 'blocked_by_policy' });
    expect((await api.send({ To: '+12125550100' })).status).toBe(201);
    expect(await adminJson(['rules', 'show', created.serviceSid])).toEqual({
      serviceSid: created.serviceSid,
      blockedCountries: [],
      blockedPrefixes: ['+1415555'],
      allowedCountries: defaultAllowedCountries(),
      excludedHighRiskCountries: expect.any(Array),
    });
    await adminJson(['rules', 'unblock-prefix', created.serviceSid, '+1415555']);
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);
  });

  it('block-prefix past 100 prefixes fails and changes nothing, as the console refuses more than 100', async () => {
    const created = await createService();
    const prefixes = Array.from({ length: 100 }, (_, i) => `+1999${String(i).padStart(3, '0')}`);
    await harness.accounts.setRules(BY_TEST, created.serviceSid, { blockedPrefixes: prefixes });
    const refused = await admin(['rules', 'block-prefix', created.serviceSid, '+1998']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('at most 100 blocked prefixes');
    const rules = async () => (await harness.accounts.getService(created.serviceSid))!.rules.blockedPrefixes;
    expect(await rules()).toEqual(prefixes);
    // The hundredth can be swapped for another, and one more country blocked.
    await adminJson(['rules', 'unblock-prefix', created.serviceSid, prefixes[0]!]);
    await adminJson(['rules', 'block-prefix', created.serviceSid, '+1998']);
    await adminJson(['rules', 'block-country', created.serviceSid, 'GB']);
    expect(await rules()).toHaveLength(100);
  });

  it('a service holding more than 100 prefixes from before the limit can still remove them', async () => {
    const created = await createService();
    const prefixes = Array.from({ length: 102 }, (_, i) => `+1999${String(i).padStart(3, '0')}`).sort();
    const documents = createDocumentClient({ endpoint: dynamoEndpoint() });
    await documents.send(
      new UpdateCommand({
        TableName: harness.tableName,
        Key: keys.service(created.serviceSid),
        UpdateExpression: 'SET blocked_prefixes = :prefixes',
        ExpressionAttributeValues: { ':prefixes': prefixes },
      }),
    );
    documents.destroy();
    await adminJson(['rules', 'unblock-prefix', created.serviceSid, prefixes[0]!]);
    expect((await harness.accounts.getService(created.serviceSid))!.rules.blockedPrefixes).toEqual(
      prefixes.slice(1),
    );
    expect((await admin(['rules', 'block-prefix', created.serviceSid, prefixes[0]!])).code).toBe(2);
  });

  it('rules clear removes every blocked country and prefix, and keeps the allow-list', async () => {
    const created = await createService();
    await adminJson(['rules', 'block-country', created.serviceSid, 'US']);
    await adminJson(['rules', 'block-prefix', created.serviceSid, '+4470']);
    await adminJson(['rules', 'clear', created.serviceSid]);
    expect((await harness.accounts.getService(created.serviceSid))?.rules).toEqual({
      blockedCountries: [],
      blockedPrefixes: [],
      allowedCountries: defaultAllowedCountries(),
    });
    expect((await harness.client(created).send({ To: freshUsNumber() })).status).toBe(201);
  });

  it('a new service leaves the high-risk countries out; the allow-list commands change what sends', async () => {
    const created = await createService();
    const api = harness.client(created);
    const shown = await adminJson<{
      allowedCountries: string[];
      excludedHighRiskCountries: { country: string }[];
    }>(['rules', 'show', created.serviceSid]);
    expect(shown.allowedCountries).not.toContain('NG');
    expect(shown.excludedHighRiskCountries.map((e) => e.country)).toEqual(['AZ', 'BD', 'NG', 'PK']);
    expect((await admin(['service', 'show', created.serviceSid])).stdout).toMatch(
      /High risk left out\s+AZ, BD, NG, PK: high risk for SMS pumping/,
    );
    const refused = await api.send({ To: NG_MOBILE });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      code: 'blocked_by_policy',
      message: 'This service does not send to this country.',
    });

    expect(await adminJson(['rules', 'allow-country', created.serviceSid, 'ng'])).toMatchObject({
      changed: true,
    });
    expect((await api.send({ To: NG_MOBILE })).status).toBe(201);
    await adminJson(['rules', 'disallow-country', created.serviceSid, 'US']);
    expect((await api.send({ To: freshUsNumber() })).body).toMatchObject({ code: 'blocked_by_policy' });

    expect(await adminJson(['rules', 'set-allowed', created.serviceSid, 'GB,FR'])).toMatchObject({
      allowedCountries: ['FR', 'GB'],
    });
    expect(await adminJson(['rules', 'set-allowed', created.serviceSid, '-'])).toMatchObject({
      allowedCountries: [],
    });
    expect((await harness.accounts.getService(created.serviceSid))?.rules.allowedCountries).toEqual([]);
    expect(await adminJson(['rules', 'allow-all', created.serviceSid])).toMatchObject({
      allowedCountries: null,
      excludedHighRiskCountries: [],
    });
    expect((await harness.accounts.getService(created.serviceSid))?.rules.allowedCountries).toBeUndefined();
    expect((await api.send({ To: freshUsNumber() })).status).toBe(201);
    expect(await adminJson(['rules', 'reset-allowed', created.serviceSid])).toMatchObject({
      changed: true,
      allowedCountries: defaultAllowedCountries(),
    });
    expect((await admin(['rules', 'set-allowed', created.serviceSid, 'GB,JP'])).code).not.toBe(0);
  });
});

describe('one-entry edits over a change made meanwhile', () => {
  /**
   * Runs `words` on the service in-process, its first read of the service followed at once by `meanwhile` (a
   * console member's change landing between the command's read and its write).
   */
  async function runBetween(words: string, args: string[], meanwhile: () => Promise<unknown>) {
    const found = COMMANDS.find((c) => c.words.join(' ') === words)!;
    let reads = 0;
    const accounts = Object.create(harness.accounts) as Accounts;
    accounts.getService = async (sid: string) => {
      const service = await harness.accounts.getService(sid);
      if (reads++ === 0) await meanwhile();
      return service;
    };
    const context = { accounts, change: { actor: 'cli:test' }, targetDescription: 'test' } as CommandContext;
    return found.prepare(args, {})(context);
  }
  const member = { actor: 'console:member' };

  it('safelist add keeps an entry the console added between its read and its write', async () => {
    const { serviceSid } = await createService();
    await runBetween('guard safelist add', [serviceSid, '+447400111'], async () => {
      const service = (await harness.accounts.getService(serviceSid))!;
      await harness.accounts.setGuardSafeList(member, serviceSid, ['+447400222'], service.guardVersion ?? 0);
    });
    const { guard } = (await harness.accounts.getService(serviceSid))!;
    expect(guard?.safeList?.sort()).toEqual(['+447400111', '+447400222']);
  });

  it('block-prefix and disallow-country keep the rules the console changed between their read and write', async () => {
    const { serviceSid } = await createService();
    const memberSets = (lists: Parameters<Accounts['setRules']>[2]) => async () => {
      const service = (await harness.accounts.getService(serviceSid))!;
      await harness.accounts.setRules(member, serviceSid, lists, service.rulesVersion ?? 0);
    };
    await runBetween(
      'rules block-prefix',
      [serviceSid, '+4474001'],
      memberSets({ blockedPrefixes: ['+4474002'] }),
    );
    await runBetween(
      'rules disallow-country',
      [serviceSid, 'GB'],
      memberSets({ allowedCountries: ['GB', 'US', 'DE', 'FR'] }),
    );
    const { rules } = (await harness.accounts.getService(serviceSid))!;
    expect(rules.blockedPrefixes.sort()).toEqual(['+4474001', '+4474002']);
    expect(rules.allowedCountries?.sort()).toEqual(['DE', 'FR', 'US']);
  });
});

describe('prices and channels', () => {
  it('price set makes an unpriced country sendable at that price; price remove makes it unpriceable again', async () => {
    const created = await createService();
    const api = harness.client(created);
    expect((await api.send({ To: CUBA })).body).toMatchObject({ code: 'not_priceable' });

    expect(await adminJson(['price', 'set', created.serviceSid, 'CU', '0.0600'])).toMatchObject({
      country: 'CU',
      price: '0.0600',
      listPrice: null,
    });
    const accepted = await api.send({ To: CUBA });
    expect(accepted.status).toBe(201);
    expect(accepted.body.price).toBe('0.0600');
    const prices = await adminJson<{ prices: { country: string; price: string | null }[] }>([
      'price',
      'list',
      created.serviceSid,
    ]);
    expect(prices.prices).toContainEqual(expect.objectContaining({ country: 'CU', price: '0.0600' }));

    expect(await adminJson(['price', 'remove', created.serviceSid, 'CU'])).toMatchObject({
      removed: true,
      price: null,
    });
    expect((await api.send({ To: CUBA })).body).toMatchObject({ code: 'not_priceable' });
  });

  it('price set replaces a list price', async () => {
    const created = await createService();
    await adminJson(['price', 'set', created.serviceSid, 'us', '0.0123']);
    expect((await harness.client(created).send({ To: freshUsNumber() })).body.price).toBe('0.0123');
  });

  it('channels set changes the channels a send may use', async () => {
    const created = await createService();
    const api = harness.client(created);
    expect(await adminJson(['channels', 'set', created.serviceSid, 'viber'])).toEqual({
      serviceSid: created.serviceSid,
      channels: ['viber'],
    });
    // Viber does not serve the US.
    expect((await api.send({ To: freshUsNumber() })).body).toMatchObject({ code: 'no_eligible_channel' });
    await adminJson(['channels', 'set', created.serviceSid, 'sms, whatsapp']);
    expect((await api.send({ To: freshUsNumber() })).body).toMatchObject({ channel: 'whatsapp' });
  });
});

describe('output, errors and targets', () => {
  it('service show prints the whole service as one JSON value', async () => {
    const created = await createService();
    await adminJson(['price', 'set', created.serviceSid, 'CU', '0.06']);
    await adminJson(['rules', 'block-prefix', created.serviceSid, '+4470']);
    expect(await adminJson(['service', 'show', created.serviceSid])).toEqual({
      serviceSid: created.serviceSid,
      name: 'Acme',
      balance: '25.0000',
      channels: ['sms', 'whatsapp', 'viber', 'rcs', 'sna'],
      defaultTemplate: {
        sid: created.defaultTemplate?.sid,
        body: 'Your Acme verification code is {code}.',
        locale: 'en',
      },
      rules: {
        blockedCountries: [],
        blockedPrefixes: ['+4470'],
        allowedCountries: defaultAllowedCountries(),
      },
      excludedHighRiskCountries: HIGH_RISK_COUNTRIES.map(({ country, name, reason, sources }) => ({
        country,
        name,
        reason,
        sources: sources.map((source) => source.url),
      })),
      prices: { CU: '0.0600' },
      webhookEndpoints: [],
      createdAt: expect.stringMatching(/Z$/),
    });
  });

  it('audit gives money as USD strings, as every other command does', async () => {
    const created = await createService();
    await adminJson(['balance', 'topup', created.serviceSid, '10.0050']);
    await adminJson(['price', 'set', created.serviceSid, 'CU', '0.06']);
    await adminJson(['guard', 'cap', 'set', created.serviceSid, 'GB', '--daily-spend', '2.5']);
    const { records } = await adminJson<{ records: { action: string; before?: unknown; after?: unknown }[] }>(
      ['audit', created.serviceSid],
    );
    const change = (action: string) => records.find((record) => record.action === action);
    expect(change('service.create')?.after).toMatchObject({ balance: '25.0000' });
    expect(change('balance.topup')).toMatchObject({
      before: { balance: '25.0000' },
      after: { credit: '10.0050', balance: '35.0050' },
    });
    expect(change('price.set')).toMatchObject({
      before: { country: 'CU', price: null },
      after: { country: 'CU', price: '0.0600' },
    });
    expect(change('guard.caps')?.after).toMatchObject({ caps: { GB: { dailySpend: '2.5000' } } });
    expect((await admin(['audit', created.serviceSid])).stdout).toContain(
      '{"credit":"10.0050","balance":"35.0050"}',
    );
  });

  it('every human-readable command prints text, not JSON', async () => {
    const created = await createService();
    const run = await admin(['service', 'show', created.serviceSid]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Service SID\s+VA/);
    expect(() => JSON.parse(run.stdout)).toThrow();
  });

  const VA = `VA${'a'.repeat(32)}`;
  it.each([
    ['no command', []],
    ['an unknown command', ['frobnicate']],
    ['an unknown subcommand', ['key', 'frob', VA]],
    ['an unknown option', ['balance', 'show', VA, '--bogus']],
    ['an option of another command', ['balance', 'show', VA, '--name', 'x']],
    ['a missing argument', ['balance', 'topup', VA]],
    ['an extra argument', ['balance', 'show', VA, 'extra']],
    ['a malformed Service SID', ['balance', 'show', 'VA123']],
    ['a malformed amount', ['balance', 'topup', VA, '1.23456']],
    ['a negative amount', ['balance', 'topup', VA, '-5']],
    ['a zero top-up', ['balance', 'topup', VA, '0']],
    ['an unknown channel', ['channels', 'set', VA, 'sms,pigeon']],
    ['an unknown country', ['rules', 'block-country', VA, 'XX']],
    ['a price for an unserved country', ['price', 'set', VA, 'JP', '0.05']],
    ['a malformed prefix', ['rules', 'block-prefix', VA, '4470']],
    ['a malformed template SID', ['template', 'default', VA, 'HX12']],
    ['service create without --name', ['service', 'create']],
    [
      '--template with --no-default-template',
      ['service', 'create', '--name', 'A', '--template', '{code}', '--no-default-template'],
    ],
  ])('exits 2 on %s, with a message and no stack trace', async (_case, args) => {
    const run = await admin(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toBe('');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 on --endpoint without --table', async () => {
    const run = await admin(['balance', 'show', VA, '--endpoint', dynamoEndpoint()], { withTarget: false });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--table');
  });

  it('exits 1 for a service that does not exist', async () => {
    const run = await admin(['balance', 'topup', VA, '5']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`admin: No service ${VA} in table ${harness.tableName} at ${dynamoEndpoint()}`);
  });

  it('exits 1 for a table that does not exist', async () => {
    const run = await admin(
      ['balance', 'show', VA, '--endpoint', dynamoEndpoint(), '--table', 'no-such-table'],
      {
        withTarget: false,
      },
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Table no-such-table not found');
  });

  it('by default targets the running local stack, and says to run npm start when there is none', async () => {
    const none = await admin(['balance', 'show', VA], { withTarget: false, readLocalStack: () => undefined });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('npm start');

    const created = await createService();
    const local = await admin(['balance', 'show', created.serviceSid, '--json'], {
      withTarget: false,
      readLocalStack: () => ({
        baseUrl: harness.stack.url,
        dynamoEndpoint: dynamoEndpoint(),
        tableName: harness.tableName,
      }),
    });
    expect(local.code).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({ balance: '25.0000' });
  });

  it('help lists every command and exits 0; --json help parses', async () => {
    const help = await admin(['help'], { withTarget: false });
    expect(help.code).toBe(0);
    for (const words of [
      'service create',
      'key revoke',
      'balance topup',
      'rules block-prefix',
      'price set',
      'channels set',
    ]) {
      expect(help.stdout).toContain(words);
    }
    const keyHelp = await admin(['key', 'revoke', '--help'], { withTarget: false });
    expect(keyHelp.stdout).toContain('Usage: npm run admin -- key revoke <VA> <keyId>');
    const json = JSON.parse((await admin(['help', 'price', '--json'], { withTarget: false })).stdout) as {
      commands: { command: string }[];
    };
    expect(json.commands.map((c) => c.command)).toEqual(['price list', 'price set', 'price remove']);
  });

  it('the script sets the exit code and writes errors to stderr (spawned through tsx)', () => {
    const root = join(__dirname, '..', '..');
    const result = spawnSync(
      join(root, 'node_modules', '.bin', 'tsx'),
      [join(root, 'scripts', 'admin.ts'), 'balance', 'show', 'VA123'],
      { cwd: root, encoding: 'utf8', timeout: 20_000 },
    );
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('is not a Service SID');
  });
});
