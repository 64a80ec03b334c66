/**
 * The account rules the console and the admin command share: operator rights are read from the table at each
 * request (the sign-in group alone makes a member), a malformed path is a 404, the request log names the user
 * and the service, and a template over the service's SMS part limit is refused on both paths until the limit is
 * raised, while older over-limit templates are flagged and still send.
 */
import { LocalConsoleAuth } from '../../local/console-auth';
import { runAdminCommand } from '../support/admin-cli';
import { BY_TEST, startHarness, type Account, type Harness } from '../support/harness';

let harness: Harness;
let auth: LocalConsoleAuth;
let account: Account;

beforeAll(async () => {
  harness = await startHarness();
  auth = new LocalConsoleAuth(harness.masterKey, () => harness.clock.now());
  account = await harness.createAccount();
  await harness.accounts.addMember(BY_TEST, account.serviceSid, 'member@example.com');
});
afterAll(() => harness.close());

/** A token as the sign-in service issues it; `operator`: in the sign-in group, with no operator item written. */
const token = (user: string, operator = false) => auth.sign(user, operator).token;

async function call(
  bearer: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; contentType: string | null }> {
  const response = await fetch(`${harness.stack.url}/console/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: JSON.parse(await response.text()) as Record<string, unknown>,
    contentType: response.headers.get('content-type'),
  };
}

const admin = (args: string[]) => runAdminCommand(args, harness);

describe('operator rights come from the table, at each request', () => {
  const user = 'grouped@example.com';

  test('the sign-in group without an operator item is not an operator; operator add and remove take effect at the next request', async () => {
    const bearer = token(user, true);
    const asMember = async () => {
      expect((await call(bearer, 'GET', '/me')).body).toMatchObject({ user: { operator: false } });
      expect((await call(bearer, 'POST', '/services', { name: 'Nope' })).status).toBe(403);
      expect(
        (await call(bearer, 'POST', `/services/${account.serviceSid}/topup`, { amount: '1' })).status,
      ).toBe(403);
      expect((await call(bearer, 'GET', `/services/${account.serviceSid}`)).status).toBe(403);
    };
    await asMember();

    expect((await admin(['operator', 'add', user])).code).toBe(0);
    expect((await call(bearer, 'GET', '/me')).body).toMatchObject({ user: { operator: true } });
    expect((await call(bearer, 'POST', '/services', { name: 'Yes' })).status).toBe(201);
    expect((await call(bearer, 'GET', `/services/${account.serviceSid}`)).status).toBe(200);

    // The same token, still in the group: rights end with the table's item.
    expect((await admin(['operator', 'remove', user])).code).toBe(0);
    await asMember();
  });

  test('an operator item without the sign-in group is not an operator either', async () => {
    expect((await admin(['operator', 'add', 'itemonly@example.com'])).code).toBe(0);
    const bearer = token('itemonly@example.com');
    expect((await call(bearer, 'GET', '/me')).body).toMatchObject({ user: { operator: false } });
    expect((await call(bearer, 'POST', '/services', { name: 'Nope' })).status).toBe(403);
  });
});

test('a path parameter that is not valid percent-encoding answers 404 JSON, not 500', async () => {
  const answer = await call(token('member@example.com'), 'GET', '/services/%E0%A4%A/keys');
  expect(answer.status).toBe(404);
  expect(answer.contentType).toMatch(/^application\/json/);
  expect(answer.body).toMatchObject({ code: expect.stringMatching(/not_found/) });
  // The console's handler answered it (its request log line), not the server in front of it.
  expect(harness.logs.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(
    expect.objectContaining({ route: 'GET /console/api/services/:sid/keys', status: 404 }),
  );
});

test("the console's request log line names the route, the user id and the full Service SID", async () => {
  expect(
    (await call(token('member@example.com'), 'GET', `/services/${account.serviceSid}/keys`)).status,
  ).toBe(200);
  const lines = harness.logs
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.route === 'GET /console/api/services/:sid/keys');
  expect(lines.at(-1)).toMatchObject({
    status: 200,
    userId: 'member@example.com',
    serviceSid: account.serviceSid,
  });
  expect(String(lines.at(-1)!.serviceSid)).toMatch(/^VA[0-9a-f]{32}$/);
});

describe("a template over the service's SMS part limit", () => {
  // 300 GSM-7 characters and a 10-character code: 3 parts, over the default limit of 2.
  const long = `${'Your verification code for the Acme example service follows. '.repeat(6).slice(0, 300)} {code}`;
  const longer = `${long} .`;

  test('is refused with its part count by the console and the admin command, until `template limit VA 3`', async () => {
    const member = token('member@example.com');
    const fromConsole = await call(member, 'POST', `/services/${account.serviceSid}/templates`, {
      body: long,
    });
    expect(fromConsole.status).toBe(400);
    expect(fromConsole.body).toMatchObject({
      code: 'invalid_parameter',
      message: expect.stringContaining('3 parts'),
    });
    const cli = await admin(['template', 'add', account.serviceSid, long]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('3 parts');
    expect(cli.stderr).toContain('allows 2');
    expect(await harness.accounts.listTemplates(account.serviceSid)).toHaveLength(1);

    expect((await admin(['template', 'limit', account.serviceSid, '3'])).code).toBe(0);
    expect(
      (await call(member, 'POST', `/services/${account.serviceSid}/templates`, { body: long })).status,
    ).toBe(201);
    expect((await admin(['template', 'add', account.serviceSid, longer])).code).toBe(0);
  });

  test('already stored is flagged by `template list` after the limit is lowered, and still sends (201)', async () => {
    expect((await admin(['template', 'limit', account.serviceSid, '2'])).code).toBe(0);
    const listed = await admin(['template', 'list', account.serviceSid, '--json']);
    const { templates } = JSON.parse(listed.stdout) as {
      templates: { sid: string; body: string; sms: { segments: number; overLimit: boolean } }[];
    };
    const over = templates.filter((t) => t.sms.overLimit);
    expect(over.map((t) => t.body).sort()).toEqual([long, longer].sort());
    expect(over.every((t) => t.sms.segments === 3)).toBe(true);
    const text = await admin(['template', 'list', account.serviceSid]);
    expect(text.stdout.match(/OVER LIMIT/g)).toHaveLength(2);
    expect(text.stdout).toContain("2 templates take more than the service's 2 SMS parts");

    const sent = await harness.client(account).send({ To: '+14155559101', TemplateSid: over[0]!.sid });
    expect(sent.status).toBe(201);
    await harness.stack.workflow.idle();
  });
});
