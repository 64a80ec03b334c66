/** The send endpoint: every rule and every error it answers (docs/api.md), over HTTP against DynamoDB Local. */
import { UNITS_PER_USD } from '../../functions/core/money';
import { BY_TEST, startHarness, type Account, type ApiClient, type Harness } from '../support/harness';

const GB_MOBILE = '+447400123456'; // UK mobile: sna is the cheapest channel
const GB_LANDLINE = '+442079460000'; // UK fixed line: no channel reaches it
const CUBA = '+5352123456'; // served, but no list price
const JAPAN = '+819012345678'; // a valid number in a country that is not served

let harness: Harness;
let account: Account;
let api: ApiClient;

beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.close());
beforeEach(async () => {
  account = await harness.createAccount();
  api = harness.client(account);
});

const balance = async (serviceSid = account.serviceSid) =>
  (await harness.accounts.getService(serviceSid))!.balance;
const charges = (serviceSid = account.serviceSid) => harness.accounts.listCharges(serviceSid);
/** A number nobody else in this file sends to, so the per-number limits of one test do not touch another. */
let counter = 0;
const freshUsNumber = () => `+1415555${String(1000 + ++counter).padStart(4, '0')}`;

describe('accepted send', () => {
  it('returns 201 with exactly the fields of the verification object', async () => {
    const to = freshUsNumber();
    const response = await api.send({ To: to });
    expect(response.status).toBe(201);
    const body = response.body;
    expect(Object.keys(body).sort()).toEqual(
      [
        'attempts_remaining',
        'channel',
        'date_created',
        'delivery_status',
        'expires_at',
        'price',
        'price_unit',
        'sid',
        'status',
        'to',
      ].sort(),
    );
    expect(body).toMatchObject({
      to,
      status: 'PENDING',
      delivery_status: 'PENDING',
      channel: 'whatsapp',
      price: '0.0500',
      price_unit: 'USD',
      attempts_remaining: 5,
    });
    expect(body.sid).toMatch(/^VE[0-9a-f]{32}$/);
    const created = Date.parse(body.date_created as string);
    expect(body.date_created).toMatch(/Z$/);
    expect(Date.parse(body.expires_at as string) - created).toBe(300_000);
  });

  it('charges the price once per 201 and writes one ledger line', async () => {
    const before = await balance();
    const first = await api.send({ To: freshUsNumber() });
    const second = await api.send({ To: freshUsNumber() });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(await balance()).toBe(before - 2 * 500);
    const lines = await charges();
    expect(lines.map((line) => line.verificationSid).sort()).toEqual(
      [first.body.sid, second.body.sid].sort(),
    );
    expect(lines.every((line) => line.amount === 500)).toBe(true);
  });

  it('normalises the number to E.164, so `to` may differ from `To`', async () => {
    const response = await api.send({ To: '+1 (415) 555-0177' });
    expect(response.status).toBe(201);
    expect(response.body.to).toBe('+14155550177');
  });

  it.each([
    ['tabs', '\t'],
    ['thin spaces', '\u2009'],
    ['narrow no-break spaces', '\u202f'],
    ['en spaces', '\u2002'],
    ['left-to-right marks', '\u200e'],
  ])('normalises %s between the digits, as any other space', async (_, gap) => {
    const digits = freshUsNumber().slice(2);
    const to = `+1${gap}${digits.slice(0, 3)}${gap}${digits.slice(3, 6)}${gap}${digits.slice(6)}`;
    const response = await api.send({ To: to });
    expect([response.status, response.body.to]).toEqual([201, `+1${digits}`]);
  });

  it('reads a full-width plus as the plus, as it reads full-width digits', async () => {
    const digits = freshUsNumber().slice(2);
    const response = await api.send({ To: `\uff0b１${digits}` });
    expect([response.status, response.body.to]).toEqual([201, `+1${digits}`]);
  });

  it('takes the bidirectional marks a paste from a right-to-left page wraps a number in', async () => {
    const to = freshUsNumber();
    const response = await api.send({ To: `\u202a${to}\u202c` });
    expect([response.status, response.body.to]).toEqual([201, to]);
  });

  it('picks the cheapest enabled channel that reaches the number type', async () => {
    const mobile = await api.send({ To: GB_MOBILE });
    expect(mobile.body.channel).toBe('sna');
    const onlySms = harness.client(await harness.createAccount({ channels: ['sms', 'rcs'] }));
    const response = await onlySms.send({ To: freshUsNumber() });
    expect(response.body.channel).toBe('rcs');
  });

  it('accepts JSON with Content-Type application/json, and ignores unknown parameters', async () => {
    const to = freshUsNumber();
    const response = await api.send({ To: to, Channel: 'sms', Locale: 'fr' }, { json: true });
    expect(response.status).toBe(201);
    expect(response.body.to).toBe(to);
  });

  it('generates a 6-digit code and delivers it in the default template', async () => {
    const to = freshUsNumber();
    await api.send({ To: to });
    const [message] = await waitForMessages(api, to);
    expect(message!.body).toMatch(/^Your code is \d{6}\.$/);
  });

  it('creates a new verification and code on each send, leaving the previous code valid', async () => {
    const to = freshUsNumber();
    const first = await api.send({ To: to });
    const firstCode = await waitForCode(api, to, 1);
    const second = await api.send({ To: to });
    await waitForCode(api, to, 2);
    expect(second.body.sid).not.toBe(first.body.sid);
    const check = await api.check({ VerificationSid: first.body.sid as string, Code: firstCode });
    expect(check.status).toBe(200);
  });
});

describe('refused sends are never charged', () => {
  afterEach(async () => {
    // Every test in this block refuses; none may have charged.
    expect(await charges()).toEqual([]);
    expect(await balance()).toBe(100 * UNITS_PER_USD);
  });

  it.each([
    ['To missing', {}],
    ['To empty', { To: '' }],
    ['To longer than 20 characters', { To: '+1415555010012345678901' }],
  ])('400 invalid_parameter: %s', async (_, params) => {
    const response = await api.send(params);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_parameter');
  });

  it.each([['abc'], ['12345678901'], ['12 34'], ['12-34'], ['١٢٣٤٥٦'], ['']])(
    '400 invalid_code for Code %j',
    async (code) => {
      const response = await api.send({ To: freshUsNumber(), Code: code });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('invalid_code');
    },
  );

  it.each([
    ['not a number', 'hello'],
    ['no leading plus', '14155550100'],
    ['too short to be valid', '+1415'],
    ['a country that is not served', JAPAN],
  ])('400 unroutable: %s', async (_, to) => {
    const response = await api.send({ To: to });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('unroutable');
  });

  it('400 no_default_template when no TemplateSid and no default', async () => {
    const bare = harness.client(await harness.createAccount({ defaultTemplate: null }));
    const response = await bare.send({ To: freshUsNumber() });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('no_default_template');
    expect(await charges(bare.account.serviceSid)).toEqual([]);
  });

  it('400 no_eligible_channel when no enabled channel reaches the number', async () => {
    const landline = await api.send({ To: GB_LANDLINE });
    expect(landline.status).toBe(400);
    expect(landline.body.code).toBe('no_eligible_channel');
    const snaOnly = harness.client(await harness.createAccount({ channels: ['sna'] }));
    const response = await snaOnly.send({ To: freshUsNumber() });
    expect(response.body.code).toBe('no_eligible_channel');
  });

  it('400 unreachable while every channel of the plan rejected the number recently', async () => {
    const to = freshUsNumber();
    const until = new Date(harness.clock.now().getTime() + 86_400_000);
    // US mobiles: sna, whatsapp, rcs and sms; each rejected it (test/integration/delivery.test.ts has a plan
    // with one channel left, and a service whose channels rejected it beside one whose channels did not).
    await harness.stack.deps.store.recordRejections(to, ['sna', 'whatsapp', 'rcs', 'sms'], until);
    const response = await api.send({ To: to });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('unreachable');
  });

  it('402 insufficient_funds when the balance is below the price', async () => {
    const poor = harness.client(await harness.createAccount({ balanceUsd: 0.0499 }));
    const response = await poor.send({ To: freshUsNumber() });
    expect(response.status).toBe(402);
    expect(response.body.code).toBe('insufficient_funds');
    expect(await balance(poor.account.serviceSid)).toBe(499);
    expect(await charges(poor.account.serviceSid)).toEqual([]);
  });

  it('403 blocked_by_policy for a blocked country or number prefix', async () => {
    await harness.accounts.setRules(BY_TEST, account.serviceSid, {
      blockedCountries: ['GB'],
      blockedPrefixes: ['+1415555'],
    });
    for (const to of [GB_MOBILE, freshUsNumber()]) {
      const response = await api.send({ To: to });
      expect(response.status).toBe(403);
      expect(response.body.code).toBe('blocked_by_policy');
    }
  });

  it('404 unknown_template for a TemplateSid that is not one of the account templates', async () => {
    const other = await harness.createAccount();
    const foreign = await harness.accounts.addTemplate(BY_TEST, other.serviceSid, { body: 'Other {code}' });
    for (const templateSid of [foreign.sid, 'HX00000000000000000000000000000000', 'nonsense']) {
      const response = await api.send({ To: freshUsNumber(), TemplateSid: templateSid });
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('unknown_template');
    }
  });

  it('refuses a To that is no phone number before the template, a country not served after it', async () => {
    const unknownTemplate = 'HX00000000000000000000000000000000';
    const notANumber = await api.send({ To: '+1415', TemplateSid: unknownTemplate });
    expect([notANumber.status, notANumber.body.code]).toEqual([400, 'unroutable']);
    const notServed = await api.send({ To: JAPAN, TemplateSid: unknownTemplate });
    expect([notServed.status, notServed.body.code]).toEqual([404, 'unknown_template']);
  });

  it('500 not_priceable for a served destination without a price', async () => {
    const response = await api.send({ To: CUBA });
    expect(response.status).toBe(500);
    expect(response.body.code).toBe('not_priceable');
  });
});

describe('deployment channels (OTP_ALLOWED_CHANNELS)', () => {
  it('a channel the deployment does not allow is never tried, whatever the service enables', async () => {
    const smsOnly = await startHarness({ env: { OTP_ALLOWED_CHANNELS: 'sms' } });
    try {
      const client = smsOnly.client(await smsOnly.createAccount());
      expect((await client.send({ To: GB_MOBILE })).body.channel).toBe('sms');
      const snaService = smsOnly.client(await smsOnly.createAccount({ channels: ['sna', 'whatsapp'] }));
      expect((await snaService.send({ To: GB_MOBILE })).body.code).toBe('no_eligible_channel');
    } finally {
      await smsOnly.close();
    }
  });
});

describe('delivery rules', () => {
  it('block only what they name', async () => {
    await harness.accounts.setRules(BY_TEST, account.serviceSid, {
      blockedCountries: ['GB'],
      blockedPrefixes: ['+1415555'],
    });
    expect((await api.send({ To: '+16505550100' })).status).toBe(201);
  });
});

describe('templates', () => {
  it('uses the template named by TemplateSid', async () => {
    const template = await harness.accounts.addTemplate(BY_TEST, account.serviceSid, {
      body: 'Login code for Acme: {code}',
    });
    const to = freshUsNumber();
    expect((await api.send({ To: to, TemplateSid: template.sid })).status).toBe(201);
    const [message] = await waitForMessages(api, to);
    expect(message!.body).toMatch(/^Login code for Acme: \d{6}$/);
  });

  it('ignores a TemplateSid of another provider format (HJ...) and uses the default', async () => {
    const to = freshUsNumber();
    const response = await api.send({ To: to, TemplateSid: 'HJ0123456789abcdef0123456789abcdef' });
    expect(response.status).toBe(201);
    const [message] = await waitForMessages(api, to);
    expect(message!.body).toMatch(/^Your code is \d{6}\.$/);
  });
});

describe('caller-supplied Code', () => {
  it('is delivered exactly as given, at the same price, and never checked by the service', async () => {
    const to = freshUsNumber();
    const response = await api.send({ To: to, Code: 'Ab3dE9' });
    expect(response.status).toBe(201);
    expect(response.body.price).toBe('0.0500');
    const [message] = await waitForMessages(api, to);
    expect(message!.body).toBe('Your code is Ab3dE9.');
    const check = await api.check({ VerificationSid: response.body.sid as string, Code: 'Ab3dE9' });
    expect(check.status).toBe(409);
    expect(check.body.code).toBe('client_code');
  });
});

describe('per-number limits: 3 sends in 5 minutes, 10 in an hour', () => {
  it('refuses the fourth send within 5 minutes with 429 burst, counting refused sends too', async () => {
    const to = freshUsNumber();
    for (let i = 0; i < 3; i++) expect((await api.send({ To: to })).status).toBe(201);
    harness.clock.advance(200_000);
    const fourth = await api.send({ To: to });
    expect(fourth.status).toBe(429);
    expect(fourth.body.code).toBe('burst');
    expect(fourth.headers.get('retry-after')).toBeNull();
    // 301 s after the first three, only the refused fourth is in the window: two more fit, not three.
    harness.clock.advance(101_000);
    expect((await api.send({ To: to })).status).toBe(201);
    expect((await api.send({ To: to })).status).toBe(201);
    expect((await api.send({ To: to })).body.code).toBe('burst');
  });

  it('counts sends from every account', async () => {
    const to = freshUsNumber();
    const other = harness.client(await harness.createAccount());
    expect((await api.send({ To: to })).status).toBe(201);
    expect((await other.send({ To: to })).status).toBe(201);
    expect((await other.send({ To: to })).status).toBe(201);
    expect((await api.send({ To: to })).body.code).toBe('burst');
  });

  it('refuses the eleventh send within an hour with 429 rate_limited and no Retry-After', async () => {
    const to = freshUsNumber();
    for (const batch of [3, 3, 3, 1]) {
      for (let i = 0; i < batch; i++) expect((await api.send({ To: to })).status).toBe(201);
      harness.clock.advance(301_000);
    }
    const eleventh = await api.send({ To: to });
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.code).toBe('rate_limited');
    expect(eleventh.headers.get('retry-after')).toBeNull();
    // An hour after the first sends, room again.
    harness.clock.advance(3_600_000);
    expect((await api.send({ To: to })).status).toBe(201);
  });
});

describe('Idempotency-Key: a repeated key replays the accepted send', () => {
  it('replays an accepted send: same verification, 201, nothing sent or charged, even for another To', async () => {
    const key = `key-${Date.now()}-${Math.random()}`;
    const to = freshUsNumber();
    const first = await api.send({ To: to }, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    await waitForMessages(api, to);
    const before = await balance();
    const again = await api.send({ To: freshUsNumber() }, { headers: { 'idempotency-key': key } });
    expect(again.status).toBe(201);
    expect(again.body.sid).toBe(first.body.sid);
    expect(again.body.to).toBe(to);
    expect(await balance()).toBe(before);
    expect(await charges()).toHaveLength(1);
    expect(await api.messages(to)).toHaveLength(1);
  });

  it('replays even when the repeat names a number that is not valid', async () => {
    const key = `invalid-to-${Math.random()}`;
    const first = await api.send({ To: freshUsNumber() }, { headers: { 'idempotency-key': key } });
    const again = await api.send({ To: 'not-a-number' }, { headers: { 'idempotency-key': key } });
    expect(again.status).toBe(201);
    expect(again.body.sid).toBe(first.body.sid);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it.each([
    ['without To', {}],
    ['with an empty To', { To: '' }],
    ['with a To longer than 20 characters', { To: '+1 (415) 555-0100 0000' }],
    ['with a malformed Code', { To: '+14155550100', Code: 'x' }],
  ])('replays even when the repeat is sent %s', async (_, params) => {
    const key = `bad-params-${Math.random()}`;
    const first = await api.send({ To: freshUsNumber() }, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    const again = await api.send(params, { headers: { 'idempotency-key': key } });
    expect([again.status, again.body.sid]).toEqual([201, first.body.sid]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await charges()).toHaveLength(1);
  });

  it('answers a parameter problem as ever when the key replays nothing', async () => {
    const response = await api.send({}, { headers: { 'idempotency-key': `new-${Math.random()}` } });
    expect([response.status, response.body.code]).toEqual([400, 'invalid_parameter']);
  });

  it('does not remember a key from a refused send: after a 402 and a top-up the retry is accepted', async () => {
    const poor = harness.client(await harness.createAccount({ balanceUsd: 0 }));
    const key = `retry-${Math.random()}`;
    const to = freshUsNumber();
    expect((await poor.send({ To: to }, { headers: { 'idempotency-key': key } })).status).toBe(402);
    await harness.accounts.topUp(BY_TEST, poor.account.serviceSid, 500);
    const retry = await poor.send({ To: to }, { headers: { 'idempotency-key': key } });
    expect(retry.status).toBe(201);
    expect(await balance(poor.account.serviceSid)).toBe(0);
  });

  it('keeps keys per service', async () => {
    const other = harness.client(await harness.createAccount());
    const key = `shared-${Math.random()}`;
    const mine = await api.send({ To: freshUsNumber() }, { headers: { 'idempotency-key': key } });
    const theirs = await other.send({ To: freshUsNumber() }, { headers: { 'idempotency-key': key } });
    expect(theirs.status).toBe(201);
    expect(theirs.body.sid).not.toBe(mine.body.sid);
  });

  it('refuses a key longer than 191 characters with 400 invalid_parameter', async () => {
    const response = await api.send(
      { To: freshUsNumber() },
      { headers: { 'idempotency-key': 'k'.repeat(192) } },
    );
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('invalid_parameter');
    const ok = await api.send({ To: freshUsNumber() }, { headers: { 'idempotency-key': 'k'.repeat(191) } });
    expect(ok.status).toBe(201);
  });

  // Last in the file: it moves the clock a day on.
  it('remembers a key 24 hours: past them, even before TTL removes its item, the key sends and charges anew', async () => {
    const headers = { 'idempotency-key': `day-${Math.random()}` };
    const first = await api.send({ To: freshUsNumber() }, { headers });
    expect(first.status).toBe(201);
    harness.clock.advance(24 * 3_600_000 - 1_000);
    const within = await api.send({ To: freshUsNumber() }, { headers });
    expect(within.body.sid).toBe(first.body.sid);

    harness.clock.advance(2_000);
    const before = await balance();
    const to = freshUsNumber();
    const after = await api.send({ To: to }, { headers });
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.body).toMatchObject({ to, status: 'PENDING' });
    expect(await balance()).toBe(before - Number(after.body.price) * UNITS_PER_USD);
    expect((await charges()).map((line) => line.verificationSid)).toEqual([first.body.sid, after.body.sid]);
    // The key now names the new send, for its own 24 hours.
    const again = await api.send({ To: 'not-a-number' }, { headers });
    expect(again.body.sid).toBe(after.body.sid);
  });
});

const waitForMessages = (client: ApiClient, to: string) => client.awaitMessages(to);

async function waitForCode(client: ApiClient, to: string, count: number): Promise<string> {
  await client.awaitMessages(to, count);
  return client.latestCode(to);
}
