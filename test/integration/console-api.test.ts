/**
 * The console's JSON API (`/console/api/*`) over HTTP against DynamoDB Local, signed in with the local stack's
 * loopback sign-in (which stands in for Cognito and API Gateway's JWT authorizer): no token, no answer; a member
 * of one service can neither read nor change another; an operator sees and manages every service; what the
 * console changes is what the public API obeys.
 */
import { request } from 'node:http';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { DynamoGuardStore } from '../../functions/adapters/dynamodb/guard';
import { GLOBAL_SCOPE, consumeGuardEvents } from '../../functions/core/guard/consumer';
import { defaultAllowedCountries } from '../../functions/core/guard/high-risk-countries';
import { serviceTag } from '../../functions/core/guard/aggregates';
import { CHANNELS, type Channel } from '../../functions/core/routing';
import {
  BY_TEST,
  dynamoEndpoint,
  startHarness,
  eventually,
  type Account,
  type Harness,
} from '../support/harness';

let harness: Harness;
let a: Account;
let b: Account;
let counter = 0;
const freshMobile = () => `+447400${String(2_100_000 + ++counter).slice(1)}`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Headers;
}

const signIn = (email: string, operator = false) => harness.consoleToken(email, operator);

async function call(
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer> {
  const response = await fetch(`${harness.stack.url}/console/api${path}`, {
    method,
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // CSV
  }
  return { status: response.status, body: parsed, text, headers: response.headers };
}

/** A change of the guard settings as their page makes it: on the settings read just before (their version). */
async function putGuard(token: string, sid: string, body: Record<string, unknown>): Promise<Answer> {
  const { guardVersion } = (await call(token, 'GET', `/services/${sid}/guard`)).body;
  return call(token, 'PUT', `/services/${sid}/guard`, { guardVersion, ...body });
}

let alice: string;
let bob: string;
let operator: string;

beforeAll(async () => {
  harness = await startHarness({ settings: { channelWaitSeconds: 1 } });
  a = await harness.createAccount();
  b = await harness.createAccount();
  await harness.accounts.addMember(BY_TEST, a.serviceSid, 'alice@example.com', 'alice@example.com');
  await harness.accounts.addMember(BY_TEST, b.serviceSid, 'bob@example.com');
  [alice, bob, operator] = await Promise.all([
    signIn('alice@example.com'),
    signIn('bob@example.com'),
    signIn('ops@example.com', true),
  ]);
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

describe('authentication', () => {
  test.each([
    ['GET', '/me'],
    ['GET', `/services/VA0123456789abcdef0123456789abcdef`],
    ['POST', `/services/VA0123456789abcdef0123456789abcdef/keys`],
    ['GET', '/no/such/route'],
  ])('%s %s without a token: 401, the handler never runs', async (method, path) => {
    const answer = await call(undefined, method, path);
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ message: 'Unauthorized' });
  });

  test('a forged, tampered or other-key token is refused', async () => {
    const [header, payload, signature] = alice.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    const operatorClaims = Buffer.from(
      JSON.stringify({ ...claims, 'cognito:groups': ['operators'] }),
    ).toString('base64url');
    for (const token of [
      `${header}.${operatorClaims}.${signature}`,
      `${header}.${payload}.${'A'.repeat(43)}`,
      'x.y.z',
    ]) {
      expect((await call(token, 'GET', '/me')).status).toBe(401);
    }
  });

  test('the local sign-in answers only on a loopback host (a DNS-rebound page names another)', async () => {
    const url = new URL(`${harness.stack.url}/console/local/sign-in`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', host: 'attacker.example' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ email: 'x@example.com', operator: true }));
    });
    expect(status).toBe(403);
  });

  test('the local sign-in takes JSON only: a page posting a form or text to loopback records nothing', async () => {
    const email = 'drive-by@example.com';
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const response = await fetch(`${harness.stack.url}/console/local/sign-in`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: JSON.stringify({ email, operator: true }),
      });
      expect([type, response.status]).toEqual([type, 415]);
    }
    expect(await harness.accounts.store.isOperator(email)).toBe(false);
  });
});

describe('membership', () => {
  test('a member sees its own services only', async () => {
    const me = await call(alice, 'GET', '/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user: { id: 'alice@example.com', operator: false } });
    expect((me.body.services as { sid: string }[]).map((s) => s.sid)).toEqual([a.serviceSid]);
    expect((await call(alice, 'GET', `/services/${a.serviceSid}`)).body).toMatchObject({ sid: a.serviceSid });
  });

  test('a member of A can neither read nor change B: 403, and B is unchanged', async () => {
    const before = await harness.accounts.getService(b.serviceSid);
    const keysBefore = await harness.accounts.listApiKeys(b.serviceSid);
    const attempts: [string, string, unknown?][] = [
      ['GET', `/services/${b.serviceSid}`],
      ['GET', `/services/${b.serviceSid}/keys`],
      ['POST', `/services/${b.serviceSid}/keys`],
      ['POST', `/services/${b.serviceSid}/keys/${keysBefore[0]!.keyId}/revoke`],
      ['GET', `/services/${b.serviceSid}/charges`],
      ['GET', `/services/${b.serviceSid}/charges.csv`],
      ['GET', `/services/${b.serviceSid}/verifications`],
      ['GET', `/services/${b.serviceSid}/conversion`],
      ['POST', `/services/${b.serviceSid}/templates`, { body: 'Pwned {code}' }],
      ['POST', `/services/${b.serviceSid}/templates/${before!.defaultTemplate!.sid}/remove`],
      ['PUT', `/services/${b.serviceSid}/rules`, { blockedCountries: ['GB'], blockedPrefixes: [] }],
      ['PUT', `/services/${b.serviceSid}/channels`, { channels: ['sms'] }],
      ['POST', `/services/${b.serviceSid}/webhooks`, { url: 'http://127.0.0.1:9/hook' }],
      ['POST', `/services/${b.serviceSid}/topup`, { amount: '5' }],
      // A service that does not exist answers the same as one that is not yours.
      ['GET', `/services/VA0123456789abcdef0123456789abcdef`],
    ];
    for (const [method, path, body] of attempts) {
      const answer = await call(alice, method, path, body);
      expect({ method, path, status: answer.status, code: answer.body.code }).toEqual({
        method,
        path,
        status: 403,
        code: 'forbidden',
      });
    }
    expect(await harness.accounts.getService(b.serviceSid)).toEqual(before);
    expect(await harness.accounts.listApiKeys(b.serviceSid)).toEqual(keysBefore);
    expect(await harness.accounts.listTemplates(b.serviceSid)).toHaveLength(1);
  });

  test("the activity page shows members an operator's change as `operator`, not its login, host or AWS key", async () => {
    const operatorActor = { actor: 'cli:jdoe@ops-laptop aws:AKIAIOSFODNN7EXAMPLE' };
    await harness.accounts.setGuardLevel(operatorActor, a.serviceSid, 'standard');
    // The actor of the change to `to` (the clocks of the test's core and the console may differ: not the newest).
    const level = (records: unknown, to = 'standard') =>
      (records as { action: string; actor: string; after: { level?: string } }[]).find(
        (r) => r.action === 'guard.level' && r.after.level === to,
      )?.actor;
    const seenByMember = await call(alice, 'GET', `/services/${a.serviceSid}/audit`);
    expect(level(seenByMember.body.records)).toBe('operator');
    expect(seenByMember.text).not.toContain('AKIA');
    expect(level((await call(operator, 'GET', `/services/${a.serviceSid}/audit`)).body.records)).toBe(
      operatorActor.actor,
    );
    // A member's own console changes keep their actor.
    await putGuard(alice, a.serviceSid, { level: 'strict' });
    expect(
      level((await call(alice, 'GET', `/services/${a.serviceSid}/audit`)).body.records, 'strict'),
    ).toMatch(/^console:/);
    await putGuard(alice, a.serviceSid, { level: 'standard' });
  });

  test('the audit list takes a whole number of records up to 500; any other limit gets the default page', async () => {
    const path = (limit: string) => `/services/${a.serviceSid}/audit?limit=${encodeURIComponent(limit)}`;
    const all = await call(operator, 'GET', path('500'));
    expect(all.status).toBe(200);
    const total = (all.body.records as unknown[]).length;
    expect(total).toBeGreaterThan(1);
    expect((await call(operator, 'GET', path('1'))).body.records).toHaveLength(1);
    expect((await call(operator, 'GET', path('501'))).body.records).toHaveLength(total);
    for (const limit of ['1.5', '0.5', 'abc', '']) {
      const answer = await call(operator, 'GET', path(limit));
      expect([limit, answer.status]).toEqual([limit, 200]);
      expect((answer.body.records as unknown[]).length).toBe(Math.min(total, 50));
    }
  });

  test("a verification of B is not found under A's path", async () => {
    const sent = await harness.client(b).send({ To: freshMobile() });
    expect(sent.status).toBe(201);
    const answer = await call(
      alice,
      'GET',
      `/services/${a.serviceSid}/verifications/${String(sent.body.sid)}`,
    );
    expect(answer.status).toBe(404);
    const search = await call(
      alice,
      'GET',
      `/services/${a.serviceSid}/verifications?q=${String(sent.body.sid)}`,
    );
    expect(search.body.verifications).toEqual([]);
  });

  test('only an operator creates services and tops up; it sees every service', async () => {
    expect((await call(alice, 'POST', '/services', { name: 'Mine' })).status).toBe(403);
    expect((await call(alice, 'POST', `/services/${a.serviceSid}/topup`, { amount: '5' })).status).toBe(403);

    const created = await call(operator, 'POST', '/services', { name: 'Globex', balance: '12.5' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Globex', balance: '12.5000' });
    // A new service sends to every served country but the high-risk ones, and its answer says which and why.
    expect(created.body.allowedCountries).toEqual(defaultAllowedCountries());
    expect(created.body.allowedCountries).not.toContain('NG');
    expect(created.body.excludedHighRiskCountries).toEqual(
      ['AZ', 'BD', 'NG', 'PK'].map((country) =>
        expect.objectContaining({
          country,
          reason: expect.stringContaining('SMS pumping'),
          sources: expect.arrayContaining([
            expect.objectContaining({ url: expect.stringMatching(/^https:/) }),
          ]),
        }),
      ),
    );
    expect(created.body.riskCheckOptOut).toBe(false);
    expect((await harness.accounts.getService(String(created.body.sid)))?.rules.allowedCountries).toEqual(
      defaultAllowedCountries(),
    );
    const me = await call(operator, 'GET', '/me');
    expect(me.body.user).toMatchObject({ operator: true });
    expect((me.body.services as { sid: string }[]).map((s) => s.sid)).toEqual(
      expect.arrayContaining([a.serviceSid, b.serviceSid, created.body.sid]),
    );
    const before = (await harness.accounts.getService(b.serviceSid))!.balance;
    const topped = await call(operator, 'POST', `/services/${b.serviceSid}/topup`, { amount: '0.0001' });
    expect(topped.body).toEqual({ balance: ((before + 1) / 10_000).toFixed(4), alreadyCredited: false });
    expect((await harness.accounts.getService(b.serviceSid))!.balance).toBe(before + 1);
    // The page's key: a retry of a top-up (its answer lost) credits once; the key of another amount is refused.
    const keyed = { amount: '2', key: 'f3a1c0de9b8e4d2a' };
    expect((await call(operator, 'POST', `/services/${b.serviceSid}/topup`, keyed)).status).toBe(200);
    const again = await call(operator, 'POST', `/services/${b.serviceSid}/topup`, keyed);
    expect(again.body).toEqual({ balance: ((before + 20_001) / 10_000).toFixed(4), alreadyCredited: true });
    const other = await call(operator, 'POST', `/services/${b.serviceSid}/topup`, { ...keyed, amount: '3' });
    expect([other.status, other.body.code]).toEqual([400, 'invalid_parameter']);
    expect((await harness.accounts.getService(b.serviceSid))!.balance).toBe(before + 20_001);
    expect((await call(operator, 'GET', `/services/VA0123456789abcdef0123456789abcdef`)).status).toBe(404);
    // Bob (no operator) still sees only B.
    expect(((await call(bob, 'GET', '/me')).body.services as { sid: string }[]).map((s) => s.sid)).toEqual([
      b.serviceSid,
    ]);
  });

  test("the operator's list gives every service's balance, a spread one summed over its shards", async () => {
    const spread = await harness.createAccount();
    await harness.accounts.spreadBalance(BY_TEST, spread.serviceSid, '4');
    const list = (await call(operator, 'GET', '/services')).body.services as {
      sid: string;
      balance: string;
    }[];
    const directory = await harness.accounts.store.listAllServices();
    expect(list.map((s) => s.sid)).toEqual(directory.map((entry) => entry.serviceSid));
    for (const { sid, balance } of list) {
      const service = (await harness.accounts.getService(sid))!;
      expect(balance).toBe((service.balance / 10_000).toFixed(4));
    }
    expect(list.find((s) => s.sid === spread.serviceSid)!.balance).not.toBe('0.0000');
    // Read together, in the order asked; a SID with no service is none.
    const none = 'VA0123456789abcdef0123456789abcdef';
    const read = await harness.accounts.getServices([spread.serviceSid, none, a.serviceSid]);
    expect(read.map((service) => service?.sid)).toEqual([spread.serviceSid, undefined, a.serviceSid]);
    expect(read[0]!.balance).toBe((await harness.accounts.getService(spread.serviceSid))!.balance);
  });
});

describe('what the console changes, the public API obeys', () => {
  test('a key issued in the console sends; revoked in the console, the next request is refused (401)', async () => {
    const issued = await call(alice, 'POST', `/services/${a.serviceSid}/keys`);
    expect(issued.status).toBe(201);
    expect(issued.headers.get('cache-control')).toBe('no-store');
    const apiKey = issued.body.apiKey as string;
    const api = harness.client({ serviceSid: a.serviceSid, apiKey });
    expect((await api.send({ To: freshMobile() })).status).toBe(201);

    const listed = await call(alice, 'GET', `/services/${a.serviceSid}/keys`);
    const key = (listed.body.keys as Record<string, unknown>[]).find((k) => k.keyId === issued.body.keyId)!;
    // The key is never listed, only its id; its last use is the minute of its window.
    expect(JSON.stringify(listed.body)).not.toContain(apiKey);
    expect(key).toMatchObject({ active: true, lastUsedAt: expect.stringMatching(/:00\.000Z$/) });

    const revoked = await call(alice, 'POST', `/services/${a.serviceSid}/keys/${String(key.keyId)}/revoke`);
    expect(revoked.body).toMatchObject({ alreadyRevoked: false });
    const refused = await api.send({ To: freshMobile() });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('unauthorized');
  });

  test('keys past the service limit are refused with 409 too_many; the page shows the count', async () => {
    await harness.accounts.setApiKeyLimit(BY_TEST, b.serviceSid, 2);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await call(operator, 'POST', `/services/${b.serviceSid}/keys`)).status);
    // b's harness key is one of its two.
    expect(statuses).toEqual([201, 409, 409]);
    const refused = await call(operator, 'POST', `/services/${b.serviceSid}/keys`);
    expect(refused.body).toMatchObject({ code: 'too_many', message: expect.stringContaining('may hold 2') });
    expect((await call(operator, 'GET', `/services/${b.serviceSid}/keys`)).body).toMatchObject({
      activeKeys: 2,
      keyLimit: 2,
    });
    await harness.accounts.setApiKeyLimit(BY_TEST, b.serviceSid, undefined);
  });

  test('a template added in the console is what the message says', async () => {
    const added = await call(alice, 'POST', `/services/${a.serviceSid}/templates`, {
      body: 'Console <b>{code}</b> & co',
    });
    expect(added.status).toBe(201);
    const to = freshMobile();
    const sent = await harness.client(a).send({ To: to, TemplateSid: added.body.sid as string });
    expect(sent.status).toBe(201);
    const [message] = await eventually(async () => {
      const messages = await harness.client(a).messages(to);
      return messages.length > 0 ? messages : undefined;
    });
    expect(message!.body).toMatch(/^Console <b>\d{6}<\/b> & co$/);
    const templates = await call(alice, 'GET', `/services/${a.serviceSid}/templates`);
    expect(templates.body.templates).toEqual(
      expect.arrayContaining([expect.objectContaining({ sid: added.body.sid, default: false })]),
    );
    expect(
      (await call(alice, 'POST', `/services/${a.serviceSid}/templates`, { body: 'no code' })).status,
    ).toBe(400);
  });

  test('a member removes a template, not the default one: a send naming it is then refused', async () => {
    const added = await call(alice, 'POST', `/services/${a.serviceSid}/templates`, { body: 'Gone {code}' });
    const sid = added.body.sid as string;
    const { defaultTemplateSid } = (await call(alice, 'GET', `/services/${a.serviceSid}/templates`)).body;
    const refused = await call(
      alice,
      'POST',
      `/services/${a.serviceSid}/templates/${String(defaultTemplateSid)}/remove`,
    );
    expect([refused.status, refused.body.code]).toEqual([400, 'invalid_parameter']);
    expect(refused.body.message).toContain('is the default template');
    const removed = await call(alice, 'POST', `/services/${a.serviceSid}/templates/${sid}/remove`);
    expect([removed.status, removed.body]).toEqual([200, { removed: sid }]);
    const listed = (await call(alice, 'GET', `/services/${a.serviceSid}/templates`)).body.templates as {
      sid: string;
    }[];
    expect(listed.map((t) => t.sid)).not.toContain(sid);
    expect(listed.map((t) => t.sid)).toContain(defaultTemplateSid);
    const again = await call(alice, 'POST', `/services/${a.serviceSid}/templates/${sid}/remove`);
    expect([again.status, again.body.code]).toEqual([404, 'not_found']);
    const send = await harness.client(a).send({ To: freshMobile(), TemplateSid: sid });
    expect([send.status, send.body.code]).toEqual([404, 'unknown_template']);
    // Every record (the console's clock and the harness's differ: the newest are not the last made).
    const audit = await harness.accounts.auditTrail(a.serviceSid, 500);
    expect(audit).toContainEqual(
      expect.objectContaining({ action: 'template.delete', before: expect.objectContaining({ sid }) }),
    );
  });

  test("a template's locale is checked by the accounts core, for every driver", async () => {
    const before = (await harness.accounts.templates(a.serviceSid)).templates.length;
    const refused = await call(alice, 'POST', `/services/${a.serviceSid}/templates`, {
      body: 'Code {code}',
      locale: 'English',
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 'invalid_parameter',
      message: expect.stringContaining('not a locale'),
    });
    await expect(
      harness.accounts.addTemplate(BY_TEST, a.serviceSid, { body: 'Code {code}', locale: 'fr_FR' }),
    ).rejects.toMatchObject({ code: 'invalid_parameter' });
    expect((await harness.accounts.templates(a.serviceSid)).templates).toHaveLength(before);
    const kept = await harness.accounts.addTemplate(BY_TEST, a.serviceSid, {
      body: 'Código {code}',
      locale: 'pt-BR',
    });
    expect(kept.locale).toBe('pt-BR');
    expect((await harness.accounts.addTemplate(BY_TEST, a.serviceSid, { body: 'Code {code}' })).locale).toBe(
      'en',
    );
  });

  test('a country blocked in the console is refused with 403 blocked_by_policy; unblocked, it sends', async () => {
    const path = `/services/${a.serviceSid}/rules`;
    const version = async () => (await call(alice, 'GET', path)).body.rulesVersion;
    const blocked = await call(alice, 'PUT', path, {
      blockedCountries: ['gb'],
      blockedPrefixes: [],
      rulesVersion: await version(),
    });
    expect(blocked.body).toMatchObject({ blockedCountries: ['GB'] });
    const refused = await harness.client(a).send({ To: freshMobile() });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('blocked_by_policy');
    await call(alice, 'PUT', path, {
      blockedCountries: [],
      blockedPrefixes: [],
      rulesVersion: blocked.body.rulesVersion,
    });
    expect((await harness.client(a).send({ To: freshMobile() })).status).toBe(201);
    const bad = await call(alice, 'PUT', path, {
      blockedCountries: ['ZZ'],
      blockedPrefixes: [],
      rulesVersion: await version(),
    });
    expect(bad.status).toBe(400);
  });

  test('changes of the rules made without a version (the admin command reads them just before) all land, at once too', async () => {
    const path = `/services/${a.serviceSid}/rules`;
    const { rulesVersion: version } = (await call(alice, 'GET', path)).body;
    const prefixes = ['+44701', '+44702', '+44703', '+44704', '+44705'];
    // Each write holds only while the rules are the ones it read: those that meet another read them again.
    await Promise.all(
      prefixes.map((prefix) =>
        harness.accounts.setRules(BY_TEST, a.serviceSid, { blockedPrefixes: [prefix] }),
      ),
    );
    const after = (await call(alice, 'GET', path)).body;
    expect(after.rulesVersion).toBe((version as number) + prefixes.length);
    expect(prefixes).toContain((after.blockedPrefixes as string[])[0]);
    await call(alice, 'PUT', path, {
      blockedCountries: [],
      blockedPrefixes: [],
      rulesVersion: after.rulesVersion,
    });
  });

  test('two members changing the rules at once: the change made on the older copy is refused 409 and changes nothing', async () => {
    await harness.accounts.addMember(BY_TEST, a.serviceSid, 'carol@example.com');
    const carol = await signIn('carol@example.com');
    const path = `/services/${a.serviceSid}/rules`;
    // Each page's copy: read by both before either changes anything.
    const aliceCopy = (await call(alice, 'GET', path)).body;
    const carolCopy = (await call(carol, 'GET', path)).body;
    const block = (token: string, copy: Record<string, unknown>, country: string) =>
      call(token, 'PUT', path, {
        blockedCountries: [...(copy.blockedCountries as string[]), country],
        blockedPrefixes: copy.blockedPrefixes,
        rulesVersion: copy.rulesVersion,
      });
    const rulesChanges = async () =>
      (await harness.accounts.auditTrail(a.serviceSid, 500)).filter((r) => r.action === 'rules.set').length;

    const first = await block(alice, aliceCopy, 'FR');
    expect(first.status).toBe(200);
    const recorded = await rulesChanges();
    const stale = await block(carol, carolCopy, 'IT');
    expect([stale.status, stale.body]).toEqual([
      409,
      { code: 'conflict', message: 'The rules changed since this page was loaded: reload to see them.' },
    ]);
    // Nothing changed: FR stays blocked, IT is not, and no record was written.
    const now = (await call(carol, 'GET', path)).body;
    expect(now).toMatchObject({
      blockedCountries: first.body.blockedCountries,
      rulesVersion: first.body.rulesVersion,
    });
    expect(now.blockedCountries).toContain('FR');
    expect(await rulesChanges()).toBe(recorded);

    // Lists sent without the version they were made on (a page loaded before the console sent it): refused as stale.
    const unversioned = await call(carol, 'PUT', path, { blockedCountries: [], blockedPrefixes: [] });
    expect([unversioned.status, unversioned.body.code]).toEqual([409, 'conflict']);
    expect(unversioned.body.message).toMatch(
      /^This page was loaded before the console was updated: reload it/,
    );
    expect(await rulesChanges()).toBe(recorded);

    // Made on the rules read again, the change keeps both.
    const again = await block(carol, now, 'IT');
    expect(again.status).toBe(200);
    expect(again.body.blockedCountries).toEqual(expect.arrayContaining(['FR', 'IT']));
    // An operator's change with the admin command (a fresh read of its own) also makes older copies stale.
    await harness.accounts.setRules(BY_TEST, a.serviceSid, { blockedPrefixes: ['+4470'] });
    expect((await call(alice, 'PUT', path, { ...again.body, blockedCountries: [] })).status).toBe(409);
    const last = (await call(alice, 'GET', path)).body;
    expect(last).toMatchObject({ blockedCountries: ['FR', 'IT'], blockedPrefixes: ['+4470'] });
    await call(alice, 'PUT', path, {
      blockedCountries: [],
      blockedPrefixes: [],
      rulesVersion: last.rulesVersion,
    });
  });
});

describe('channels', () => {
  test('a list with repeats, in any order, is kept as the CLI keeps it: each channel once, in channel order', async () => {
    const before = (await call(alice, 'GET', `/services/${a.serviceSid}`)).body;
    const answer = await call(alice, 'PUT', `/services/${a.serviceSid}/channels`, {
      channels: ['whatsapp', 'sms', 'sms'],
      channelsVersion: before.channelsVersion,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.channels).toEqual(['sms', 'whatsapp']);
    expect((await harness.accounts.getService(a.serviceSid))?.enabledChannels).toEqual(['sms', 'whatsapp']);
    await call(alice, 'PUT', `/services/${a.serviceSid}/channels`, {
      channels: before.channels,
      channelsVersion: answer.body.channelsVersion,
    });
  });

  test('two tabs changing the channels at once: the change made on the older copy is refused 409 and changes nothing', async () => {
    const path = `/services/${a.serviceSid}`;
    const before = (await call(alice, 'GET', path)).body;
    const save = (copy: Record<string, unknown>, channels: string[]) =>
      call(alice, 'PUT', `${path}/channels`, { channels, channelsVersion: copy.channelsVersion });
    const changes = async () =>
      (await harness.accounts.auditTrail(a.serviceSid, 500)).filter((r) => r.action === 'channels.set')
        .length;
    // Each tab's copy (the settings page reads the service), both with every channel.
    const everyChannel = await save(before, [...CHANNELS]);
    expect(everyChannel.status).toBe(200);
    const tabA = (await call(alice, 'GET', path)).body;
    const tabB = (await call(alice, 'GET', path)).body;
    const without = (channel: string) => CHANNELS.filter((c) => c !== channel);

    // A turns WhatsApp off; B, on its older copy, turns Viber off, its boxes still saying WhatsApp is on.
    const first = await save(tabA, without('whatsapp'));
    expect(first.status).toBe(200);
    const recorded = await changes();
    const stale = await save(tabB, without('viber'));
    const now = (await call(alice, 'GET', path)).body;
    expect(now.channels).not.toContain('whatsapp');
    expect([stale.status, stale.body]).toEqual([
      409,
      { code: 'conflict', message: 'The channels changed since this page was loaded: reload to see them.' },
    ]);
    expect(now).toMatchObject({ channels: without('whatsapp'), channelsVersion: first.body.channelsVersion });
    expect(await changes()).toBe(recorded);

    // Channels sent without the version they were made on (a page loaded before the console sent it).
    const unversioned = await call(alice, 'PUT', `${path}/channels`, { channels: ['sms'] });
    expect([unversioned.status, unversioned.body.code]).toEqual([409, 'conflict']);
    expect(unversioned.body.message).toMatch(
      /^This page was loaded before the console was updated: reload it/,
    );

    // A change of the guard or the rules in another tab does not refuse it: they are other pages' settings.
    const guard = (await call(alice, 'GET', `${path}/guard`)).body;
    expect(
      (
        await call(alice, 'PUT', `${path}/guard`, {
          riskCheckOptOut: guard.riskCheckOptOut,
          guardVersion: guard.guardVersion,
        })
      ).status,
    ).toBe(200);
    await harness.accounts.setRules(BY_TEST, a.serviceSid, { blockedPrefixes: [] });
    const again = await save(
      now,
      without('whatsapp').filter((c) => c !== 'viber'),
    );
    expect(again.status).toBe(200);
    expect(again.body.channels).toEqual(without('whatsapp').filter((c) => c !== 'viber'));
    // The admin command's change (a fresh read of its own) makes older copies stale.
    await harness.accounts.setChannels(BY_TEST, a.serviceSid, ['sms']);
    expect((await save(again.body, [...CHANNELS])).status).toBe(409);
    await harness.accounts.setChannels(BY_TEST, a.serviceSid, before.channels as Channel[]);
  });

  test('changes of the channels made without a version (the admin command) all land, at once too', async () => {
    const path = `/services/${a.serviceSid}`;
    const before = (await call(alice, 'GET', path)).body;
    const lists: Channel[][] = [['sms'], ['sms', 'viber'], ['sms', 'rcs'], ['sms', 'sna']];
    // Each write holds only while the channels are the ones it read: those that meet another read them again.
    await Promise.all(lists.map((list) => harness.accounts.setChannels(BY_TEST, a.serviceSid, list)));
    const after = (await call(alice, 'GET', path)).body;
    expect(after.channelsVersion).toBe((before.channelsVersion as number) + lists.length);
    expect(lists).toContainEqual(after.channels);
    await harness.accounts.setChannels(BY_TEST, a.serviceSid, before.channels as Channel[]);
  });
});

describe('a body that breaks the schema', () => {
  test('is answered 400 invalid_parameter naming the field and what is wrong, and changes nothing', async () => {
    const sid = a.serviceSid;
    const before = await harness.accounts.getService(sid);
    const cases: [string, string, unknown, string][] = [
      ['PUT', 'rules', { blockedPrefixes: [] }, 'blockedCountries is required.'],
      [
        'PUT',
        'rules',
        { blockedCountries: [], blockedPrefixes: [], rulesVersion: 1.5 },
        'rulesVersion must be a whole number.',
      ],
      ['PUT', 'rules', { blockedCountries: 'GB', blockedPrefixes: [] }, 'blockedCountries must be a list.'],
      [
        'PUT',
        'rules',
        { blockedCountries: ['GB', 'GBR'], blockedPrefixes: [] },
        'blockedCountries[1] must be a two-letter country code, as "US".',
      ],
      ['PUT', 'channels', { channels: [] }, 'channels is empty: give at least one.'],
      [
        'PUT',
        'channels',
        { channels: ['fax'] },
        'channels[0] must be one of: sms, whatsapp, viber, rcs, sna.',
      ],
      ['PUT', 'guard', { level: 'paranoid' }, 'level must be one of: off, shadow, standard, strict.'],
      ['PUT', 'guard', { riskCheckOptOut: 'yes' }, 'riskCheckOptOut must be true or false.'],
      ['PUT', 'guard', [], 'The body must be a JSON object.'],
      ['PUT', 'guard', { level: 'off', guardVersion: -1 }, 'guardVersion must be at least 0.'],
      ['PUT', 'channels', { channels: ['sms'], channelsVersion: 'one' }, 'channelsVersion must be a number.'],
      ['POST', 'webhooks', { url: '' }, 'url is empty.'],
    ];
    for (const [method, path, body, message] of cases) {
      const answer = await call(alice, method, `/services/${sid}/${path}`, body);
      expect([answer.status, answer.body]).toEqual([400, { code: 'invalid_parameter', message }]);
    }
    const topUp = await call(operator, 'POST', `/services/${sid}/topup`, { amount: '1.23456' });
    expect(topUp.body).toEqual({
      code: 'invalid_parameter',
      message: 'amount must be an amount in USD with at most 4 decimals, as "10.50".',
    });
    expect(await harness.accounts.getService(sid)).toEqual(before);
  });
});

describe('static controls: the country allow-list and the RiskCheck permission', () => {
  const NG_MOBILE = '+2348031234567';
  // A service of its own (managed by the operator), so these sends stay out of A's activity below.
  let c: Account;
  beforeAll(async () => {
    c = await harness.createAccount();
  });

  test('the rules endpoint takes and returns the allow-list, and the public API obeys it', async () => {
    const rules = async (body: Record<string, unknown>) =>
      call(operator, 'PUT', `/services/${c.serviceSid}/rules`, {
        blockedCountries: [],
        blockedPrefixes: [],
        rulesVersion: (await call(operator, 'GET', `/services/${c.serviceSid}/rules`)).body.rulesVersion,
        ...body,
      });
    const shown = await call(operator, 'GET', `/services/${c.serviceSid}/rules`);
    expect(shown.body).toMatchObject({
      allowedCountries: defaultAllowedCountries(),
      defaultAllowedCountries: defaultAllowedCountries(),
    });
    expect((shown.body.highRiskCountries as { country: string }[]).map((e) => e.country)).toEqual([
      'AZ',
      'BD',
      'NG',
      'PK',
    ]);
    expect((await harness.client(c).send({ To: NG_MOBILE })).body).toMatchObject({
      code: 'blocked_by_policy',
      message: 'This service does not send to this country.',
    });

    // Only GB (lower case is taken): a US number is refused, a GB one sent.
    expect((await rules({ allowedCountries: ['gb'] })).body).toMatchObject({
      allowedCountries: ['GB'],
      excludedHighRiskCountries: expect.arrayContaining([expect.objectContaining({ country: 'NG' })]),
    });
    expect((await harness.client(c).send({ To: '+14155550199' })).status).toBe(403);
    expect((await harness.client(c).send({ To: freshMobile() })).status).toBe(201);
    // Leaving allowedCountries out changes only the blocked lists.
    expect((await rules({})).body).toMatchObject({ allowedCountries: ['GB'] });
    // An empty list: no country.
    expect((await rules({ allowedCountries: [] })).body).toMatchObject({ allowedCountries: [] });
    expect((await harness.client(c).send({ To: freshMobile() })).status).toBe(403);
    // null: no list, every served country, high-risk ones included.
    expect((await rules({ allowedCountries: null })).body).toMatchObject({
      allowedCountries: null,
      excludedHighRiskCountries: [],
    });
    expect((await harness.accounts.getService(c.serviceSid))?.rules.allowedCountries).toBeUndefined();
    expect((await harness.client(c).send({ To: NG_MOBILE })).status).toBe(201);
    expect((await rules({ allowedCountries: ['GB', 'ZZ'] })).status).toBe(400);
    // Back to the default, as the page's "Reset to default" does.
    expect((await rules({ allowedCountries: defaultAllowedCountries() })).body).toMatchObject({
      allowedCountries: defaultAllowedCountries(),
    });
  });

  test('the guard setting lets RiskCheck=disable skip the guard; a member of B cannot set it for A', async () => {
    expect((await call(operator, 'GET', `/services/${c.serviceSid}`)).body).toMatchObject({
      guardLevel: 'standard',
      riskCheckOptOut: false,
    });
    expect((await putGuard(bob, c.serviceSid, { riskCheckOptOut: true })).status).toBe(403);
    // A personal number (+4470, a shipped high-risk range): the guard refuses it, RiskCheck=disable or not.
    const personal = '+447011234567';
    expect((await harness.client(c).send({ To: personal, RiskCheck: 'disable' })).body).toMatchObject({
      code: 'blocked_by_policy',
    });
    const { guardVersion } = (await call(operator, 'GET', `/services/${c.serviceSid}/guard`)).body;
    const allowed = await call(operator, 'PUT', `/services/${c.serviceSid}/guard`, {
      riskCheckOptOut: true,
      guardVersion,
    });
    expect(allowed.body).toEqual({
      guardVersion: (guardVersion as number) + 1,
      guardLevel: 'standard',
      guardLevels: ['off', 'shadow', 'standard', 'strict'],
      safeList: [],
      riskCheckOptOut: true,
    });
    // Now the guard does not judge it: the channels cannot reach a personal number.
    expect((await harness.client(c).send({ To: personal, RiskCheck: 'disable' })).body).toMatchObject({
      code: 'no_eligible_channel',
    });
    expect((await putGuard(operator, c.serviceSid, { riskCheckOptOut: 'yes' })).status).toBe(400);
    await putGuard(operator, c.serviceSid, { riskCheckOptOut: false });
    expect((await harness.accounts.getService(c.serviceSid))?.guard?.riskCheckOptOut).toBeUndefined();
  });
});

describe("the pumping guard's page: blocks in force, lifting them, level and safe list", () => {
  let d: Account;
  beforeAll(async () => {
    d = await harness.createAccount();
  });
  /** A guard state as the consumer writes it, with one block of `prefix` (no probes: none let through). */
  async function putBlock(scope: string, country: string, prefix: string, services?: string[]) {
    const documents = createDocumentClient({ endpoint: dynamoEndpoint() });
    const now = harness.clock.now().getTime();
    await documents.send(
      new PutCommand({
        TableName: harness.tableName,
        Item: {
          ...keys.guardCountry(scope, country),
          type: 'guard_state',
          state: JSON.stringify({
            blocks: [
              {
                prefix,
                reason: 'sequential_numbers',
                level: 'standard',
                since: now,
                until: now + 3_600_000,
                figures: { run: 6 },
                ...(services && { services }),
              },
            ],
            established: [],
            lifted: {},
          }),
        },
      }),
    );
    documents.destroy();
  }
  const blocked = async (account: Account, to: string) =>
    (await harness.client(account).send({ To: to })).body.code === 'blocked_by_policy';

  test("its own blocks, and a global one only where three other services showed it; lifting one lets that service's sends through", async () => {
    const others = ['VA' + 'e'.repeat(32), 'VA' + 'f'.repeat(32), 'VA' + 'a'.repeat(31) + 'b'];
    // D's own block in GB; global blocks in US: one three other services showed, one only two did.
    await putBlock(d.serviceSid, 'GB', '+4474009');
    // D sends to the US too: the consumer keeps its aggregates there, and no state (D never had a block there).
    const documents = createDocumentClient({ endpoint: dynamoEndpoint() });
    await documents.send(
      new PutCommand({
        TableName: harness.tableName,
        Item: { ...keys.guardCountryStats(d.serviceSid, 'US'), type: 'guard_stats', version: 1 },
      }),
    );
    documents.destroy();
    await putBlock(GLOBAL_SCOPE, 'US', '+1415555', others.map(serviceTag));
    const shown = await call(operator, 'GET', `/services/${d.serviceSid}/guard`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ guardLevel: 'standard', safeList: [], saved: '0.0000' });
    expect(shown.body.blocks).toEqual([
      expect.objectContaining({
        blocked: '+4474009',
        liftWith: '+4474009',
        scope: 'service',
        figures: { run: 6 },
      }),
      expect.objectContaining({ blocked: '+1415555', liftWith: '+1415555', scope: 'global' }),
    ]);
    expect(await blocked(d, '+14155550123')).toBe(true);
    // Shown to no one who is not a member.
    expect((await call(bob, 'GET', `/services/${d.serviceSid}/guard`)).status).toBe(403);

    // Two other services only: shadow for D, so neither shown nor refused.
    await putBlock(GLOBAL_SCOPE, 'US', '+1415555', others.slice(0, 2).map(serviceTag));
    expect(
      ((await call(operator, 'GET', `/services/${d.serviceSid}/guard`)).body.blocks as unknown[]).length,
    ).toBe(1);
    expect(await blocked(d, '+14155550124')).toBe(false);

    // Lifting the global block for D: D's sends pass, another service's do not.
    await putBlock(GLOBAL_SCOPE, 'US', '+1415555', others.map(serviceTag));
    const lifted = await call(operator, 'POST', `/services/${d.serviceSid}/guard/unblock`, {
      prefix: '+1415555',
    });
    expect(lifted.status).toBe(200);
    expect(lifted.body).toMatchObject({ prefix: '+1415555', lifted: 0 });
    expect(await blocked(d, '+14155550125')).toBe(false);
    expect(await blocked(b, '+14155550126')).toBe(true);
    // A country D never sent to (no guard item of its own there): shown all the same, and lifted the same way.
    await putBlock(GLOBAL_SCOPE, 'DE', '+4915112', others.map(serviceTag));
    expect((await call(operator, 'GET', `/services/${d.serviceSid}/guard`)).body.blocks).toEqual(
      expect.arrayContaining([expect.objectContaining({ blocked: '+4915112', scope: 'global' })]),
    );
    expect(await blocked(d, '+4915112345678')).toBe(true);
    await call(operator, 'POST', `/services/${d.serviceSid}/guard/unblock`, { prefix: '+4915112' });
    expect(await blocked(d, '+4915112345679')).toBe(false);
    expect(await blocked(b, '+4915112345670')).toBe(true);
    // The guard's consumer folds D's first DE send: the lift it found there stays (else it would start D's state
    // afresh, and the global block refuse D again). The global block itself has no aggregates here, so the
    // consumer's write of the global state is not what this looks at.
    const consumerClient = createDocumentClient({ endpoint: dynamoEndpoint() });
    await consumeGuardEvents(
      { store: new DynamoGuardStore(consumerClient, harness.tableName), clock: harness.clock },
      [
        {
          kind: 'send',
          serviceSid: d.serviceSid,
          e164: '+4915112345679',
          country: 'DE',
          at: harness.clock.now().getTime(),
          accepted: true,
          price: 500,
        },
      ],
    );
    consumerClient.destroy();
    const deState = (await harness.scanTable()).find(
      (item) => item.pk === keys.guardCountry(d.serviceSid, 'DE').pk && item.sk === 'COUNTRY#DE',
    );
    expect(Object.keys((JSON.parse(deState!.state as string) as { lifted: object }).lifted)).toEqual([
      '+4915112',
    ]);
    // D's own block: lifted, gone from the page, and audited.
    expect(
      (await call(operator, 'POST', `/services/${d.serviceSid}/guard/unblock`, { prefix: '+4474009' })).body,
    ).toMatchObject({ lifted: 1 });
    expect((await call(operator, 'GET', `/services/${d.serviceSid}/guard`)).body.blocks).toEqual([]);
    expect(await blocked(d, '+447400912345')).toBe(false);
    const audit = await harness.accounts.auditTrail(d.serviceSid, 10);
    expect(audit.filter((r) => r.action === 'guard.unblock')).toHaveLength(3);
    // Not a prefix: refused, nothing lifted.
    for (const prefix of ['44', '+44 74', ''])
      expect(
        (await call(operator, 'POST', `/services/${d.serviceSid}/guard/unblock`, { prefix })).status,
      ).toBe(400);
  });

  test('its decisions: by prefix and reason with the money saved, the latest first with numbers cut short', async () => {
    const at = harness.clock.now().getTime();
    const decision = (prefix: string, e164Prefix: string, minutes: number) => ({
      mode: 'blocked',
      reason: 'prefix_surge',
      prefix,
      scope: 'service',
      figures: {},
      price: 600,
      at: at + minutes * 60_000,
      e164Prefix,
    });
    const documents = createDocumentClient({ endpoint: dynamoEndpoint() });
    await documents.send(
      new PutCommand({
        TableName: harness.tableName,
        Item: {
          ...keys.guardScopeStats(d.serviceSid),
          type: 'guard_stats',
          version: 1,
          // As the consumer keeps it: lines by mode, reason and prefix; the latest decisions, newest last.
          report: JSON.stringify({
            lines: [
              { mode: 'blocked', reason: 'prefix_surge', prefix: '+447400', sends: 2, saved: 1_200 },
              { mode: 'shadow', reason: 'low_conversion', prefix: '+91', sends: 5, saved: 0 },
            ],
            recent: [decision('+447400', '+447400123', 0), decision('+447400', '+447400987', 1)],
          }),
        },
      }),
    );
    documents.destroy();
    const shown = (await call(operator, 'GET', `/services/${d.serviceSid}/guard`)).body;
    expect(shown.saved).toBe('0.1200');
    expect(shown.decisions).toEqual([
      { mode: 'shadow', reason: 'low_conversion', prefix: '+91', sends: 5, saved: '0.0000' },
      { mode: 'blocked', reason: 'prefix_surge', prefix: '+447400', sends: 2, saved: '0.1200' },
    ]);
    expect((shown.recent as { number: string }[]).map((r) => r.number)).toEqual([
      '+447400987xxx',
      '+447400123xxx',
    ]);
  });

  test('level and safe list: saved with an audit record each; a bad entry changes nothing', async () => {
    const put = (body: Record<string, unknown>) => putGuard(operator, d.serviceSid, body);
    const saved = await put({ level: 'shadow', safeList: ['+447400', ' +1415555 ', '+447400'] });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ guardLevel: 'shadow', safeList: ['+1415555', '+447400'] });
    expect((await harness.accounts.getService(d.serviceSid))?.guard).toMatchObject({
      level: 'shadow',
      safeList: ['+1415555', '+447400'],
    });
    for (const body of [{ level: 'lenient' }, { safeList: ['+44', '7400'] }, { safeList: 'none' }]) {
      expect((await put(body)).status).toBe(400);
    }
    expect((await put({ level: 'strict', safeList: ['+44', 'x'] })).status).toBe(400);
    expect((await harness.accounts.getService(d.serviceSid))?.guard).toMatchObject({
      level: 'shadow',
      safeList: ['+1415555', '+447400'],
    });
    const actions = (await harness.accounts.auditTrail(d.serviceSid, 20)).map((r) => r.action);
    expect(actions).toEqual(expect.arrayContaining(['guard.level', 'guard.safelist']));
    // Leaving a field out leaves it as it is.
    expect((await put({ level: 'standard' })).body).toMatchObject({
      guardLevel: 'standard',
      safeList: ['+1415555', '+447400'],
    });
    expect((await put({ safeList: [] })).body).toMatchObject({ safeList: [] });
    expect((await putGuard(alice, d.serviceSid, { level: 'off' })).status).toBe(403);
    // The accounts core checks as much for every caller (the admin command too).
    const many = Array.from({ length: 101 }, (_, i) => `+4474${String(i).padStart(3, '0')}`);
    for (const change of [
      () => harness.accounts.setGuardSafeList(BY_TEST, d.serviceSid, ['+44', '4470']),
      () => harness.accounts.setGuardSafeList(BY_TEST, d.serviceSid, many),
      () => harness.accounts.setGuardLevel(BY_TEST, d.serviceSid, 'lenient' as 'off'),
    ])
      await expect(change()).rejects.toMatchObject({ code: 'invalid_parameter' });
    expect((await harness.accounts.getService(d.serviceSid))?.guard).toMatchObject({
      level: 'standard',
      safeList: [],
    });
  });
  test('a safe-list entry covering whole countries is refused, naming them; one stored before stays', async () => {
    const set = (list: string[]) => harness.accounts.setGuardSafeList(BY_TEST, d.serviceSid, list);
    await expect(set(['+1'])).rejects.toMatchObject({
      code: 'invalid_parameter',
      message: expect.stringMatching(/^\+1 covers every number of \d+ countries \(CA, US among them\): /),
    });
    await expect(set(['+447400', '+44'])).rejects.toMatchObject({
      message: expect.stringContaining('+44 covers every number of 4 countries (GB, GG, IM, JE)'),
    });
    // `+3` is the start of many calling codes (+31, +33, +34…), so it covers whole countries too.
    await expect(set(['+3'])).rejects.toMatchObject({ code: 'invalid_parameter' });
    const put = await putGuard(operator, d.serviceSid, { safeList: ['+49'] });
    expect(put.status).toBe(400);
    expect(put.body).toMatchObject({
      code: 'invalid_parameter',
      message: expect.stringContaining('+49 covers'),
    });
    // Ranges inside a calling code are what the list is for, a NANP area code included.
    expect((await set(['+1415', '+4474'])).guard?.safeList).toEqual(['+1415', '+4474']);
    // An entry stored before the rule is not taken away by the next change of the list.
    await harness.accounts.store.updateService(d.serviceSid, { guardSafeList: ['+1'] }, []);
    expect((await set(['+1', '+447400'])).guard?.safeList).toEqual(['+1', '+447400']);
    expect((await set([])).guard?.safeList).toEqual([]);
  });

  test('two tabs changing the guard at once: the change made on the older copy is refused 409 and changes nothing', async () => {
    const path = `/services/${d.serviceSid}/guard`;
    // Each tab's copy: read by both before either changes anything.
    const tabA = (await call(operator, 'GET', path)).body;
    const tabB = (await call(operator, 'GET', path)).body;
    /** What the page sends: every setting from its copy, the ones changed, and the copy's version. */
    const save = (copy: Record<string, unknown>, changed: Record<string, unknown>) =>
      call(operator, 'PUT', path, {
        level: copy.guardLevel,
        safeList: copy.safeList,
        riskCheckOptOut: copy.riskCheckOptOut,
        guardVersion: copy.guardVersion,
        ...changed,
      });
    const guardChanges = async () =>
      (await harness.accounts.auditTrail(d.serviceSid, 500)).filter((r) => r.action.startsWith('guard.'))
        .length;

    // A adds a number to the safe list; B, on its older copy, changes the level.
    const first = await save(tabA, { safeList: [...(tabA.safeList as string[]), '+447400555'] });
    expect(first.status).toBe(200);
    const recorded = await guardChanges();
    const stale = await save(tabB, { level: 'shadow' });
    const now = (await call(operator, 'GET', path)).body;
    // A's number stays; B's level was not written, nor any record.
    expect(now.safeList).toContain('+447400555');
    expect([stale.status, stale.body]).toEqual([
      409,
      {
        code: 'conflict',
        message: 'The guard settings changed since this page was loaded: reload to see them.',
      },
    ]);
    expect(now).toMatchObject({ guardLevel: tabA.guardLevel, guardVersion: first.body.guardVersion });
    expect(await guardChanges()).toBe(recorded);

    // Settings sent without the version they were made on (a page loaded before the console sent it).
    const unversioned = await call(operator, 'PUT', path, { level: 'shadow' });
    expect([unversioned.status, unversioned.body.code]).toEqual([409, 'conflict']);
    expect(unversioned.body.message).toMatch(
      /^This page was loaded before the console was updated: reload it/,
    );
    expect(await guardChanges()).toBe(recorded);

    // Made on the settings read again, the change keeps both.
    const again = await save(now, { level: 'shadow' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ guardLevel: 'shadow', safeList: ['+447400555'] });
    // An operator's change with the admin command (a fresh read of its own) also makes older copies stale.
    await harness.accounts.setRiskCheckOptOut(BY_TEST, d.serviceSid, true);
    expect((await save(again.body, { safeList: [] })).status).toBe(409);
    const last = (await call(operator, 'GET', path)).body;
    expect(last).toMatchObject({ guardLevel: 'shadow', safeList: ['+447400555'], riskCheckOptOut: true });
    // Neither the rules' nor the channels' changes move the guard's version: their pages are others.
    await harness.accounts.setRules(BY_TEST, d.serviceSid, { blockedPrefixes: [] });
    await harness.accounts.setChannels(BY_TEST, d.serviceSid, ['sms']);
    const restored = await save(last, { level: tabA.guardLevel, safeList: [], riskCheckOptOut: false });
    expect(restored.status).toBe(200);
    await harness.accounts.setChannels(BY_TEST, d.serviceSid, [...CHANNELS]);
  });

  test('changes of the guard made without a version (the admin command reads them just before) all land, at once too', async () => {
    const path = `/services/${d.serviceSid}/guard`;
    const before = (await call(operator, 'GET', path)).body;
    // Each write holds only while the settings are the ones it read: those that meet another read them again.
    await Promise.all([
      harness.accounts.setGuardLevel(BY_TEST, d.serviceSid, 'shadow'),
      harness.accounts.setGuardSafeList(BY_TEST, d.serviceSid, ['+447400777']),
      harness.accounts.setRiskCheckOptOut(BY_TEST, d.serviceSid, true),
    ]);
    const after = (await call(operator, 'GET', path)).body;
    expect(after).toMatchObject({
      guardVersion: (before.guardVersion as number) + 3,
      guardLevel: 'shadow',
      safeList: ['+447400777'],
      riskCheckOptOut: true,
    });
    const records = (await harness.accounts.auditTrail(d.serviceSid, 3)).map((r) => r.action).sort();
    expect(records).toEqual(['guard.level', 'guard.risk_check', 'guard.safelist']);
    await putGuard(operator, d.serviceSid, {
      level: before.guardLevel,
      safeList: [],
      riskCheckOptOut: false,
    });
  });
});

describe('activity', () => {
  test('verifications latest first, search by number and SID, and the timeline of a fallback', async () => {
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: { deliver: 50 } } });
    // Charge lines sort by time: the earlier tests' sends are a second older.
    harness.clock.advance(1000);
    const sent = await harness.client(a).send({ To: to });
    const sid = sent.body.sid as string;
    await eventually(async () => {
      const fetched = await harness.client(a).fetch(sid);
      return fetched.body.delivery_status === 'DELIVERED' ? true : undefined;
    }, 15_000);
    harness.clock.advance(1000);
    const other = await harness.client(a).send({ To: freshMobile() });

    const list = await call(alice, 'GET', `/services/${a.serviceSid}/verifications`);
    const sids = (list.body.verifications as { sid: string }[]).map((v) => v.sid);
    expect(sids[0]).toBe(other.body.sid);
    expect(sids[1]).toBe(sid);
    // The page says how many the list holds at most when it is full.
    expect(list.body.listedAtMost).toBe(50);

    const byNumber = await call(
      alice,
      'GET',
      `/services/${a.serviceSid}/verifications?q=${encodeURIComponent(to)}`,
    );
    expect((byNumber.body.verifications as { sid: string }[]).map((v) => v.sid)).toEqual([sid]);
    const bySid = await call(alice, 'GET', `/services/${a.serviceSid}/verifications?q=${sid}`);
    expect((bySid.body.verifications as { sid: string }[]).map((v) => v.sid)).toEqual([sid]);

    const timeline = await call(alice, 'GET', `/services/${a.serviceSid}/verifications/${sid}`);
    expect(timeline.body).toMatchObject({ sid, deliveryStatus: 'DELIVERED', channel: 'viber' });
    const entries = timeline.body.entries as {
      kind: string;
      channel?: string;
      text: string;
      offsetSeconds?: number;
    }[];
    expect(entries.map((e) => [e.kind, e.channel])).toEqual(
      expect.arrayContaining([
        ['attempt', 'sna'],
        ['switch', 'viber'],
        ['attempt', 'viber'],
        ['silence', 'sna'],
        ['receipt', 'viber'],
      ]),
    );
    const switched = entries.find((e) => e.kind === 'switch')!;
    // The handlers run on the harness's fake clock, so the offsets are not real here (the browser test's are).
    expect(switched.text).toBe('No receipt for sna within 1 s: switched to viber');
    // Never a code: the check entry gives the outcome only.
    expect(JSON.stringify(timeline.body)).not.toMatch(/\b\d{6}\b/);
  });

  test('charges: balance, by day and country, and a CSV with one line per charge', async () => {
    const charges = await call(alice, 'GET', `/services/${a.serviceSid}/charges`);
    expect(charges.status).toBe(200);
    const ledger = await harness.accounts.listCharges(a.serviceSid);
    expect(charges.body.count).toBe(ledger.length);
    expect(charges.body.byCountry).toEqual([expect.objectContaining({ key: 'GB', count: ledger.length })]);
    const service = await harness.accounts.getService(a.serviceSid);
    expect(charges.body.balance).toBe((service!.balance / 10_000).toFixed(4));

    const csv = await call(alice, 'GET', `/services/${a.serviceSid}/charges.csv`);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toBe('date,verification_sid,amount_usd,country');
    expect(
      lines
        .slice(1)
        .map((line) => line.split(',')[1])
        .sort(),
    ).toEqual(ledger.map((line) => line.verificationSid).sort());
  });

  test('conversion over 24 hours and 7 days by channel and country', async () => {
    const answer = await call(alice, 'GET', `/services/${a.serviceSid}/conversion`);
    const day = (answer.body.windows as Record<string, Record<string, unknown>>)['24h']!;
    const ledger = await harness.accounts.listCharges(a.serviceSid);
    expect(day.sent).toBe(ledger.length);
    expect(day.delivered as number).toBeGreaterThanOrEqual(1);
    expect(day.byChannel).toEqual(expect.arrayContaining([expect.objectContaining({ key: 'viber' })]));
    expect(day.byCountry).toEqual([expect.objectContaining({ key: 'GB', sent: ledger.length })]);
  });

  test('webhooks: added (secret shown once), rotated, disabled', async () => {
    const added = await call(alice, 'POST', `/services/${a.serviceSid}/webhooks`, {
      url: `${harness.stack.url}/_local/webhooks/receiver`,
    });
    expect(added.status).toBe(201);
    expect(added.body.secret).toMatch(/^whsec_/);
    const wh = added.body.endpointSid as string;
    const listed = await call(alice, 'GET', `/services/${a.serviceSid}/webhooks`);
    expect(JSON.stringify(listed.body)).not.toContain(added.body.secret as string);
    const rotated = await call(alice, 'POST', `/services/${a.serviceSid}/webhooks/${wh}/rotate`, {});
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(added.body.secret);
    await call(alice, 'POST', `/services/${a.serviceSid}/webhooks/${wh}/disable`);
    const after = await call(alice, 'GET', `/services/${a.serviceSid}/webhooks`);
    expect(after.body.endpoints).toEqual([expect.objectContaining({ endpointSid: wh, enabled: false })]);
  });
});

describe('the page', () => {
  test('served with a strict Content-Security-Policy, no inline script or style', async () => {
    const page = await fetch(`${harness.stack.url}/console`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style|style=/);
    const script = await fetch(`${harness.stack.url}/console/app.js`);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await script.text()).length).toBeLessThan(60_000);
    expect((await fetch(`${harness.stack.url}/console/../etc/passwd`)).status).toBe(404);
    expect(await (await fetch(`${harness.stack.url}/console/config.json`)).json()).toEqual({ mode: 'local' });
  });
});
