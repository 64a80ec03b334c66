/**
 * Hostile input: property-based tests with fast-check over the bodies, headers and paths of every
 * endpoint. Whatever comes in: no 500 (but the API's own `not_priceable`), every error a JSON object with a
 * string `code` (but API Gateway's own 413), no charge on any error, and every accepted `to` a clean E.164
 * number.
 */
import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { deriveKey } from '../../functions/adapters/crypto';
import { signPayload, SIGNATURE_HEADER } from '../../functions/adapters/providers/signature';
import { UNITS_PER_USD } from '../../functions/core/money';
import { Books } from '../support/books';
import { eventually, startHarness, type Account, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
let books: Books;
let mine: Account;
let theirs: Account;
let api: ApiClient;
/** A real verification of `mine`, and one of `theirs`. */
let mySid: string;
let theirSid: string;

beforeAll(async () => {
  harness = await startHarness({
    settings: { keyRequestsPerMinute: 1_000_000, burstLimit: 1_000, hourlyLimit: 1_000 },
  });
  books = new Books(harness);
  mine = await books.open(1_000);
  theirs = await books.open(1_000);
  api = harness.client(mine);
  mySid = (await api.send({ To: '+14155550199' })).body.sid as string;
  theirSid = (await harness.client(theirs).send({ To: '+14155550198' })).body.sid as string;
  await eventually(async () => {
    const body = (await api.fetch(mySid)).body;
    return body.delivery_status === 'DELIVERED' ? body : undefined;
  });
});
afterAll(async () => {
  await harness.stack.workflow.idle();
  expect(await books.audit()).toEqual([]);
  await harness.close();
});

interface RawResponse {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/** A request exactly as given: any method, a path with `..` in it, any body bytes (fetch would normalise). */
function raw(method: string, path: string, headers: Record<string, string>, body?: string | Buffer) {
  const url = new URL(harness.stack.url);
  return new Promise<RawResponse>((resolve, reject) => {
    // A connection of its own (no keep-alive): a refused oversized body leaves its connection unusable.
    const options = { host: url.hostname, port: url.port, method, path, headers, agent: false };
    const req = httpRequest(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString('utf8'),
          headers: res.headers,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const balances = async () =>
  Promise.all([mine, theirs].map(async (a) => (await harness.accounts.getService(a.serviceSid))!.balance));

/** The properties every answer must have. Returns the parsed body. */
function expectWellFormed(response: RawResponse): Record<string, unknown> {
  let body: unknown;
  expect(() => (body = JSON.parse(response.text))).not.toThrow();
  expect(typeof body === 'object' && body !== null && !Array.isArray(body)).toBe(true);
  const object = body as Record<string, unknown>;
  // A check answers 422 and 409 with the verification; every other 4xx or 5xx is an error object.
  const isCheckOutcome = [409, 422].includes(response.status) && typeof object.sid === 'string';
  if (response.status >= 400 && !isCheckOutcome) expect(typeof object.code).toBe('string');
  // The one 500 the API defines is `not_priceable`; anything else means a handler crashed.
  if (response.status >= 500) expect(object.code).toBe('not_priceable');
  if (response.status === 201) expect(object.to).toMatch(/^\+[1-9][0-9]{6,14}$/);
  return object;
}

// --- arbitraries ---------------------------------------------------------------------------------------

const DIGIT_ZEROS = [0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xe50, 0xff10, 0x1d7ce, 0x1d7ec];
/** The same digits in another script: Arabic-Indic, NKo, Devanagari, Bengali, Thai, fullwidth, math bold... */
const lookAlike = (digits: string, zero: number) =>
  [...digits].map((d) => (/[0-9]/.test(d) ? String.fromCodePoint(zero + Number(d)) : d)).join('');

const INJECTIONS = [
  "' OR '1'='1",
  '" OR ""="',
  '1; DROP TABLE verifications; --',
  '{"$ne": null}',
  '{"$gt": ""}',
  '$where: 1 == 1',
  'attribute_exists(pk)',
  '#status = :pending',
  'VERIFICATION#VE00000000000000000000000000000000',
  'SERVICE#VA00000000000000000000000000000000',
  '__proto__',
  'constructor',
  '${jndi:ldap://x/a}',
  '<script>alert(1)</script>',
  '../../../etc/passwd',
  '..%2F..%2F',
  '%00',
  '\u0000',
  '\ud800',
  '\u202e123456',
  '\u200b123456',
  '123456\n',
  ' 123456',
  '12-34-56',
  '+14155550100',
  '+1 (415) 555-0100',
  '+4474001234567890123',
  'x'.repeat(300),
];

const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...INJECTIONS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.stringMatching(/^\+?[0-9]{0,16}$/) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.stringMatching(/^[0-9]{4,12}$/), fc.constantFrom(...DIGIT_ZEROS))
      .map(([digits, zero]) => lookAlike(digits, zero)),
  },
  { weight: 1, arbitrary: fc.constantFrom(mySidRef(), theirSidRef()) },
);

/** The SIDs exist only after beforeAll; arbitraries are built before, so refer to them lazily. */
function mySidRef() {
  return '__MY_SID__';
}
function theirSidRef() {
  return '__THEIR_SID__';
}
const resolveSids = (text: string) =>
  text.replaceAll('__MY_SID__', mySid).replaceAll('__THEIR_SID__', theirSid);

const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 3 }) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.constantFrom('$ne', '$gt', 'S', 'N', '__proto__'), hostileString),
  },
);

/** Values that pass validation part of the time, so that the input also reaches the core and the table. */
const plausible = {
  To: fc.oneof(
    fc.integer({ min: 0, max: 9_999 }).map((n) => `+1415555${String(n).padStart(4, '0')}`),
    fc.constantFrom(
      '+447400123456', // UK mobile
      '+442079460000', // UK landline: no eligible channel
      '+5352123456', // Cuba: served, not priceable (the API's own 500)
      '+819012345678', // Japan: not served
      '+1 (415) 555-0100',
      lookAlike('+14155550100', 0xff10),
      lookAlike('+14155550100', 0x660),
    ),
  ),
  Code: fc.oneof(fc.stringMatching(/^[A-Za-z0-9]{4,10}$/), fc.stringMatching(/^[0-9]{6}$/)),
  TemplateSid: fc.oneof(
    fc.stringMatching(/^HX[0-9a-f]{32}$/),
    fc.stringMatching(/^HJ[0-9a-f]{32}$/),
    fc.constant(''),
  ),
  VerificationSid: fc.constantFrom('__MY_SID__', '__THEIR_SID__', 'VE00000000000000000000000000000000'),
};
const field = (name: keyof typeof plausible) =>
  fc.oneof(
    { weight: 3, arbitrary: plausible[name] as fc.Arbitrary<unknown> },
    { weight: 2, arbitrary: jsonValue },
  );
const params = fc
  .tuple(
    fc.record(
      {
        To: field('To'),
        Code: field('Code'),
        TemplateSid: field('TemplateSid'),
        VerificationSid: field('VerificationSid'),
      },
      { requiredKeys: [] },
    ),
    // Unknown parameters are ignored, but still parsed.
    fc.dictionary(fc.constantFrom('Channel', 'to', 'code', 'Locale', '__proto__', 'constructor'), jsonValue, {
      maxKeys: 3,
    }),
  )
  .map(([known, unknown]) => ({ ...unknown, ...known }));

const CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/vnd.api+json',
  'application/x-www-form-urlencoded; charset=iso-8859-1',
  'text/plain',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '*/*',
  '',
];

const formOf = (p: Record<string, unknown>) =>
  new URLSearchParams(
    Object.entries(p).map(([k, v]): [string, string] => [
      k,
      typeof v === 'string' ? v : (JSON.stringify(v) ?? ''),
    ]),
  ).toString();

/** Bytes no client should send: any JSON, any string, deep nesting. */
const oddBody = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.integer({ min: 1, max: 6_000 }).map((depth) => `{"To":${'['.repeat(depth)}${']'.repeat(depth)}}`),
);

/**
 * A body and its content type: a form or JSON as a client would send it (most of the time, so the input
 * reaches the core), or any body with any content type, matching or not. `undefined`: no content type.
 */
const body = fc.oneof(
  {
    weight: 3,
    arbitrary: params.map((p) => ({ type: 'application/x-www-form-urlencoded', text: formOf(p) })),
  },
  { weight: 3, arbitrary: params.map((p) => ({ type: 'application/json', text: JSON.stringify(p) })) },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined }),
      text: fc.oneof(
        params.map(formOf),
        params.map((p) => JSON.stringify(p)),
        oddBody,
      ),
    }),
  },
);

const printable = fc
  .string({ unit: 'binary-ascii', maxLength: 250 })
  .map((s) => s.replace(/[^\x20-\x7e]/g, ''));

/** Mostly the right key (to reach the handlers), sometimes a wrong, foreign or malformed one. */
const apiKey = fc.oneof(
  { weight: 8, arbitrary: fc.constant('MINE') },
  { weight: 1, arbitrary: fc.constant('THEIRS') },
  { weight: 1, arbitrary: printable },
);
const keyValue = (key: string) => (key === 'MINE' ? mine.apiKey : key === 'THEIRS' ? theirs.apiKey : key);

/** A path segment: the right SID, another service's, or something hostile (raw or percent-encoded). */
const segment = (right: () => string, other: () => string) =>
  fc
    .oneof(
      { weight: 8, arbitrary: fc.constant('RIGHT') },
      { weight: 1, arbitrary: fc.constant('OTHER') },
      {
        weight: 1,
        arbitrary: fc.constantFrom('..', '.', '%2e%2e', '..%2F..%2F', '%2F', '%00', 'VA', '%23', '*', '%'),
      },
      {
        weight: 2,
        arbitrary: hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))),
      },
    )
    .map((s) => (s === 'RIGHT' ? right() : s === 'OTHER' ? other() : s));

const serviceSegment = segment(
  () => mine.serviceSid,
  () => theirs.serviceSid,
);
const verificationSegment = segment(
  () => mySid,
  () => theirSid,
);

const headers = fc.record(
  {
    idempotencyKey: printable,
    key: apiKey,
  },
  { requiredKeys: ['key'] },
);

function headersOf(h: { idempotencyKey?: string; key: string }, contentType?: string) {
  return {
    ...(contentType !== undefined && { 'content-type': contentType }),
    ...(h.idempotencyKey !== undefined && { 'idempotency-key': h.idempotencyKey }),
    ...(h.key !== '' && { 'x-api-key': keyValue(h.key) }),
  };
}

const RUNS = { numRuns: 120 };
let counter = 0;

// --- properties ----------------------------------------------------------------------------------------

describe('every endpoint, any input', () => {
  it('send: no 500, errors are JSON with a code, an error is never charged', async () => {
    await fc.assert(
      fc.asyncProperty(serviceSegment, headers, body, async (service, h, { type, text }) => {
        const before = await balances();
        const response = await raw(
          'POST',
          `/v2/Services/${service}/Verifications`,
          headersOf(h, type),
          resolveSids(text),
        );
        const answer = expectWellFormed(response);
        const after = await balances();
        if (response.status === 201 && response.headers['idempotent-replayed'] !== 'true') {
          // Charged exactly the price, to the service whose key and path it was.
          const charged = [h.key === 'MINE' ? mine : theirs].map((a) => a.serviceSid);
          expect(['MINE', 'THEIRS']).toContain(h.key);
          expect([service]).toEqual(charged);
          const price = Math.round(Number(answer.price) * UNITS_PER_USD);
          expect(after).toEqual(
            h.key === 'MINE' ? [before[0]! - price, before[1]] : [before[0], before[1]! - price],
          );
        } else {
          // Refused, or an Idempotency-Key replay: nothing charged.
          expect(after).toEqual(before);
        }
      }),
      RUNS,
    );
  });

  it('check: no 500, errors are JSON with a code; nothing but the right code verifies', async () => {
    await fc.assert(
      fc.asyncProperty(serviceSegment, headers, body, async (service, h, { type, text }) => {
        const response = await raw(
          'POST',
          `/v2/Services/${service}/VerificationCheck`,
          headersOf(h, type),
          resolveSids(text),
        );
        const answer = expectWellFormed(response);
        // No generated input carries a real code: a 200 would be a false verification.
        expect(response.status).not.toBe(200);
        if (answer.attempts_remaining !== undefined)
          expect(answer.attempts_remaining).toBeGreaterThanOrEqual(0);
      }),
      RUNS,
    );
  });

  it('fetch: no 500, errors are JSON with a code, and only the own verification is ever shown', async () => {
    await fc.assert(
      fc.asyncProperty(serviceSegment, verificationSegment, headers, async (service, sid, h) => {
        const response = await raw('GET', `/v2/Services/${service}/Verifications/${sid}`, headersOf(h));
        const answer = expectWellFormed(response);
        if (response.status === 200) {
          // Only with the key of the service in the path, for a verification of that same service.
          const owner = h.key === 'MINE' ? [mine.serviceSid, mySid] : [theirs.serviceSid, theirSid];
          expect(['MINE', 'THEIRS']).toContain(h.key);
          expect([service, answer.sid]).toEqual(owner);
        }
      }),
      RUNS,
    );
  });

  it('receipts: no 500, errors are JSON with a code, with or without a valid signature', async () => {
    const secret = deriveKey(harness.masterKey, 'receipt:carrier');
    const receiptBody = fc.oneof(
      body.map(({ text }) => text),
      fc
        .record({
          reference: fc.oneof(hostileString, fc.constant('__MY_SID__.0'), fc.constant('__MY_SID__.99')),
          messageId: hostileString,
          status: fc.oneof(fc.constantFrom('delivered', 'failed'), hostileString),
        })
        .map((r) => JSON.stringify(r)),
    );
    const before = (await api.fetch(mySid)).body;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('carrier', 'Carrier', 'sms', '..', '%2F', 'carrier%00'),
        receiptBody,
        fc.oneof(fc.constant('SIGNED'), printable),
        async (provider, text, signature) => {
          const payload = resolveSids(text);
          const response = await raw(
            'POST',
            `/v2/Callbacks/${provider}`,
            {
              'content-type': 'application/json',
              [SIGNATURE_HEADER]:
                signature === 'SIGNED' ? signPayload(secret, payload, new Date()) : signature,
            },
            payload,
          );
          expectWellFormed(response);
          expect([200, 401, 404]).toContain(response.status);
        },
      ),
      RUNS,
    );
    // None of that changed the delivery: only a receipt naming the message carried for it could.
    expect((await api.fetch(mySid)).body).toEqual(before);
  });

  it('wrong methods and unknown routes: JSON errors with a code', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'POST', 'OPTIONS'),
        fc.constantFrom(
          '/v2/Services/{S}/Verifications',
          '/v2/Services/{S}/VerificationCheck',
          '/v2/Services/{S}/Verifications/{V}',
          '/v2/Services/{S}/Verifications/{V}/..',
          '/v2/Services/{S}',
          '/v2/Services/{S}/Verifications/../VerificationCheck',
          '/v1/Services/{S}/Verifications',
          '/v2/Callbacks',
          '/',
          '/%2e%2e/%2e%2e/etc/passwd',
        ),
        async (method, template) => {
          const path = template.replace('{S}', mine.serviceSid).replace('{V}', mySid);
          const response = await raw(method, path, { 'x-api-key': mine.apiKey });
          expectWellFormed(response);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('specific hostile input', () => {
  const sendPath = () => `/v2/Services/${mine.serviceSid}/Verifications`;
  const json = { 'content-type': 'application/json' };
  const form = { 'content-type': 'application/x-www-form-urlencoded' };

  it.each([
    ['16 KiB + 1 of form', 16 * 1024 + 1, form, 400],
    ['1 MiB of JSON', 1024 * 1024, json, 400],
    ['11 MiB (over the API Gateway payload limit)', 11 * 1024 * 1024, form, 413],
  ])('oversized body, %s: refused, not charged', async (_, size, type, status) => {
    const before = await balances();
    const prefix = 'To=%2B14155550123&Pad=';
    const payload =
      type === json
        ? `{"To":"+14155550123","Pad":"${'x'.repeat(size - 32)}"}`
        : `${prefix}${'x'.repeat(size - prefix.length)}`;
    const response = await raw('POST', sendPath(), { ...type, 'x-api-key': mine.apiKey }, payload);
    expect(response.status).toBe(status);
    if (status === 413) {
      // API Gateway's own answer, without a `code` (docs/api.md): the handler never sees the body.
      expect(JSON.parse(response.text)).toEqual({ message: 'Request Entity Too Large' });
    } else expect(expectWellFormed(response).code).toBe('invalid_parameter');
    expect(await balances()).toEqual(before);
  });

  it.each([
    // curl -d 'To=+44…': the unencoded + is a space once the form is decoded.
    ['a + sent unencoded in a form', 'To=+447400123470', 'arrives as a space; send it as %2B'],
    ['no + at all', 'To=447400123470', 'must start with + and the country code'],
    ['a + and no such number', 'To=%2B4412', 'To is not a valid phone number.'],
    // A code cannot reach an extension, and the number without it may be someone else's: refused, not dropped.
    ['an extension', 'To=%2B14155550320%20x99', 'To has an extension mark (x, ext, ;ext= or #): send the'],
    ['an extension as ;ext=', 'To=%2B14155550320%3Bext%3D5', 'To has an extension mark'],
    // libphonenumber reads a trailing # as closing an extension (+447450, extension 123460): no digits named.
    ['a trailing #', 'To=%2B44%207450%20123460%23', 'To has an extension mark (x, ext, ;ext= or #)'],
  ])('To with %s: unroutable, saying what is wrong, not charged', async (_, body, words) => {
    const before = await balances();
    const response = await raw('POST', sendPath(), { ...form, 'x-api-key': mine.apiKey }, body);
    expect(response.status).toBe(400);
    const error = expectWellFormed(response);
    expect(error.code).toBe('unroutable');
    expect(error.message).toContain(words);
    expect(await balances()).toEqual(before);
  });

  it('a compressed body or one in another charset: told so, not "not valid JSON"; UTF-8 named is read', async () => {
    const body = '{"To":"+447400123471"}';
    const refused: [Record<string, string>, Buffer, string][] = [
      [{ ...json, 'content-encoding': 'gzip' }, gzipSync(body), 'Send the body uncompressed'],
      [{ 'content-type': 'application/json; charset=utf-16le' }, Buffer.from(body, 'utf16le'), 'in UTF-8'],
      [{ 'content-type': 'application/json; charset="UTF-32"' }, Buffer.from(body, 'utf8'), 'in UTF-8'],
    ];
    for (const [headers, payload, words] of refused) {
      const before = await balances();
      const response = await raw('POST', sendPath(), { ...headers, 'x-api-key': mine.apiKey }, payload);
      const error = expectWellFormed(response);
      expect([response.status, error.code, error.message]).toEqual([
        400,
        'invalid_parameter',
        expect.stringContaining(words),
      ]);
      expect(await balances()).toEqual(before);
    }
    const named = { 'content-type': 'application/json; charset=UTF-8', 'x-api-key': mine.apiKey };
    expect((await raw('POST', sendPath(), named, body)).status).toBe(201);
    // ASCII parameters read alike in any ASCII-based charset: Apache HttpClient's forms declare ISO-8859-1, and
    // some clients send Content-Encoding: utf-8 by mistake. Both are read as before.
    const latin1 = {
      'content-type': 'application/x-www-form-urlencoded; charset=ISO-8859-1',
      'x-api-key': mine.apiKey,
    };
    expect((await raw('POST', sendPath(), latin1, 'To=%2B447400123472')).status).toBe(201);
    const slip = { ...json, 'content-encoding': 'utf-8', 'x-api-key': mine.apiKey };
    expect((await raw('POST', sendPath(), slip, '{"To":"+447400123473"}')).status).toBe(201);
    // A leading byte order mark, as some Windows tools write: ignored, in JSON (RFC 8259 allows it) and in a form.
    const bom = '\uFEFF';
    const jsonBom = { ...json, 'x-api-key': mine.apiKey };
    expect((await raw('POST', sendPath(), jsonBom, `${bom}{"To":"+447400123474"}`)).status).toBe(201);
    const formBom = { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': mine.apiKey };
    expect((await raw('POST', sendPath(), formBom, `${bom}To=%2B447400123475`)).status).toBe(201);
  });

  it('what a user pastes around the digits is normalised: dots, slashes, non-breaking spaces, full-width digits', async () => {
    for (const [to, e164] of [
      ['+1.650.555.0142', '+16505550142'],
      ['+1/650/555/0143', '+16505550143'],
      ['+1\u00a0650\u00a0555\u00a00144', '+16505550144'],
      ['+１６５０５５５０１４５', '+16505550145'],
    ]) {
      const sent = await api.send({ To: to! });
      expect([to, sent.status, sent.body.to]).toEqual([to, 201, e164]);
    }
  });

  it('deep JSON: 5,000 levels inside the size limit, and 500,000 beyond it', async () => {
    for (const depth of [5_000, 500_000]) {
      const payload = `{"To":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const response = await raw('POST', sendPath(), { ...json, 'x-api-key': mine.apiKey }, payload);
      expect(response.status).toBe(400);
      expect(expectWellFormed(response).code).toBe('invalid_parameter');
    }
  });

  it('unicode look-alike digits of the right code never verify, and a caller-supplied Code must be ASCII', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...DIGIT_ZEROS.slice(1)), async (zero) => {
        const to = `+1650555${String(1000 + ++counter).padStart(4, '0')}`;
        const sent = await api.send({ To: to });
        const sid = sent.body.sid as string;
        const code = await api.deliveredCode(to);
        const lookalike = await api.check({ VerificationSid: sid, Code: lookAlike(code, zero) });
        expect(lookalike.status).toBe(422);
        expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(200);

        const supplied = await api.send({ To: to, Code: lookAlike('4821', zero) });
        expect([supplied.status, supplied.body.code]).toEqual([400, 'invalid_code']);
      }),
      { numRuns: 12 },
    );
  });

  it('path traversal in SIDs finds nothing and reaches no other item', async () => {
    const attempts = [
      `../${theirSid}`,
      `..%2F${theirSid}`,
      `${mySid}%2F..%2F..%2FServices%2F${theirs.serviceSid}`,
      `${mySid}%00`,
      `${mySid}%23`,
      `VE..%2F..%2FSERVICE%23${mine.serviceSid}`,
      encodeURIComponent(`VERIFICATION#${mySid}`),
      mySid.toUpperCase(),
      ` ${mySid}`.replace(' ', '%20'),
    ];
    for (const sid of attempts) {
      const fetched = await raw('GET', `/v2/Services/${mine.serviceSid}/Verifications/${sid}`, {
        'x-api-key': mine.apiKey,
      });
      expect([fetched.status, expectWellFormed(fetched).code]).toEqual([404, expect.any(String)]);
      const checked = await api.check({ VerificationSid: decodeURIComponent(sid), Code: '123456' });
      expect([checked.status, checked.body.code]).toEqual([404, 'not_found']);
    }
    for (const service of [`..%2F${theirs.serviceSid}`, `${mine.serviceSid}%2F..%2F${theirs.serviceSid}`]) {
      const sent = await raw(
        'POST',
        `/v2/Services/${service}/Verifications`,
        { ...form, 'x-api-key': mine.apiKey },
        'To=%2B14155550124',
      );
      expect(sent.status).toBe(403);
      expect(expectWellFormed(sent).code).toBe('forbidden');
    }
  });
});
