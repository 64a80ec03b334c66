/**
 * Secrets: after a full run (sends with generated and caller-supplied codes, checks, receipts, a
 * DynamoDB fault, a failed workflow start and the sweeper), no plaintext code is anywhere in the table or the
 * logs, except encrypted in `sealed_code` while delivery runs, and no API key at all. Codes are uniform, SIDs
 * carry 128 random bits, comparisons of secrets are constant-time, and one service cannot reach another's
 * verifications.
 */
import nodeCrypto from 'node:crypto';
import { CryptoCodeVault, cryptoRandom, deriveKey } from '../../functions/adapters/crypto';
import { signPayload, verifySignature } from '../../functions/adapters/providers/signature';
import { Books } from '../support/books';
import { DynamoFaults, FlakyWorkflow } from '../support/faults';
import {
  BY_TEST,
  eventually,
  startHarness,
  type Account,
  type ApiClient,
  type Harness,
} from '../support/harness';

/** Critical values for a false alarm probability of 1e-6 per test (fixed, so the tests are deterministic enough). */
const CHI_SQUARE_9_DF = 44.81; // chi-square, 9 degrees of freedom, upper 1e-6
const CHI_SQUARE_99_DF = 180.79; // chi-square, 99 degrees of freedom, upper 1e-6
const Z_TWO_SIDED = 4.892; // standard normal, two-sided 1e-6
const Z_TWO_SIDED_128 = 5.772; // the same over 128 tests at once (Bonferroni)

/** Every string inside a value (item attributes, log fields), with the path it was found at. */
function strings(value: unknown, path = ''): { path: string; text: string }[] {
  if (typeof value === 'string') return [{ path, text: value }];
  if (Array.isArray(value)) return value.flatMap((entry, i) => strings(entry, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, entry]) => strings(entry, path ? `${path}.${key}` : key));
  }
  return [];
}

/** Finds `secret` as a whole token (not inside a longer run of letters and digits, e.g. a SID or a hash). */
const containsToken = (text: string, secret: string) =>
  new RegExp(`(?<![0-9A-Za-z])${secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![0-9A-Za-z])`).test(text);

describe('no code and no key at rest or in logs, after a full run', () => {
  let harness: Harness;
  let books: Books;
  let account: Account;
  let api: ApiClient;
  let flaky: FlakyWorkflow;
  const faults = new DynamoFaults();
  /** Every code that existed in the run: generated (read from the carrier), supplied, or typed in a check. */
  const codes = new Set<string>();
  /** Every response body the API gave. */
  const answers: unknown[] = [];
  /** The table while the slow send's delivery runs, and again once every send of the run is made. */
  let midDelivery: Record<string, unknown>[] = [];
  let lateRun: Record<string, unknown>[] = [];
  let counter = 0;
  const freshUkMobile = () => `+447400${String(1_300_000 + ++counter).slice(1)}`;

  const record = async <T extends { body: unknown }>(response: Promise<T>) => {
    const answer = await response;
    answers.push(answer.body);
    return answer;
  };
  const codeOf = async (to: string) => {
    await eventually(
      async () => (harness.stack.carrier.messagesTo(to).length > 0 ? true : undefined),
      10_000,
      20,
    );
    const code = /(\d{6})/.exec(harness.stack.carrier.messagesTo(to)[0]!.body)![1]!;
    codes.add(code);
    return code;
  };

  beforeAll(async () => {
    harness = await startHarness({
      decorateDynamoClient: faults.install,
      wrapWorkflow: (workflow) => (flaky = new FlakyWorkflow(workflow)),
    });
    books = new Books(harness);
    account = await books.open();
    api = harness.client(account);

    // Generated codes, delivered at once, checked wrong then right.
    for (let i = 0; i < 4; i++) {
      const to = freshUkMobile();
      const sent = await record(api.send({ To: to }, { headers: { 'idempotency-key': `secret-run-${i}` } }));
      const code = await codeOf(to);
      const wrong = code === '000000' ? '999999' : String((Number(code) + 1) % 1_000_000).padStart(6, '0');
      codes.add(wrong);
      await record(api.check({ VerificationSid: sent.body.sid as string, Code: wrong }));
      await record(api.check({ VerificationSid: sent.body.sid as string, Code: code }));
      await record(api.fetch(sent.body.sid as string));
    }
    // Caller-supplied codes, over JSON and forms. None is all hex digits: a 4-digit code like 4821 would
    // sometimes match a segment of a random request id (a UUID) and fail the log scan by chance.
    for (const [code, json] of [
      ['Qx7Zp9Kd', true],
      ['4z8Q', false],
      ['MAXLEN9876', true],
    ] as const) {
      codes.add(code);
      const sent = await record(api.send({ To: freshUkMobile(), Code: code }, { json }));
      await record(api.check({ VerificationSid: sent.body.sid as string, Code: code }));
    }
    // A send whose delivery is still running when the table is read: its code is held, sealed.
    const slowTo = freshUkMobile();
    harness.stack.carrier.setRule({ prefix: slowTo, channels: { sna: 'silent', viber: 'silent' } });
    const slow = await record(api.send({ To: slowTo }));
    await codeOf(slowTo);
    // Read at once: its first two channels wait for receipts that never come, so its code is still held. (Read
    // later, after the sends below, a loaded machine may find its delivery ended and its code dropped.)
    midDelivery = await harness.scanTable();
    expect(midDelivery.find((item) => item.sid === slow.body.sid)!.sealed_code).toEqual(expect.any(String));
    // Deliveries that end without a receipt: SENT (accepted, never confirmed) and FAILED (every channel failed).
    const smsOnly = harness.client(await books.open(100, { channels: ['sms'] }));
    const [sentTo, failedTo] = [freshUkMobile(), freshUkMobile()];
    harness.stack.carrier.setRule({ prefix: sentTo, channels: { sms: 'silent' } });
    harness.stack.carrier.setRule({ prefix: failedTo, channels: { sms: 'error' } });
    await record(smsOnly.send({ To: sentTo }));
    await codeOf(sentTo);
    const failed = await record(smsOnly.send({ To: failedTo }));
    // Its code is never carried (every channel errs), so it is not in `codes`: let its delivery end before the
    // table is read mid-run, or a loaded machine reads its sealed code while it still runs.
    await eventually(
      async () =>
        (await smsOnly.fetch(failed.body.sid as string)).body.delivery_status === 'FAILED' ? true : undefined,
      10_000,
      20,
    );
    // A DynamoDB fault (logged as an unexpected error) and a workflow start that failed, drained by the sweeper.
    faults.inject({ operation: 'BatchGetItem', kind: 'internal' });
    await record(api.send({ To: freshUkMobile() }));
    flaky.failNext(1);
    const stalledTo = freshUkMobile();
    await record(api.send({ To: stalledTo }));
    lateRun = await harness.scanTable();
    harness.clock.advance(31_000);
    await harness.stack.sweep();
    await codeOf(stalledTo);
    await harness.stack.workflow.idle();
  }, 60_000);
  afterAll(() => harness.close());

  it('the run produced codes and log lines to scan', () => {
    expect(codes.size).toBeGreaterThanOrEqual(12);
    expect(harness.logs.length).toBeGreaterThan(30);
    expect(harness.logs.some((line) => line.includes('request.failed'))).toBe(true);
    expect(harness.logs.some((line) => line.includes('delivery.start_failed'))).toBe(true);
  });

  it('no table item holds a code outside sealed_code, during delivery or after', async () => {
    const final = await harness.scanTable();
    for (const items of [midDelivery, lateRun, final]) {
      for (const item of items) {
        const { sealed_code: _sealed, ...rest } = item;
        for (const { path, text } of strings(rest)) {
          for (const code of codes) {
            if (containsToken(text, code))
              throw new Error(`code ${code} found in ${String(item.pk)} ${path}`);
          }
        }
      }
    }
  });

  it('sealed_code is encrypted (bound to its SID) and only held while delivery runs', async () => {
    const vault = new CryptoCodeVault(harness.masterKey);
    const sealedMid = midDelivery.filter((item) => typeof item.sealed_code === 'string');
    expect(sealedMid.length).toBeGreaterThan(0);
    for (const item of sealedMid) {
      const sealed = item.sealed_code as string;
      const code = vault.open(item.sid as string, sealed);
      expect(codes.has(code)).toBe(true);
      expect(containsToken(sealed, code)).toBe(false);
      expect(sealed).not.toContain(Buffer.from(code).toString('base64url'));
      // Bound to the SID: it does not open under another verification's SID.
      expect(() => vault.open('VE00000000000000000000000000000000', sealed)).toThrow();
    }
    const ended = (await harness.scanTable()).filter((entry) => entry.type === 'verification');
    // Every way a delivery ends drops the code: a receipt, the last channel unconfirmed, every channel failed.
    expect([...new Set(ended.map((item) => item.delivery_status))].sort()).toEqual([
      'DELIVERED',
      'FAILED',
      'SENT',
    ]);
    for (const item of ended) expect(item.sealed_code).toBeUndefined();
  });

  it('code_hash is keyed: not derivable from the code without the deployment key', async () => {
    const vault = new CryptoCodeVault(harness.masterKey);
    const other = new CryptoCodeVault('another-deployment-key');
    const generated = lateRun.filter((item) => item.type === 'verification' && item.client_code === false);
    let matched = 0;
    for (const item of generated) {
      const hash = item.code_hash as string;
      const code = [...codes].find((candidate) => vault.hash(item.sid as string, candidate) === hash);
      // A code that was never delivered (the FAILED send) is not known to the test.
      if (code === undefined) continue;
      matched += 1;
      expect(other.hash(item.sid as string, code!)).not.toBe(hash);
      for (const encoding of ['hex', 'base64', 'base64url'] as const) {
        expect(hash).not.toBe(nodeCrypto.createHash('sha256').update(code!).digest(encoding));
        expect(hash).not.toBe(
          nodeCrypto
            .createHash('sha256')
            .update(`${String(item.sid)}\n${code}`)
            .digest(encoding),
        );
      }
    }
    expect(matched).toBeGreaterThanOrEqual(6);
    // Caller-supplied codes are never checked, so nothing is derived from them at all.
    for (const item of lateRun.filter((entry) => entry.client_code === true))
      expect(item.code_hash).toBeUndefined();
  });

  it('no log line holds a code, an API key, the master key or a message text', () => {
    const secret = account.apiKey.replace(/^otpk_/, '');
    for (const line of harness.logs) {
      expect(line).not.toContain(secret.slice(0, 16));
      expect(line).not.toContain(harness.masterKey.slice(0, 16));
      expect(line).not.toMatch(/Your code is/);
      for (const { text } of strings(JSON.parse(line))) {
        for (const code of codes) {
          if (containsToken(text, code)) throw new Error(`code ${code} logged: ${line}`);
        }
      }
    }
  });

  it('no table item holds an API key; keys are stored as their SHA-256 only', async () => {
    const items = await harness.scanTable();
    const secret = account.apiKey.replace(/^otpk_/, '');
    for (const item of items) {
      const text = JSON.stringify(item);
      expect(text).not.toContain(secret.slice(0, 16));
      expect(text).not.toContain(harness.masterKey.slice(0, 16));
    }
    const hash = nodeCrypto.createHash('sha256').update(account.apiKey).digest('hex');
    expect(items.some((item) => item.pk === `APIKEY#${hash}`)).toBe(true);
  });

  it('no API answer holds a code', () => {
    for (const answer of answers) {
      for (const { text } of strings(answer)) {
        for (const code of codes) expect(containsToken(text, code)).toBe(false);
      }
    }
  });

  it('every SID the API gave out is VE and 32 hex characters', () => {
    const sids = answers.map((answer) => (answer as { sid?: string }).sid).filter(Boolean) as string[];
    expect(sids.length).toBeGreaterThan(10);
    for (const sid of sids) expect(sid).toMatch(/^VE[0-9a-f]{32}$/);
  });
});

describe('codes: uniform 6 digits from crypto.randomInt', () => {
  const N = 100_000;
  let sample: string[];
  beforeAll(() => {
    sample = Array.from({ length: N }, () => cryptoRandom.code());
  });

  it('come from crypto.randomInt over the whole range (rejection sampling: no modulo bias)', () => {
    const spy = jest.spyOn(nodeCrypto, 'randomInt');
    try {
      cryptoRandom.code();
      expect(spy).toHaveBeenCalledWith(0, 1_000_000);
    } finally {
      spy.mockRestore();
    }
  });

  it('are always 6 ASCII digits', () => {
    expect(sample.every((code) => /^[0-9]{6}$/.test(code))).toBe(true);
  });

  it.each([0, 1, 2, 3, 4, 5])(
    `digit position %i is uniform (chi-square, 9 df, < ${CHI_SQUARE_9_DF})`,
    (position) => {
      const counts = Array<number>(10).fill(0);
      for (const code of sample) counts[Number(code[position])]! += 1;
      const expected = N / 10;
      const chiSquare = counts.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
      expect(chiSquare).toBeLessThan(CHI_SQUARE_9_DF);
    },
  );

  it(`the first two digits are jointly uniform (chi-square, 99 df, < ${CHI_SQUARE_99_DF})`, () => {
    const counts = Array<number>(100).fill(0);
    for (const code of sample) counts[Number(code.slice(0, 2))]! += 1;
    const expected = N / 100;
    const chiSquare = counts.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
    expect(chiSquare).toBeLessThan(CHI_SQUARE_99_DF);
  });

  it('a leading zero comes one time in ten (codes are zero-padded, not drawn from 100000-999999)', () => {
    const zeros = sample.filter((code) => code.startsWith('0')).length;
    const sd = Math.sqrt(N * 0.1 * 0.9);
    expect(Math.abs(zeros - N * 0.1)).toBeLessThan(Z_TWO_SIDED * sd);
  });
});

describe('SIDs: two letters and 128 random bits', () => {
  const N = 20_000;
  let sids: string[];
  beforeAll(() => {
    sids = Array.from({ length: N }, () => cryptoRandom.sid('VE'));
  });

  it('come from 16 random bytes of crypto.randomBytes', () => {
    const spy = jest.spyOn(nodeCrypto, 'randomBytes');
    try {
      cryptoRandom.sid('VE');
      expect(spy).toHaveBeenCalledWith(16);
    } finally {
      spy.mockRestore();
    }
  });

  it('have the form, and none repeats', () => {
    expect(sids.every((sid) => /^VE[0-9a-f]{32}$/.test(sid))).toBe(true);
    expect(new Set(sids).size).toBe(N);
  });

  it('every one of the 128 bits is a fair coin (no counter, time or fixed part)', () => {
    const ones = Array<number>(128).fill(0);
    for (const sid of sids) {
      const bytes = Buffer.from(sid.slice(2), 'hex');
      for (let bit = 0; bit < 128; bit++) ones[bit]! += (bytes[bit >> 3]! >> (7 - (bit & 7))) & 1;
    }
    const sd = Math.sqrt(N * 0.25);
    const worst = Math.max(...ones.map((count) => Math.abs(count - N / 2)));
    expect(worst).toBeLessThan(Z_TWO_SIDED_128 * sd);
  });
});

describe('constant-time comparisons', () => {
  // The code itself is never compared in the service: the HMAC of a guess that got an attempt is compared with
  // the code's HMAC (`settledStatus`), and the HMAC of a guess tells the guesser nothing about the stored one.
  it('receipt signatures are compared with crypto.timingSafeEqual, right or wrong, over full-length MACs', () => {
    const secret = deriveKey('master', 'receipt:carrier');
    const body = '{"reference":"x"}';
    const now = new Date();
    const spy = jest.spyOn(nodeCrypto, 'timingSafeEqual');
    try {
      expect(verifySignature(secret, body, signPayload(secret, body, now), now)).toBe(true);
      const forged = signPayload(deriveKey('other', 'receipt:carrier'), body, now);
      expect(verifySignature(secret, body, forged, now)).toBe(false);
      expect(spy).toHaveBeenCalledTimes(2);
      for (const [a, b] of spy.mock.calls) {
        expect((a as Buffer).length).toBe(32);
        expect((b as Buffer).length).toBe(32);
      }
    } finally {
      spy.mockRestore();
    }
  });

  describe('guesses', () => {
    let harness: Harness;
    beforeAll(async () => {
      harness = await startHarness();
    });
    afterAll(() => harness.close());

    // API keys need no comparison in code: a key is found by its hash as the item's partition key.
    it("a check compares its recorded guess's HMAC with the code's in constant time, full length", async () => {
      const api = harness.client(await harness.createAccount());
      const to = '+14155550176';
      const sid = (await api.send({ To: to })).body.sid as string;
      await eventually(async () => ((await api.messages(to)).length > 0 ? true : undefined));
      const code = await api.latestCode(to);
      const vault = new CryptoCodeVault(harness.masterKey);
      const spy = jest.spyOn(nodeCrypto, 'timingSafeEqual');
      try {
        expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(200);
        const expected = Buffer.from(vault.hash(sid, code));
        expect(spy).toHaveBeenCalledWith(expected, expected);
        expect(expected.length).toBe(43);
      } finally {
        spy.mockRestore();
      }
    });
  });
});

describe('service isolation', () => {
  let harness: Harness;
  let a: ApiClient;
  let b: ApiClient;
  let bSid: string;
  let bCode: string;
  const bTo = '+14155550177';

  beforeAll(async () => {
    harness = await startHarness();
    a = harness.client(await harness.createAccount());
    b = harness.client(await harness.createAccount());
    bSid = (await b.send({ To: bTo })).body.sid as string;
    await eventually(async () => ((await b.messages(bTo)).length > 0 ? true : undefined));
    bCode = await b.latestCode(bTo);
  });
  afterAll(() => harness.close());

  it("A's key cannot read, check or guess on B's verification, even with B's right code (404)", async () => {
    const fetched = await a.fetch(bSid);
    const checked = await a.check({ VerificationSid: bSid, Code: bCode });
    expect([fetched.status, fetched.body.code]).toEqual([404, 'not_found']);
    expect([checked.status, checked.body.code]).toEqual([404, 'not_found']);
    // Same answer as for a SID that does not exist: A learns nothing about B's SIDs.
    const unknown = await a.check({ VerificationSid: 'VE00000000000000000000000000000000', Code: bCode });
    expect(unknown.body).toEqual(checked.body);
    for (let i = 0; i < 6; i++) await a.check({ VerificationSid: bSid, Code: '000000' });
    // None of that touched B's verification: no attempt spent, not verified, not locked.
    expect((await b.fetch(bSid)).body).toMatchObject({ status: 'PENDING', attempts_remaining: 5 });
    expect((await b.check({ VerificationSid: bSid, Code: bCode })).status).toBe(200);
  });

  it("A's key on B's path: 403 for send, check and fetch, and nothing is charged to B", async () => {
    const path = { serviceSid: b.account.serviceSid };
    const before = await harness.accounts.listCharges(b.account.serviceSid);
    const responses = [
      await a.send({ To: '+14155550178' }, path),
      await a.check({ VerificationSid: bSid, Code: bCode }, path),
      await a.fetch(bSid, path),
    ];
    expect(responses.map((r) => [r.status, r.body.code])).toEqual(Array(3).fill([403, 'forbidden']));
    expect(await harness.accounts.listCharges(b.account.serviceSid)).toEqual(before);
  });

  it("A cannot send with B's template", async () => {
    const template = await harness.accounts.addTemplate(BY_TEST, b.account.serviceSid, {
      body: 'B says {code}',
    });
    const response = await a.send({ To: '+14155550179', TemplateSid: template.sid });
    expect([response.status, response.body.code]).toEqual([404, 'unknown_template']);
    expect(await harness.accounts.listCharges(a.account.serviceSid)).toEqual([]);
  });
});
