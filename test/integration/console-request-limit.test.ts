/**
 * The console API's per-user request limit (`consoleRequestsPerMinute`), over HTTP on the local stack and
 * DynamoDB Local: the whole API is one API Gateway route whose throttle every service's members and the operators
 * share, so each signed-in user's requests are counted per minute and refused past the limit, with nothing done.
 */
import { keys } from '../../functions/adapters/dynamodb/keys';
import { DynamoFaults } from '../support/faults';
import { BY_TEST, startHarness, type Account, type Harness } from '../support/harness';

const LIMIT = 5;

let harness: Harness;
let a: Account;
let b: Account;

const signIn = (email: string, operator = false) => harness.consoleToken(email, operator);

async function call(token: string, method: string, path: string) {
  const response = await fetch(`${harness.stack.url}/console/api${path}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    retryAfter: response.headers.get('retry-after'),
  };
}

/** `n` requests of `token` one after another: their statuses. */
async function requests(token: string, n: number, path = '/me'): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await call(token, 'GET', path)).status);
  return statuses;
}

/** The count items of `userId` in the table. */
async function countItems(userId: string) {
  const { pk } = keys.consoleRequests(userId, new Date());
  return (await harness.scanTable()).filter((item) => item.pk === pk);
}

beforeAll(async () => {
  harness = await startHarness({ settings: { consoleRequestsPerMinute: LIMIT } });
  a = await harness.createAccount();
  b = await harness.createAccount();
  for (const user of ['alice@example.com', 'carol@example.com', 'dave@example.com']) {
    await harness.accounts.addMember(BY_TEST, a.serviceSid, user);
  }
  await harness.accounts.addMember(BY_TEST, b.serviceSid, 'bob@example.com');
});
afterAll(() => harness.close());

/** Puts the clock 10 s into a minute of its own, so a test's requests share one window. */
function startOfNextMinute(): number {
  const now = harness.clock.now().getTime();
  const next = now - (now % 60_000) + 60_000;
  harness.clock.set(new Date(next + 10_000));
  return next;
}

test("past the limit: 429 rate_limited, Retry-After to the next minute, and the request's change not made", async () => {
  startOfNextMinute();
  const alice = await signIn('alice@example.com');
  const keysBefore = await harness.accounts.store.listApiKeysWithUse(a.serviceSid);
  const auditBefore = await harness.accounts.store.listAudit(a.serviceSid, 100);
  expect(await requests(alice, LIMIT)).toEqual(Array(LIMIT).fill(200));

  // Issuing a key would write the key, its pointer, the service's count and an audit record.
  const refused = await call(alice, 'POST', `/services/${a.serviceSid}/keys`);
  expect(refused.status).toBe(429);
  expect(refused.body).toEqual({ code: 'rate_limited', message: expect.stringContaining('50 seconds') });
  expect(refused.retryAfter).toBe('50');
  expect(await harness.accounts.store.listApiKeysWithUse(a.serviceSid)).toEqual(keysBefore);
  expect(await harness.accounts.store.listAudit(a.serviceSid, 100)).toEqual(auditBefore);
  // Counted before the route is looked for: a made-up route is refused alike.
  expect((await call(alice, 'GET', '/no/such/route')).status).toBe(429);
  // The refusals wrote nothing either: the window's count is the limit, its item expires with the table's TTL.
  const [item, ...others] = await countItems('alice@example.com');
  expect(others).toEqual([]);
  expect(item).toMatchObject({ request_count: LIMIT, ttl: expect.any(Number) });
  const ttlMs = (item!.ttl as number) * 1000;
  expect(ttlMs).toBeGreaterThan(harness.clock.now().getTime());
  expect(ttlMs).toBeLessThanOrEqual(harness.clock.now().getTime() + 3 * 60_000);
});

test('counted per user: a member at the limit refuses no one else of the service, of another one, or an operator', async () => {
  startOfNextMinute();
  const [alice, carol, bob, operator] = await Promise.all([
    signIn('alice@example.com'),
    signIn('carol@example.com'),
    signIn('bob@example.com'),
    signIn('ops@example.com', true),
  ]);
  expect(await requests(alice, LIMIT + 3, `/services/${a.serviceSid}`)).toEqual([
    ...Array(LIMIT).fill(200),
    429,
    429,
    429,
  ]);
  expect(await requests(carol, LIMIT, `/services/${a.serviceSid}`)).toEqual(Array(LIMIT).fill(200));
  expect(await requests(bob, LIMIT, `/services/${b.serviceSid}`)).toEqual(Array(LIMIT).fill(200));
  expect(await requests(operator, LIMIT, `/services/${a.serviceSid}`)).toEqual(Array(LIMIT).fill(200));
  // An operator is held to the same limit by their own requests.
  expect((await call(operator, 'GET', '/me')).status).toBe(429);
});

test('the window rolls over: waiting Retry-After seconds succeeds, one second less does not', async () => {
  startOfNextMinute();
  const alice = await signIn('alice@example.com');
  expect(await requests(alice, LIMIT)).toEqual(Array(LIMIT).fill(200));
  const refused = await call(alice, 'GET', '/me');
  expect(refused.status).toBe(429);
  const wait = Number(refused.retryAfter);
  harness.clock.advance((wait - 1) * 1000);
  expect((await call(alice, 'GET', '/me')).status).toBe(429);
  harness.clock.advance(1000);
  expect(await requests(alice, LIMIT)).toEqual(Array(LIMIT).fill(200));
  expect((await call(alice, 'GET', '/me')).status).toBe(429);
});

test('exact under concurrency: of 20 requests at once, the limit is served', async () => {
  startOfNextMinute();
  const dave = await signIn('dave@example.com');
  const statuses = await Promise.all(
    Array.from({ length: 20 }, () => call(dave, 'GET', '/me').then((answer) => answer.status)),
  );
  expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
  expect(statuses.filter((status) => status === 429)).toHaveLength(20 - LIMIT);
});

test("the count goes beside the reads that authorize the request: the member's read does not wait for it", async () => {
  const faults = new DynamoFaults();
  const held = await startHarness({ decorateDynamoClient: (client) => faults.install(client) });
  try {
    const account = await held.createAccount();
    await held.accounts.addMember(BY_TEST, account.serviceSid, 'erin@example.com');
    const erin = await held.consoleToken('erin@example.com');
    // When each call of the console's client starts; the count's write held 600 ms before it goes.
    const started = new Map<string, number>();
    faults.inject({
      where: (call) => {
        started.set(call.pks[0]!.split('#')[0]!, Date.now());
        return false;
      },
    });
    faults.inject({ kind: 'slow', delayMs: 600, operation: 'UpdateItem', pkPrefix: 'CONSOLEUSER#' });
    const answer = await fetch(`${held.stack.url}/console/api/services/${account.serviceSid}`, {
      headers: { authorization: `Bearer ${erin}` },
    });
    expect(answer.status).toBe(200);
    // One after the other, the membership read would start after the held count (600 ms on).
    expect(started.get('MEMBER')! - started.get('CONSOLEUSER')!).toBeLessThan(300);
  } finally {
    await held.close();
  }
});
