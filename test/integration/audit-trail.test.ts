/**
 * Every change made through the console or the admin command appears in the audit trail with its actor
 * (`console:<user id>`, `cli:<user>@<host>`) and, where the change has them, before and after. Every console
 * route and every admin command runs once: the lists below must name each of them (a new route or command fails
 * here until it is added), and any run that changes an item of the table must leave an audit record, whatever
 * the list says; a run listed without an action must change nothing.
 */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { hostname, userInfo } from 'node:os';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { PARTITION_FAMILY, keys } from '../../functions/adapters/dynamodb/keys';
import { CONSOLE_API_ROUTES } from '../../functions/console/routes';
import { OPERATORS_AUDIT_SCOPE } from '../../functions/core/accounts/ports';
import { CHANNELS } from '../../functions/core/routing';
import { adminJson, runAdminCommand } from '../support/admin-cli';
import { COMMANDS } from '../../scripts/admin/commands';
import { BY_TEST, dynamoEndpoint, startHarness, type Account, type Harness } from '../support/harness';

type Item = Record<string, unknown>;

let harness: Harness;
let client: DynamoDBDocumentClient;
let account: Account;
let operatorToken: string;
let verificationSid: string;
const OPERATOR = 'ops@example.com';
const CLI_ACTOR = `cli:${userInfo().username}@${hostname()}`;

beforeAll(async () => {
  harness = await startHarness();
  client = createDocumentClient({ endpoint: dynamoEndpoint() });
  account = await harness.createAccount();
  const sent = await harness.client(account).send({ To: '+14155559001' });
  expect(sent.status).toBe(201);
  verificationSid = sent.body.sid as string;
  await harness.stack.workflow.idle();
  operatorToken = await harness.consoleToken(OPERATOR, true);
});
afterAll(async () => {
  client.destroy();
  await harness.close();
});

/** What one run is expected to record: the action, and parts of before/after. */
interface Expected {
  action: string;
  /** Where the record is kept: the service acted on by default. */
  scope?: string;
  before?: unknown;
  after?: unknown;
}

interface AuditItem {
  scope: string;
  id: string;
  actor: string;
  action: string;
  before?: unknown;
  after?: unknown;
}

const keyOf = (item: Item) => `${String(item.pk)}|${String(item.sk)}`;
/**
 * Every console request writes its user's request count (the per-user limit): bookkeeping of the request, not a
 * change to the account, so it is not looked at here.
 */
const isRequestCount = (item: Item) => String(item.pk).startsWith(PARTITION_FAMILY.consoleUser);

/**
 * Runs `act` and returns what it changed: the items other than audit records that were added, changed or
 * removed, and the audit records it added.
 */
async function changesOf(act: () => Promise<void>): Promise<{ changed: string[]; audits: AuditItem[] }> {
  await harness.stack.workflow.idle();
  const before = new Map(
    (await harness.scanTable())
      .filter((item) => !isRequestCount(item))
      .map((item) => [keyOf(item), JSON.stringify(item)]),
  );
  await act();
  await harness.stack.workflow.idle();
  const after = (await harness.scanTable()).filter((item) => !isRequestCount(item));
  const afterKeys = new Set(after.map(keyOf));
  const changed = [
    ...after.filter((item) => item.type !== 'audit' && before.get(keyOf(item)) !== JSON.stringify(item)),
    ...[...before.entries()]
      .filter(([key, json]) => !afterKeys.has(key) && (JSON.parse(json) as Item).type !== 'audit')
      .map(([key]) => ({ pk: key, sk: 'removed' })),
  ].map(keyOf);
  const audits = after
    .filter((item) => item.type === 'audit' && !before.has(keyOf(item)))
    .map((item) => ({
      scope: String(item.service_sid),
      id: String(item.audit_id),
      actor: String(item.actor),
      action: String(item.action),
      ...(typeof item.before === 'string' && { before: JSON.parse(item.before) as unknown }),
      ...(typeof item.after === 'string' && { after: JSON.parse(item.after) as unknown }),
    }));
  return { changed, audits };
}

/** The run's records against what it should record; a run expected to record nothing must change nothing. */
async function expectAudited(
  label: string,
  changes: { changed: string[]; audits: AuditItem[] },
  actor: string,
  expected: Expected[],
  defaultScope: string,
): Promise<void> {
  if (expected.length === 0) {
    expect({ label, ...changes }).toEqual({ label, changed: [], audits: [] });
    return;
  }
  for (const { action, scope = defaultScope, before, after } of expected) {
    const record = changes.audits.find((a) => a.action === action);
    expect({ label, record }).toEqual({
      label,
      record: expect.objectContaining({
        scope,
        actor,
        action,
        ...(before !== undefined && { before: expect.objectContaining(before) }),
        ...(after !== undefined && { after: expect.objectContaining(after) }),
      }),
    });
    // And the core's audit trail lists it.
    const trail = await harness.accounts.auditTrail(scope, 500);
    expect(trail.map((r) => r.id)).toContain(record!.id);
  }
}

describe('console', () => {
  interface ConsoleRun {
    route: string;
    path: () => string;
    body?: () => unknown;
    expect?: () => Expected[];
    /** Reads what later runs need from the answer. */
    then?: (body: Item) => void;
  }
  const sid = () => account.serviceSid;
  const made: {
    service?: string;
    keyId?: string;
    template?: string;
    firstTemplate?: string;
    webhook?: string;
    rulesVersion?: number;
    guardVersion?: number;
    channelsVersion?: number;
  } = {};
  let balanceBefore = 0;
  const runs: ConsoleRun[] = [
    { route: 'GET /me', path: () => '/me' },
    { route: 'GET /services', path: () => '/services' },
    {
      route: 'POST /services',
      path: () => '/services',
      body: () => ({ name: 'Audited', balance: '1' }),
      then: (body) => (made.service = body.sid as string),
      expect: () => [
        { action: 'service.create', scope: made.service!, after: { name: 'Audited', balance: 10_000 } },
      ],
    },
    {
      route: 'GET /services/:sid',
      path: () => `/services/${sid()}`,
      then: (body) => (made.channelsVersion = body.channelsVersion as number),
    },
    {
      route: 'PUT /services/:sid/channels',
      path: () => `/services/${sid()}/channels`,
      body: () => ({ channels: ['sms', 'whatsapp'], channelsVersion: made.channelsVersion }),
      expect: () => [
        {
          action: 'channels.set',
          before: { channels: [...CHANNELS] },
          after: { channels: ['sms', 'whatsapp'] },
        },
      ],
    },
    { route: 'GET /services/:sid/keys', path: () => `/services/${sid()}/keys` },
    {
      route: 'POST /services/:sid/keys',
      path: () => `/services/${sid()}/keys`,
      then: (body) => (made.keyId = body.keyId as string),
      expect: () => [{ action: 'key.issue', after: { keyId: made.keyId } }],
    },
    {
      route: 'POST /services/:sid/keys/:keyId/revoke',
      path: () => `/services/${sid()}/keys/${made.keyId!}/revoke`,
      expect: () => [
        {
          action: 'key.revoke',
          before: { keyId: made.keyId, active: true },
          after: { keyId: made.keyId, active: false },
        },
      ],
    },
    { route: 'GET /services/:sid/charges', path: () => `/services/${sid()}/charges` },
    { route: 'GET /services/:sid/charges.csv', path: () => `/services/${sid()}/charges.csv` },
    { route: 'GET /services/:sid/verifications', path: () => `/services/${sid()}/verifications` },
    {
      route: 'GET /services/:sid/verifications/:ve',
      path: () => `/services/${sid()}/verifications/${verificationSid}`,
    },
    { route: 'GET /services/:sid/conversion', path: () => `/services/${sid()}/conversion` },
    {
      route: 'GET /services/:sid/templates',
      path: () => `/services/${sid()}/templates`,
      then: (body) => (made.firstTemplate = body.defaultTemplateSid as string),
    },
    {
      route: 'POST /services/:sid/templates',
      path: () => `/services/${sid()}/templates`,
      body: () => ({ body: 'Audited: {code}' }),
      then: (body) => (made.template = body.sid as string),
      expect: () => [{ action: 'template.add', after: { sid: made.template, body: 'Audited: {code}' } }],
    },
    {
      route: 'POST /services/:sid/templates/:hx/default',
      path: () => `/services/${sid()}/templates/${made.template!}/default`,
      expect: () => [{ action: 'template.default', after: { defaultTemplateSid: made.template } }],
    },
    {
      // The first default, no longer the default.
      route: 'POST /services/:sid/templates/:hx/remove',
      path: () => `/services/${sid()}/templates/${made.firstTemplate!}/remove`,
      expect: () => [{ action: 'template.delete', before: { sid: made.firstTemplate } }],
    },
    {
      route: 'GET /services/:sid/rules',
      path: () => `/services/${sid()}/rules`,
      then: (body) => (made.rulesVersion = body.rulesVersion as number),
    },
    {
      route: 'PUT /services/:sid/rules',
      path: () => `/services/${sid()}/rules`,
      body: () => ({ blockedCountries: ['GB'], blockedPrefixes: ['+4470'], rulesVersion: made.rulesVersion }),
      expect: () => [
        {
          action: 'rules.set',
          before: { blockedCountries: [], blockedPrefixes: [] },
          after: { blockedCountries: ['GB'], blockedPrefixes: ['+4470'] },
        },
      ],
    },
    {
      route: 'GET /services/:sid/guard',
      path: () => `/services/${sid()}/guard`,
      then: (body) => (made.guardVersion = body.guardVersion as number),
    },
    {
      route: 'PUT /services/:sid/guard',
      path: () => `/services/${sid()}/guard`,
      body: () => ({
        riskCheckOptOut: true,
        level: 'shadow',
        safeList: ['+447400'],
        guardVersion: made.guardVersion,
      }),
      expect: () => [
        { action: 'guard.risk_check', before: { riskCheckOptOut: false }, after: { riskCheckOptOut: true } },
        { action: 'guard.level', before: { level: 'standard' }, after: { level: 'shadow' } },
        { action: 'guard.safelist', before: { safeList: [] }, after: { safeList: ['+447400'] } },
      ],
    },
    {
      route: 'POST /services/:sid/guard/unblock',
      path: () => `/services/${sid()}/guard/unblock`,
      body: () => ({ prefix: '+4474' }),
      expect: () => [{ action: 'guard.unblock', after: { prefix: '+4474', lifted: 0 } }],
    },
    { route: 'GET /services/:sid/caps', path: () => `/services/${sid()}/caps` },
    {
      route: 'PUT /services/:sid/caps/:country',
      path: () => `/services/${sid()}/caps/GB`,
      body: () => ({ hourlySends: 500 }),
      expect: () => [
        { action: 'guard.caps', before: { caps: null }, after: { caps: { GB: { hourlySends: 500 } } } },
      ],
    },
    { route: 'GET /services/:sid/webhooks', path: () => `/services/${sid()}/webhooks` },
    {
      route: 'POST /services/:sid/webhooks',
      path: () => `/services/${sid()}/webhooks`,
      body: () => ({ url: `${harness.stack.url}/_local/webhooks/receiver` }),
      then: (body) => (made.webhook = body.endpointSid as string),
      expect: () => [{ action: 'webhook.add', after: { endpointSid: made.webhook } }],
    },
    {
      route: 'POST /services/:sid/webhooks/:wh/rotate',
      path: () => `/services/${sid()}/webhooks/${made.webhook!}/rotate`,
      body: () => ({}),
      expect: () => [{ action: 'webhook.rotate', after: { endpointSid: made.webhook } }],
    },
    {
      route: 'POST /services/:sid/webhooks/:wh/disable',
      path: () => `/services/${sid()}/webhooks/${made.webhook!}/disable`,
      expect: () => [{ action: 'webhook.disable', after: { endpointSid: made.webhook } }],
    },
    {
      route: 'POST /services/:sid/webhooks/:wh/enable',
      path: () => `/services/${sid()}/webhooks/${made.webhook!}/enable`,
      expect: () => [{ action: 'webhook.enable', after: { endpointSid: made.webhook } }],
    },
    {
      route: 'POST /services/:sid/topup',
      path: () => `/services/${sid()}/topup`,
      body: () => ({ amount: '1' }),
      expect: () => [
        {
          action: 'balance.topup',
          before: { balance: balanceBefore },
          after: { credit: 10_000, balance: balanceBefore + 10_000 },
        },
      ],
    },
    { route: 'GET /services/:sid/members', path: () => `/services/${sid()}/members` },
    { route: 'GET /services/:sid/audit', path: () => `/services/${sid()}/audit` },
  ];

  test('the runs name every route of the console API, and every POST/PUT/DELETE/PATCH records an action', () => {
    const routes = CONSOLE_API_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect([...runs.map((r) => r.route)].sort()).toEqual([...routes].sort());
    const mutating = runs.filter((r) => !r.route.startsWith('GET '));
    expect(mutating.filter((r) => r.expect === undefined).map((r) => r.route)).toEqual([]);
  });

  test.each(runs.map((run) => [run.route, run] as const))('%s', async (route, run) => {
    if (route === 'POST /services/:sid/topup')
      balanceBefore = (await harness.accounts.getService(sid()))!.balance;
    const method = route.split(' ')[0]!;
    let answer: { status: number; body: Item } = { status: 0, body: {} };
    const changes = await changesOf(async () => {
      const body = run.body?.();
      const response = await fetch(`${harness.stack.url}/console/api${run.path()}`, {
        method,
        headers: {
          authorization: `Bearer ${operatorToken}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      answer = { status: response.status, body: route.endsWith('.csv') ? {} : (JSON.parse(text) as Item) };
    });
    expect({ route, ok: answer.status < 300 }).toEqual({ route, ok: true });
    run.then?.(answer.body);
    await expectAudited(route, changes, `console:${OPERATOR}`, run.expect?.() ?? [], sid());
  });
});

describe('admin command', () => {
  interface AdminRun {
    command: string;
    args: () => string[];
    /** Sets up what the command needs, before its changes are looked at. */
    prepare?: () => Promise<void>;
    expect?: () => Expected[];
    then?: (json: Item) => void;
    /** A command that cannot complete here (no deliver function to invoke): only its writes are checked. */
    anyExit?: boolean;
  }
  const made: { service?: string; keyId?: string; template?: string; webhook?: string; balance?: number } =
    {};
  const sid = () => made.service!;
  const rules = (before: unknown, after: unknown) => () => [{ action: 'rules.set', before, after }];
  const runs: AdminRun[] = [
    {
      command: 'service create',
      args: () => ['--name', 'Cli', '--balance', '1'],
      then: (json) => (made.service = json.serviceSid as string),
      expect: () => [
        { action: 'service.create', after: { name: 'Cli', balance: 10_000 } },
        { action: 'key.issue' },
      ],
    },
    { command: 'service show', args: () => [sid()] },
    {
      command: 'key issue',
      args: () => [sid()],
      then: (json) => (made.keyId = json.keyId as string),
      expect: () => [{ action: 'key.issue', after: { keyId: made.keyId } }],
    },
    { command: 'key list', args: () => [sid()] },
    {
      command: 'key revoke',
      args: () => [sid(), made.keyId!],
      expect: () => [{ action: 'key.revoke', before: { active: true }, after: { active: false } }],
    },
    {
      command: 'key limit',
      args: () => [sid(), '25'],
      expect: () => [{ action: 'key.limit', before: { apiKeyLimit: 10 }, after: { apiKeyLimit: 25 } }],
    },
    { command: 'balance show', args: () => [sid()] },
    {
      command: 'balance topup',
      args: () => [sid(), '1'],
      expect: () => [
        { action: 'balance.topup', before: { balance: 10_000 }, after: { credit: 10_000, balance: 20_000 } },
      ],
    },
    {
      command: 'balance shards',
      args: () => [sid(), '2'],
      expect: () => [{ action: 'balance.shards', before: { shards: 1 }, after: { shards: 2 } }],
    },
    { command: 'balance audit', args: () => [sid()] },
    {
      command: 'balance reconcile',
      args: () => [sid()],
      // A balance moved without a credit line (as one older than the ledger): the line that explains it.
      prepare: async () => {
        await client.send(
          new UpdateCommand({
            TableName: harness.tableName,
            Key: keys.service(sid()),
            UpdateExpression: 'ADD balance :units',
            ExpressionAttributeValues: { ':units': 300 },
          }),
        );
      },
      expect: () => [{ action: 'balance.reconcile', before: { balance: 20_300 }, after: { credit: 300 } }],
    },
    { command: 'charges', args: () => [sid()] },
    {
      command: 'template add',
      args: () => [sid(), 'Cli: {code}'],
      then: (json) => (made.template = json.sid as string),
      expect: () => [{ action: 'template.add', after: { sid: made.template, body: 'Cli: {code}' } }],
    },
    { command: 'template list', args: () => [sid()] },
    {
      command: 'template default',
      args: () => [sid(), made.template!],
      expect: () => [{ action: 'template.default', after: { defaultTemplateSid: made.template } }],
    },
    {
      command: 'template clear-default',
      args: () => [sid()],
      expect: () => [{ action: 'template.default', before: { defaultTemplateSid: made.template } }],
    },
    {
      command: 'template remove',
      args: () => [sid(), made.template!],
      expect: () => [{ action: 'template.delete', before: { sid: made.template, body: 'Cli: {code}' } }],
    },
    {
      command: 'template limit',
      args: () => [sid(), '3'],
      expect: () => [
        { action: 'template.limit', before: { templateSmsParts: 2 }, after: { templateSmsParts: 3 } },
      ],
    },
    { command: 'rules show', args: () => [sid()] },
    {
      command: 'rules block-country',
      args: () => [sid(), 'GB'],
      expect: rules({ blockedCountries: [] }, { blockedCountries: ['GB'] }),
    },
    {
      command: 'rules unblock-country',
      args: () => [sid(), 'GB'],
      expect: rules({ blockedCountries: ['GB'] }, { blockedCountries: [] }),
    },
    {
      command: 'rules block-prefix',
      args: () => [sid(), '+4470'],
      expect: rules({ blockedPrefixes: [] }, { blockedPrefixes: ['+4470'] }),
    },
    {
      command: 'rules unblock-prefix',
      args: () => [sid(), '+4470'],
      expect: rules({ blockedPrefixes: ['+4470'] }, { blockedPrefixes: [] }),
    },
    {
      command: 'rules clear',
      args: () => [sid()],
      prepare: async () => {
        await harness.accounts.setRules(BY_TEST, sid(), { blockedCountries: ['FR'] });
      },
      expect: rules({ blockedCountries: ['FR'] }, { blockedCountries: [], blockedPrefixes: [] }),
    },
    {
      command: 'rules allow-country',
      args: () => [sid(), 'NG'],
      expect: () => [{ action: 'rules.set', after: { allowedCountries: expect.arrayContaining(['NG']) } }],
    },
    {
      command: 'rules disallow-country',
      args: () => [sid(), 'NG'],
      expect: () => [{ action: 'rules.set', before: { allowedCountries: expect.arrayContaining(['NG']) } }],
    },
    {
      command: 'rules set-allowed',
      args: () => [sid(), 'GB,FR'],
      expect: () => [{ action: 'rules.set', after: { allowedCountries: ['FR', 'GB'] } }],
    },
    {
      command: 'rules reset-allowed',
      args: () => [sid()],
      expect: () => [{ action: 'rules.set', before: { allowedCountries: ['FR', 'GB'] } }],
    },
    {
      command: 'rules allow-all',
      args: () => [sid()],
      expect: () => [{ action: 'rules.set', after: { allowedCountries: null } }],
    },
    { command: 'guard report', args: () => [sid()] },
    {
      command: 'guard level',
      args: () => [sid(), 'shadow'],
      expect: () => [{ action: 'guard.level', after: { level: 'shadow' } }],
    },
    {
      command: 'guard safelist add',
      args: () => [sid(), '+447400'],
      expect: () => [
        { action: 'guard.safelist', before: { safeList: [] }, after: { safeList: ['+447400'] } },
      ],
    },
    {
      command: 'guard safelist remove',
      args: () => [sid(), '+447400'],
      expect: () => [
        { action: 'guard.safelist', before: { safeList: ['+447400'] }, after: { safeList: [] } },
      ],
    },
    {
      command: 'guard risk-check allow',
      args: () => [sid()],
      expect: () => [
        { action: 'guard.risk_check', before: { riskCheckOptOut: false }, after: { riskCheckOptOut: true } },
      ],
    },
    {
      command: 'guard risk-check deny',
      args: () => [sid()],
      expect: () => [
        { action: 'guard.risk_check', before: { riskCheckOptOut: true }, after: { riskCheckOptOut: false } },
      ],
    },
    {
      command: 'guard unblock',
      args: () => [sid(), '*'],
      expect: () => [{ action: 'guard.unblock', after: { prefix: '*' } }],
    },
    { command: 'guard caps', args: () => [sid()] },
    {
      command: 'guard cap set',
      args: () => [sid(), 'GB', '--hourly-sends', '500'],
      expect: () => [
        { action: 'guard.caps', before: { caps: null }, after: { caps: { GB: { hourlySends: 500 } } } },
      ],
    },
    {
      command: 'guard cap clear',
      args: () => [sid(), 'GB'],
      expect: () => [{ action: 'guard.caps', before: { caps: { GB: { hourlySends: 500 } } } }],
    },
    { command: 'price list', args: () => [sid()] },
    {
      command: 'price set',
      args: () => [sid(), 'CU', '0.06'],
      expect: () => [
        { action: 'price.set', before: { country: 'CU', price: null }, after: { country: 'CU', price: 600 } },
      ],
    },
    {
      command: 'price remove',
      args: () => [sid(), 'CU'],
      expect: () => [
        {
          action: 'price.remove',
          before: { country: 'CU', price: 600 },
          after: { country: 'CU', price: null },
        },
      ],
    },
    {
      command: 'channels set',
      args: () => [sid(), 'sms,whatsapp'],
      expect: () => [
        {
          action: 'channels.set',
          before: { channels: [...CHANNELS] },
          after: { channels: ['sms', 'whatsapp'] },
        },
      ],
    },
    {
      command: 'webhook add',
      args: () => [sid(), `${harness.stack.url}/_local/webhooks/receiver`],
      then: (json) => (made.webhook = json.endpointSid as string),
      expect: () => [{ action: 'webhook.add', after: { endpointSid: made.webhook } }],
    },
    { command: 'webhook list', args: () => [sid()] },
    {
      command: 'webhook disable',
      args: () => [sid(), made.webhook!],
      expect: () => [{ action: 'webhook.disable', after: { endpointSid: made.webhook } }],
    },
    {
      command: 'webhook enable',
      args: () => [sid(), made.webhook!],
      expect: () => [{ action: 'webhook.enable', after: { endpointSid: made.webhook } }],
    },
    {
      command: 'webhook rotate',
      args: () => [sid(), made.webhook!],
      expect: () => [{ action: 'webhook.rotate', after: { endpointSid: made.webhook } }],
    },
    {
      command: 'webhook remove',
      args: () => [sid(), made.webhook!],
      expect: () => [{ action: 'webhook.remove', before: { endpointSid: made.webhook } }],
    },
    {
      command: 'member add',
      args: () => [sid(), 'member@example.com'],
      expect: () => [{ action: 'member.add', after: { userId: 'member@example.com' } }],
    },
    { command: 'member list', args: () => [sid()] },
    {
      command: 'member remove',
      args: () => [sid(), 'member@example.com'],
      expect: () => [{ action: 'member.remove', before: { userId: 'member@example.com' } }],
    },
    { command: 'audit', args: () => [sid()] },
    {
      command: 'operator add',
      args: () => ['cli-ops@example.com'],
      expect: () => [
        { action: 'operator.add', scope: OPERATORS_AUDIT_SCOPE, after: { userId: 'cli-ops@example.com' } },
      ],
    },
    {
      command: 'operator remove',
      args: () => ['cli-ops@example.com'],
      expect: () => [
        { action: 'operator.remove', scope: OPERATORS_AUDIT_SCOPE, after: { userId: 'cli-ops@example.com' } },
      ],
    },
    { command: 'operator list', args: () => [] },
    { command: 'providers check', args: () => [], anyExit: true },
  ];

  const admin = (args: string[]) => runAdminCommand([...args, '--json'], harness);

  test('the runs name every admin command', () => {
    expect(runs.map((r) => r.command).sort()).toEqual(COMMANDS.map((c) => c.words.join(' ')).sort());
  });

  test.each(runs.map((run) => [run.command, run] as const))('%s', async (command, run) => {
    await run.prepare?.();
    let result = { code: -1, stdout: '', stderr: '' };
    const changes = await changesOf(async () => {
      result = await admin([...command.split(' '), ...run.args()]);
    });
    if (!run.anyExit)
      expect({ command, code: result.code, stderr: result.stderr }).toEqual({ command, code: 0, stderr: '' });
    if (result.code === 0) run.then?.(JSON.parse(result.stdout) as Item);
    await expectAudited(command, changes, CLI_ACTOR, run.expect?.() ?? [], made.service ?? '');
  });

  test('`npm run admin -- audit` lists the changes with their actor, newest first', async () => {
    const { records } = await adminJson<{ records: AuditItem[] }>(['audit', sid()], harness);
    const ours = records.filter((r) => r.actor === CLI_ACTOR).map((r) => r.action);
    for (const action of [
      'service.create',
      'key.revoke',
      'balance.topup',
      'template.limit',
      'webhook.remove',
    ]) {
      expect(ours).toContain(action);
    }
    expect(records.map((r) => (r as unknown as { at: string }).at)).toEqual(
      records
        .map((r) => (r as unknown as { at: string }).at)
        .sort()
        .reverse(),
    );
    const operators = await adminJson<{ records: AuditItem[] }>(['audit', 'operators'], harness);
    expect(operators.records).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'operator.add', actor: CLI_ACTOR }),
        expect.objectContaining({ action: 'operator.remove', actor: CLI_ACTOR }),
        // The console's sign-in stand-in grants rights too, and says so.
        expect.objectContaining({ action: 'operator.add', actor: 'local:sign-in' }),
      ]),
    );
  });
});
