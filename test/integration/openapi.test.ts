/**
 * Real answers of the local stack validate against the OpenAPI document's response schemas (with Ajv, JSON Schema
 * 2020-12 as OpenAPI 3.1 uses) and parse with the zod response schemas; the stack serves the document itself.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument, OPENAPI_PATHS, type OperationName } from '../../functions/http/openapi';
import { anyErrorSchema, verificationSchema } from '../../functions/http/schemas';
import { eventually, startHarness, type ApiClient, type ApiResponse, type Harness } from '../support/harness';

type Json = Record<string, unknown>;
const doc = buildOpenApiDocument() as Json & {
  paths: Record<string, Record<string, Json>>;
  components: Json;
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

/** The document's schema for this answer (its status, else `default`), with the components its refs point to. */
function responseSchema(
  name: OperationName,
  status: number,
): { schema: Json; headers: Record<string, Json> } {
  const { method, path } = OPENAPI_PATHS[name];
  const responses = (doc.paths[path]![method] as { responses: Record<string, Json> }).responses;
  const response = responses[String(status)] ?? responses.default!;
  const content = response.content as { 'application/json': { schema: Json } };
  const headers = Object.fromEntries(
    Object.entries((response.headers as Record<string, { $ref: string }> | undefined) ?? {}).map(
      ([header, ref]) => [
        header,
        (doc.components.headers as Record<string, Json>)[ref.$ref.split('/').pop()!]!,
      ],
    ),
  );
  return { schema: content['application/json'].schema, headers };
}

/** Asserts the answer is one the document describes for this operation: status, body and headers. */
function expectDocumented(name: OperationName, response: ApiResponse): void {
  const { method, path } = OPENAPI_PATHS[name];
  const responses = (doc.paths[path]![method] as { responses: Record<string, Json> }).responses;
  expect({ name, status: response.status, listed: String(response.status) in responses }).toEqual({
    name,
    status: response.status,
    listed: true,
  });
  const { schema, headers } = responseSchema(name, response.status);
  const validate = ajv.compile({ ...schema, components: doc.components });
  const valid = validate(response.body);
  expect({ name, status: response.status, body: response.body, errors: validate.errors ?? [] }).toEqual({
    name,
    status: response.status,
    body: response.body,
    errors: [],
  });
  expect(valid).toBe(true);
  for (const [header, definition] of Object.entries(headers)) {
    const value = response.headers.get(header);
    if (value === null) continue;
    const headerSchema = definition.schema as Json;
    const typed = headerSchema.type === 'integer' ? Number(value) : value;
    expect({ header, valid: ajv.validate(headerSchema, typed) }).toEqual({ header, valid: true });
  }
  // The same bodies parse with the zod schemas the document is generated from.
  if ('code' in response.body) anyErrorSchema.parse(response.body);
  else verificationSchema.parse(response.body);
}

let harness: Harness;
let api: ApiClient;

/** The code as the end user reads it, once the simulated carrier has it. */
const delivered = (to: string): Promise<string> =>
  eventually(() => api.latestCode(to).catch(() => undefined), 10_000, 20);

beforeAll(async () => {
  // A small per-key limit, so that the last test reaches it; the fake clock keeps every request in one window.
  harness = await startHarness({ settings: { keyRequestsPerMinute: 40 } });
  harness.clock.set(new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000));
  api = harness.client(await harness.createAccount());
});
afterAll(() => harness.close());

it('the local stack serves the document at /openapi.json, without an API key', async () => {
  const response = await fetch(`${harness.stack.url}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await response.json()).toEqual(JSON.parse(JSON.stringify(doc)));
});

it('send: 201 (form and JSON, a replay with Idempotent-Replayed), 400 invalid_parameter and invalid_code', async () => {
  const sent = await api.send({ To: '+14155550150' });
  expect(sent.status).toBe(201);
  expectDocumented('send', sent);

  const key = 'openapi-replay-key';
  const first = await api.send({ To: '+14155550151' }, { json: true, headers: { 'idempotency-key': key } });
  const replay = await api.send({ To: '+14155550151' }, { json: true, headers: { 'idempotency-key': key } });
  expect([first.status, replay.status, replay.headers.get('idempotent-replayed')]).toEqual([
    201,
    201,
    'true',
  ]);
  expectDocumented('send', first);
  expectDocumented('send', replay);

  for (const params of [{}, { To: '+1415555015'.padEnd(21, '0') }, { To: '+14155550152', Code: 'no!' }]) {
    const refused = await api.send(params);
    expect(refused.status).toBe(400);
    expectDocumented('send', refused);
  }
  const tooLongKey = await api.send(
    { To: '+14155550153' },
    { headers: { 'idempotency-key': 'k'.repeat(192) } },
  );
  expect(tooLongKey.body.code).toBe('invalid_parameter');
  expectDocumented('send', tooLongKey);
});

it('check: 422 wrong code, 200 right, 409 already verified, 409 client_code; 400 and 404', async () => {
  const to = '+14155550160';
  const sid = (await api.send({ To: to })).body.sid as string;
  const code = await delivered(to);
  const wrong = await api.check({ VerificationSid: sid, Code: code === '000000' ? '111111' : '000000' });
  const right = await api.check({ VerificationSid: sid, Code: code }, { json: true });
  const again = await api.check({ VerificationSid: sid, Code: code });
  expect([wrong.status, right.status, again.status]).toEqual([422, 200, 409]);
  expect([wrong.body.status, right.body.status, again.body.status]).toEqual([
    'PENDING',
    'VERIFIED',
    'VERIFIED',
  ]);
  for (const response of [wrong, right, again]) expectDocumented('check', response);

  const own = (await api.send({ To: '+14155550161', Code: 'ABCD1234' })).body.sid as string;
  const clientCode = await api.check({ VerificationSid: own, Code: 'ABCD1234' });
  expect([clientCode.status, clientCode.body.code]).toEqual([409, 'client_code']);
  expectDocumented('check', clientCode);

  const missing = await api.check({ VerificationSid: sid });
  const unknown = await api.check({ VerificationSid: 'VE0123456789abcdef0123456789abcdef', Code: '123456' });
  expect([missing.status, unknown.status]).toEqual([400, 404]);
  expectDocumented('check', missing);
  expectDocumented('check', unknown);
});

it('check: 409 LOCKED after the last wrong attempt', async () => {
  const to = '+14155550162';
  const sid = (await api.send({ To: to })).body.sid as string;
  const code = await delivered(to);
  const wrongCode = code === '000000' ? '111111' : '000000';
  let last: ApiResponse | undefined;
  for (let i = 0; i < 5; i++) last = await api.check({ VerificationSid: sid, Code: wrongCode });
  expect([last!.status, last!.body.status]).toEqual([409, 'LOCKED']);
  expectDocumented('check', last!);
});

it('fetch: 200 and 404 not_found; 401 and 403 on every endpoint', async () => {
  const sid = (await api.send({ To: '+14155550170' })).body.sid as string;
  const fetched = await api.fetch(sid);
  const unknown = await api.fetch('VE0123456789abcdef0123456789abcdef');
  expect([fetched.status, unknown.status]).toEqual([200, 404]);
  expectDocumented('fetch', fetched);
  expectDocumented('fetch', unknown);

  const other = await harness.createAccount();
  const answers: [OperationName, ApiResponse][] = [
    ['send', await api.send({ To: '+14155550171' }, { apiKey: null })],
    ['check', await api.check({ VerificationSid: sid, Code: '123456' }, { serviceSid: other.serviceSid })],
    ['fetch', await api.fetch(sid, { apiKey: 'otpk_not-a-real-key' })],
  ];
  expect(answers.map(([, response]) => response.status)).toEqual([401, 403, 401]);
  for (const [name, response] of answers) expectDocumented(name, response);
});

it('the schemas refuse what the document does not describe (the checks above are not vacuous)', async () => {
  const sent = await api.send({ To: '+14155550190' });
  const check = (name: OperationName, status: number, body: unknown) =>
    ajv.compile({ ...responseSchema(name, status).schema, components: doc.components })(body);
  expect(check('send', 201, sent.body)).toBe(true);
  expect(check('send', 201, { ...sent.body, extra: 1 })).toBe(false);
  expect(check('send', 201, { ...sent.body, price: '0.05' })).toBe(false);
  expect(check('check', 200, sent.body)).toBe(false); // PENDING is not a 200 of the check
  expect(check('check', 409, { code: 'not_found', message: 'x' })).toBe(false);
  expect(check('fetch', 404, { code: 'burst', message: 'x' })).toBe(false);
});

it('429 rate_limited from the per-key limit, with Retry-After, on every endpoint', async () => {
  let limited: ApiResponse | undefined;
  for (let i = 0; i < 50 && limited === undefined; i++) {
    const response = await api.fetch('VE0123456789abcdef0123456789abcdef');
    if (response.status === 429) limited = response;
  }
  expect(limited).toBeDefined();
  expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expectDocumented('fetch', limited!);
  const send = await api.send({ To: '+14155550180' });
  const check = await api.check({ VerificationSid: 'VE0123456789abcdef0123456789abcdef', Code: '123456' });
  for (const [name, response] of [
    ['send', send],
    ['check', check],
  ] as const) {
    expect([response.status, response.body.code, response.headers.get('retry-after')]).toEqual([
      429,
      'rate_limited',
      limited!.headers.get('retry-after'),
    ]);
    expectDocumented(name, response);
  }
});

it('route errors have the documented Error object', async () => {
  const validate = ajv.compile({
    ...(doc.components.schemas as Record<string, Json>).Error,
    components: doc.components,
  });
  for (const [method, path, status] of [
    ['GET', '/v2/Nothing', 404],
    ['DELETE', OPENAPI_PATHS.send.path.replace('{ServiceSid}', 'VA0123456789abcdef0123456789abcdef'), 405],
  ] as const) {
    const response = await fetch(`${harness.stack.url}${path}`, { method });
    expect(response.status).toBe(status);
    expect(validate(await response.json())).toBe(true);
  }
});
