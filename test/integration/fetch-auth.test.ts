/** Spec 4.3 (fetch), part 5 (authentication), the per-key limit of part 8, and the body conventions of part 1. */
import { randomBytes } from 'node:crypto';
import { API_KEY_GUARD_DEFAULTS, ApiKeyGuard } from '../../functions/http/middleware';
import { DynamoFaults } from '../support/faults';
import { BY_TEST, startHarness, type Account, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
let account: Account;
let api: ApiClient;

beforeAll(async () => {
  harness = await startHarness({ settings: { keyRequestsPerMinute: 1000 } });
  account = await harness.createAccount();
  api = harness.client(account);
});
afterAll(() => harness.close());

describe('fetch', () => {
  it('returns the verification in any state, free: no attempt used', async () => {
    const sent = await api.send({ To: '+14155550140' });
    const sid = sent.body.sid as string;
    const fetched = await api.fetch(sid);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ sid, to: '+14155550140', status: 'PENDING', attempts_remaining: 5 });
    expect(Object.keys(fetched.body).sort()).toEqual(Object.keys(sent.body).sort());
    expect((await api.fetch(sid)).body.attempts_remaining).toBe(5);
  });

  it('404 not_found for an unknown SID or one of another service', async () => {
    const other = harness.client(await harness.createAccount());
    const mine = (await api.send({ To: '+14155550141' })).body.sid as string;
    for (const [client, sid] of [
      [api, 'VE0123456789abcdef0123456789abcdef'],
      [api, 'VE..%2F..%2FSERVICE'],
      [other, mine],
    ] as const) {
      const response = await client.fetch(sid);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    }
  });
});

describe('unknown keys cannot starve real ones (per function instance)', () => {
  let guarded: Harness;
  const faults = new DynamoFaults();
  const junkKey = () => `otpk_${randomBytes(32).toString('base64url')}`;
  const apiKeyCalls = () => faults.calls.filter((call) => call.pks.some((pk) => pk.startsWith('APIKEY#')));

  // A smaller bucket than a deployed instance's: a flood far past it on any machine (a loaded one takes seconds to
  // answer 400 requests, which would refill the default's 50 a second), and few enough lookups at once that
  // DynamoDB Local answers them within the client's time-outs.
  const bucket = { ...API_KEY_GUARD_DEFAULTS, burst: 20, lookupsPerSecond: 2 };

  beforeAll(async () => {
    guarded = await startHarness({
      decorateDynamoClient: faults.install,
      apiKeyGuard: new ApiKeyGuard(bucket),
    });
  });
  afterAll(() => guarded.close());
  beforeEach(() => faults.reset());

  it('malformed keys never reach DynamoDB; a repeated unknown key costs one request', async () => {
    const client = guarded.client(await guarded.createAccount());
    faults.reset();
    for (const apiKey of ['otpk_short', 'x'.repeat(48), `otpk_${'!'.repeat(43)}`])
      expect((await client.fetch('VE0123456789abcdef0123456789abcdef', { apiKey })).status).toBe(401);
    expect(apiKeyCalls()).toHaveLength(0);
    const unknown = junkKey();
    for (let i = 0; i < 5; i++)
      expect((await client.fetch('VE0123456789abcdef0123456789abcdef', { apiKey: unknown })).status).toBe(
        401,
      );
    expect(apiKeyCalls()).toHaveLength(1);
  });

  it('a flood of random well-formed keys costs a bounded number of requests, and a real key still works', async () => {
    const client = guarded.client(await guarded.createAccount());
    expect((await client.fetch('VE0123456789abcdef0123456789abcdef')).status).toBe(404);
    faults.reset();
    const started = Date.now();
    const flood = await Promise.all(
      Array.from({ length: 400 }, () =>
        client.fetch('VE0123456789abcdef0123456789abcdef', { apiKey: junkKey() }),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    // The instance's lookup bucket: its burst, and its refill over the time the flood took (the bucket itself
    // is tested on a clock the test moves in test/unit/api-key-guard.test.ts).
    const { burst, lookupsPerSecond } = bucket;
    expect(apiKeyCalls().length).toBeGreaterThan(0);
    expect(apiKeyCalls().length).toBeLessThanOrEqual(burst + Math.ceil(seconds * lookupsPerSecond) + 1);
    // Each key that got its write is refused as unknown; the rest never reached DynamoDB.
    const unauthorized = flood.filter((r) => r.status === 401);
    const refused = flood.filter((r) => r.status === 429);
    expect(unauthorized.length + refused.length).toBe(400);
    expect(refused.length).toBeGreaterThan(0);
    expect(unauthorized.length).toBeLessThanOrEqual(apiKeyCalls().length);
    expect(refused.every((r) => r.body.code === 'rate_limited' && r.headers.get('retry-after') === '1')).toBe(
      true,
    );
    // The key that worked before the flood is not held back by it.
    expect((await client.fetch('VE0123456789abcdef0123456789abcdef')).status).toBe(404);
  });
});

describe('authentication', () => {
  it('401 unauthorized without a key or with an unknown key, revealing nothing', async () => {
    for (const apiKey of [null, 'otpk_not-a-real-key', '']) {
      const response = await api.send({ To: '+14155550142' }, { apiKey });
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ code: 'unauthorized', message: expect.any(String) });
    }
  });

  it('403 forbidden for a key used on another service path, whether that service exists or not', async () => {
    const other = await harness.createAccount();
    for (const serviceSid of [other.serviceSid, 'VA00000000000000000000000000000000']) {
      const response = await api.send({ To: '+14155550143' }, { serviceSid });
      expect(response.status).toBe(403);
      expect(response.body.code).toBe('forbidden');
    }
    expect(await harness.accounts.listCharges(other.serviceSid)).toEqual([]);
  });

  it("a refused request's log line names no service: another service's path is not its own", async () => {
    const other = await harness.createAccount();
    const sid = (await harness.client(other).send({ To: '+14155550144' })).body.sid as string;
    const from = harness.logs.length;
    for (const request of [
      () => api.send({ To: '+14155550144' }, { serviceSid: other.serviceSid }),
      () => api.fetch(sid, { serviceSid: other.serviceSid }),
      () => api.check({ VerificationSid: sid, Code: '123456' }, { serviceSid: other.serviceSid }),
    ]) {
      expect((await request()).status).toBe(403);
    }
    // The API's own lines: the carrier's receipt for the other service's send may be logged among them.
    const lines = harness.logs
      .slice(from)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'request' && !String(line.route).includes('/Callbacks/'));
    expect(lines.map((line) => line.status)).toEqual([403, 403, 403]);
    // An operator reading the other service's requests must not find ones its keys never made.
    for (const line of lines) expect(line.serviceSid).toBeUndefined();
  });

  it('a revoked key stops working at the next request, on a function that just used it', async () => {
    const fresh = await harness.createAccount();
    const client = harness.client(fresh);
    expect((await client.fetch('VE0123456789abcdef0123456789abcdef')).status).toBe(404);
    const [key] = await harness.accounts.listApiKeys(fresh.serviceSid);
    await harness.accounts.revokeApiKey(BY_TEST, fresh.serviceSid, key!.keyId);
    for (const request of [
      () => client.fetch('VE0123456789abcdef0123456789abcdef'),
      () => client.send({ To: '+14155550149' }),
    ]) {
      const response = await request();
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthorized');
    }
    expect(await harness.accounts.listCharges(fresh.serviceSid)).toEqual([]);
  });
});

describe('request bodies', () => {
  const balance = async () => (await harness.accounts.getService(account.serviceSid))!.balance;

  it.each([
    ['malformed JSON', '{"To": "+14155550150"', 'application/json'],
    ['a JSON array', '["+14155550150"]', 'application/json'],
    ['To of the wrong type', '{"To": 14155550150}', 'application/json'],
    ['Code of the wrong type', '{"To": "+14155550150", "Code": 123456}', 'application/json'],
    ['JSON without the JSON content type', '{"To": "+14155550150"}', 'application/x-www-form-urlencoded'],
    ['an unsupported content type', 'To=%2B14155550150', 'text/plain'],
    ['an oversized body', `To=%2B14155550150&Pad=${'x'.repeat(20_000)}`, 'application/x-www-form-urlencoded'],
  ])('400 invalid_parameter for %s, never a 500 or a charge', async (_, body, contentType) => {
    const before = await balance();
    const response = await api.request('POST', `/v2/Services/${account.serviceSid}/Verifications`, body, {
      headers: { 'content-type': contentType },
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_parameter');
    expect(await balance()).toBe(before);
  });

  it('reads the first value of a repeated form field', async () => {
    const response = await api.request(
      'POST',
      `/v2/Services/${account.serviceSid}/Verifications`,
      'To=%2B14155550151&To=%2B14155550152',
      { headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    );
    expect(response.status).toBe(201);
    expect(response.body.to).toBe('+14155550151');
  });
});

describe('per-key request limit', () => {
  it('429 rate_limited with an honest Retry-After: waiting that long succeeds', async () => {
    const limited = await startHarness({ settings: { keyRequestsPerMinute: 5 } });
    try {
      const client = limited.client(await limited.createAccount());
      // Start at a known point in a minute window.
      limited.clock.set(new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 15_000));
      const sid = 'VE0123456789abcdef0123456789abcdef';
      for (let i = 0; i < 5; i++) expect((await client.fetch(sid)).status).toBe(404);
      const refused = await client.fetch(sid);
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('rate_limited');
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBe(45);
      // One second short of it: still refused. Exactly Retry-After later: served.
      limited.clock.advance((retryAfter - 1) * 1000);
      expect((await client.fetch(sid)).status).toBe(429);
      limited.clock.advance(1000);
      expect((await client.fetch(sid)).status).toBe(404);
    } finally {
      await limited.close();
    }
  });

  it('60 simultaneous requests of a key new to the function, limit 20: exactly 20 counted and served', async () => {
    const limited = await startHarness({ settings: { keyRequestsPerMinute: 20 } });
    try {
      const account = await limited.createAccount();
      const client = limited.client(account);
      const windowStart = Math.ceil(Date.now() / 60_000) * 60_000;
      limited.clock.set(new Date(windowStart + 5_000));
      // Every request races to open the window or count in it: the store must count exactly the served ones.
      const responses = await Promise.all(
        Array.from({ length: 60 }, () => client.fetch('VE0123456789abcdef0123456789abcdef')),
      );
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 404)).toHaveLength(20);
      expect(statuses.filter((status) => status === 429)).toHaveLength(40);
      const keyItem = (await limited.scanTable()).find(
        (item) => item.type === 'api_key' && item.service_sid === account.serviceSid,
      )!;
      expect(keyItem).toMatchObject({
        rate_window: windowStart,
        rate_counts: { [String(windowStart / 60_000)]: 20 },
      });
    } finally {
      await limited.close();
    }
  });
});
