/** Spec 4.2 and the `status` state table of part 3: every outcome, over HTTP against DynamoDB Local. */
import { startHarness, type Account, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
let account: Account;
let api: ApiClient;
let counter = 0;
const freshNumber = () => `+1650555${String(2000 + ++counter).padStart(4, '0')}`;

beforeAll(async () => {
  harness = await startHarness();
  account = await harness.createAccount();
  api = harness.client(account);
});
afterAll(() => harness.close());

/** Sends a code to a fresh number and returns its SID and the code as the end user reads it. */
async function sendCode(): Promise<{ sid: string; code: string; to: string }> {
  const to = freshNumber();
  const response = await api.send({ To: to });
  expect(response.status).toBe(201);
  return { sid: response.body.sid as string, code: await api.deliveredCode(to), to };
}

const wrong = (code: string) => (code === '000000' ? '111111' : '000000');

describe('PENDING', () => {
  it('correct code: 200 VERIFIED, one attempt used, `to` is the verified number', async () => {
    const { sid, code, to } = await sendCode();
    const response = await api.check({ VerificationSid: sid, Code: code });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ sid, to, status: 'VERIFIED', attempts_remaining: 4 });
  });

  it('wrong code with tries left: 422 PENDING, attempts_remaining decreases', async () => {
    const { sid, code } = await sendCode();
    for (const remaining of [4, 3, 2, 1]) {
      const response = await api.check({ VerificationSid: sid, Code: wrong(code) });
      expect(response.status).toBe(422);
      expect(response.body).toMatchObject({ status: 'PENDING', attempts_remaining: remaining });
    }
  });

  it('the fifth wrong code: 409 LOCKED; then even the right code is 409 LOCKED with no attempt used', async () => {
    const { sid, code } = await sendCode();
    for (let i = 0; i < 4; i++) await api.check({ VerificationSid: sid, Code: wrong(code) });
    const fifth = await api.check({ VerificationSid: sid, Code: wrong(code) });
    expect(fifth.status).toBe(409);
    expect(fifth.body).toMatchObject({ status: 'LOCKED', attempts_remaining: 0 });
    const right = await api.check({ VerificationSid: sid, Code: code });
    expect(right.status).toBe(409);
    expect(right.body).toMatchObject({ status: 'LOCKED', attempts_remaining: 0 });
    expect((await api.fetch(sid)).body.status).toBe('LOCKED');
  });

  it('compares exactly: spaces and dashes are not stripped', async () => {
    const { sid, code } = await sendCode();
    for (const typed of [
      `${code.slice(0, 3)} ${code.slice(3)}`,
      `${code.slice(0, 3)}-${code.slice(3)}`,
      ` ${code}`,
    ]) {
      expect((await api.check({ VerificationSid: sid, Code: typed })).status).toBe(422);
    }
    expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(200);
  });

  it('past expires_at: 409 EXPIRED, no attempt used, and EXPIRED is written back', async () => {
    const { sid, code } = await sendCode();
    const sent = await api.fetch(sid);
    harness.clock.set(new Date(sent.body.expires_at as string));
    const response = await api.check({ VerificationSid: sid, Code: code });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ status: 'EXPIRED', attempts_remaining: 5 });
    const item = (await harness.scanTable()).find((row) => row.sid === sid);
    expect(item?.status).toBe('EXPIRED');
    harness.clock.set(new Date());
  });

  it('fetch shows a PENDING code past expires_at as EXPIRED before any check', async () => {
    const { sid } = await sendCode();
    harness.clock.advance(300_001);
    expect((await api.fetch(sid)).body.status).toBe('EXPIRED');
    harness.clock.set(new Date());
  });
});

describe('settled codes use no attempt', () => {
  it('VERIFIED: a second check (double submit) is 409 VERIFIED', async () => {
    const { sid, code } = await sendCode();
    expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(200);
    for (const typed of [code, wrong(code)]) {
      const again = await api.check({ VerificationSid: sid, Code: typed });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ status: 'VERIFIED', attempts_remaining: 4 });
    }
  });

  it('EXPIRED stays EXPIRED', async () => {
    const { sid, code } = await sendCode();
    harness.clock.advance(301_000);
    await api.check({ VerificationSid: sid, Code: code });
    const again = await api.check({ VerificationSid: sid, Code: code });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ status: 'EXPIRED', attempts_remaining: 5 });
    harness.clock.set(new Date());
  });
});

describe('errors', () => {
  it.each([
    ['VerificationSid missing', { Code: '123456' }],
    ['Code missing', { VerificationSid: 'VE00000000000000000000000000000000' }],
    [
      'Code longer than 10 characters',
      { VerificationSid: 'VE00000000000000000000000000000000', Code: '12345678901' },
    ],
  ])('400 invalid_parameter: %s', async (_, params) => {
    const response = await api.check(params);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_parameter');
  });

  it('404 not_found for an unknown SID, a malformed one, or one of another service', async () => {
    const { sid, code } = await sendCode();
    const other = harness.client(await harness.createAccount());
    for (const [client, verificationSid] of [
      [api, 'VE00000000000000000000000000000000'],
      [api, '../VERIFICATION'],
      [other, sid],
    ] as const) {
      const response = await client.check({ VerificationSid: verificationSid, Code: code });
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    }
    // The other service's attempt used none of this code's attempts.
    expect((await api.check({ VerificationSid: sid, Code: code })).body.attempts_remaining).toBe(4);
  });

  it('409 client_code for a caller-supplied code, with no attempt used', async () => {
    const response = await api.send({ To: freshNumber(), Code: '4821' });
    const sid = response.body.sid as string;
    const check = await api.check({ VerificationSid: sid, Code: '4821' });
    expect(check.status).toBe(409);
    expect(check.body.code).toBe('client_code');
    expect((await api.fetch(sid)).body.attempts_remaining).toBe(5);
  });
});

describe('concurrency (conditional writes, no read-then-write)', () => {
  it('20 simultaneous checks of the right code give exactly one 200', async () => {
    const { sid, code } = await sendCode();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => api.check({ VerificationSid: sid, Code: code })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(19);
    expect(
      responses.every((response) => response.status !== 409 || response.body.status === 'VERIFIED'),
    ).toBe(true);
  });

  it('20 simultaneous wrong checks spend exactly 5 attempts and lock', async () => {
    const { sid, code } = await sendCode();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => api.check({ VerificationSid: sid, Code: wrong(code) })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 422)).toHaveLength(4);
    expect(statuses.filter((status) => status === 409)).toHaveLength(16);
    expect(responses.every((response) => (response.body.attempts_remaining as number) >= 0)).toBe(true);
    const final = await api.fetch(sid);
    expect(final.body).toMatchObject({ status: 'LOCKED', attempts_remaining: 0 });
  });
});
