/**
 * The OpenAPI 3.1 document of the public API (docs/api.md says the rest), generated from the zod schemas the
 * handlers validate requests with (`./params.ts`) and the response schemas (`./schemas.ts`); the HTTP status of
 * every error code comes from the one table in `./errors.ts`, so neither can drift from the document.
 * `npm run openapi` writes it to docs/openapi.json and `npm start` serves it at `/openapi.json`. Only the local stack, scripts and tests
 * import this module: no Lambda bundle does.
 *
 * The receipt callback (`POST /v2/Callbacks/{Provider}`) is left out: its callers are the delivery providers,
 * not the API's customers; it takes no API key but each provider's own signature over a body of that provider's
 * own format, so it has no schema of this service to publish.
 */
import * as z from 'zod';
import type { ErrorCode } from '../core/errors';
import { SID_PATTERNS } from '../core/sids';
import { STATUS_BY_CODE } from './errors';
import { MAX_IDEMPOTENCY_KEY_LENGTH, checkParamsSchema, sendParamsSchema } from './params';
import { CODE_STATUSES, ERROR_CODES, errorSchema, verificationSchema } from './schemas';

type Json = Record<string, unknown>;
type Codes = readonly [ErrorCode, ...ErrorCode[]];
export type OperationName = 'send' | 'check' | 'fetch';

/** Codes every endpoint can answer, whatever its parameters: the API key, the per-key limit, a bug. */
const EVERY_ENDPOINT: readonly ErrorCode[] = ['unauthorized', 'forbidden', 'rate_limited', 'internal_error'];

/** The error codes of each endpoint: the API's, then the service's own (docs/api.md, Choices). */
const OPERATION_ERRORS: Readonly<Record<OperationName, readonly ErrorCode[]>> = {
  send: [
    'invalid_parameter',
    'invalid_code',
    'unroutable',
    'no_default_template',
    'no_eligible_channel',
    'unreachable',
    'insufficient_funds',
    'blocked_by_policy',
    'unknown_template',
    'burst',
    'rate_limited',
    'not_priceable',
    'service_unavailable',
    ...EVERY_ENDPOINT,
  ],
  check: ['invalid_parameter', 'not_found', 'client_code', ...EVERY_ENDPOINT],
  fetch: ['not_found', ...EVERY_ENDPOINT],
};

/**
 * Codes no operation of the document answers with: a request that matches no route or method, the receipt
 * callback's (left out, see above) and the console's. They are in the `default` response's schema all the same.
 */
export const ROUTE_ERRORS: readonly ErrorCode[] = ['route_not_found', 'method_not_allowed'];
export const UNDOCUMENTED_ERRORS: readonly ErrorCode[] = ['invalid_signature', 'too_many', 'conflict'];

/** What each code means, for the responses' descriptions. */
const CODE_CAUSES: Readonly<Record<ErrorCode, string>> = {
  invalid_parameter:
    'A parameter is missing, too long or of the wrong type, or the body is malformed, over 16 KiB or of another content type (send: `To` missing or over 20 characters, `TemplateSid` over 64, `Idempotency-Key` over 191; check: `VerificationSid` or `Code` missing, `Code` over 10).',
  invalid_code: '`Code` is not 4 to 10 ASCII letters or digits.',
  unroutable: '`To` is not a valid phone number, or its country is not served.',
  no_default_template: 'No `TemplateSid` given and the account has no default template.',
  no_eligible_channel: "None of the account's enabled channels can reach the number.",
  unreachable: 'Every channel rejected the number recently; refused for up to 30 days.',
  insufficient_funds: 'The balance is too low.',
  blocked_by_policy:
    "One of the account's delivery rules blocks the destination: a blocked country or prefix, a country off the account's allow-list (a new account sends to every served country but a few high-risk ones), a send or spend cap the account's owner set for the country reached this hour or day, or the pumping guard.",
  unknown_template: "`TemplateSid` is not one of the account's templates.",
  not_found: 'No verification with this SID belongs to the caller.',
  client_code: 'The code was supplied by the caller; the service does not check it.',
  burst: 'More than 3 sends to this number in 5 minutes (no `Retry-After`).',
  rate_limited:
    "The key's request limit (120 a minute by default), with `Retry-After`: the seconds to the next window, so waiting that long succeeds (`Retry-After: 1` when a function instance is flooded with unknown keys). On send also more than 10 sends to this number in an hour, without `Retry-After`.",
  not_priceable: 'No price exists for this destination.',
  unauthorized: 'The `X-API-Key` header is missing, or the key is unknown or revoked.',
  forbidden:
    'The key belongs to another service than the one in the path (the same whether it exists or not).',
  invalid_signature: 'A delivery receipt without a valid signature.',
  route_not_found: 'No route has this path.',
  method_not_allowed: 'The path exists, not with this method.',
  too_many:
    'The console only: the service already has as many webhook endpoints, API keys or templates as it may.',
  conflict:
    'The console only: a change of the delivery rules, the guard settings or the channels made on a copy of them older than they are; nothing changed.',
  service_unavailable:
    'More than 25 simultaneous sends to one number keep conflicting, or DynamoDB answers too slowly for the send to learn in its time whether a charge stands; nothing was charged: retry shortly.',
  internal_error:
    'An unexpected failure; nothing was charged twice. A send may be retried with its `Idempotency-Key`.',
};

/**
 * A zod schema (classic, or `zod/mini` as the request schemas are) as an OpenAPI 3.1 Schema Object (JSON Schema
 * 2020-12, the dialect OpenAPI 3.1 uses).
 */
const jsonSchema = (schema: z.core.$ZodType, io: 'input' | 'output'): Json => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'throw',
    // `.int()` adds the largest safe integer as a maximum: noise for a count.
    override: ({ jsonSchema: json }) => {
      if (json.maximum === Number.MAX_SAFE_INTEGER) delete json.maximum;
    },
  }) as Json;
  return rest;
};

const ref = (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

const json = (schema: Json) => ({ content: { 'application/json': { schema } } });

/** A verification whose `status` is one of `statuses` (the check's answers). */
const verificationWithStatus = (...statuses: (typeof CODE_STATUSES)[number][]): Json => ({
  allOf: [
    ref('schemas', 'Verification'),
    { type: 'object', properties: { status: { type: 'string', enum: statuses } } },
  ],
});

/** The error responses of an operation, one per status, each with the codes of that status as an enum. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = STATUS_BY_CODE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, Json> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: group.map((code) => `\`${code}\`: ${CODE_CAUSES[code]}`).join('\n\n'),
      ...(group.includes('rate_limited') && { headers: { 'Retry-After': ref('headers', 'RetryAfter') } }),
      ...json(jsonSchema(errorSchema(group as unknown as Codes), 'output')),
    };
  }
  return responses;
}

const DEFAULT_RESPONSE = {
  description:
    'Any other status is an error and says nothing about the code. On AWS, API Gateway answers a few requests itself with `{"message": "..."}` and no `code`: a body over its limit (413) and the stage throttling (429, no `Retry-After`).',
  ...json(ref('schemas', 'Error')),
};

const requestBody = (schema: string, description: string) => ({
  required: true,
  description: `${description} Form-encoded or JSON (with \`Content-Type: application/json\`); unknown parameters are ignored; a repeated form field: the first value counts.`,
  content: {
    'application/x-www-form-urlencoded': { schema: ref('schemas', schema) },
    'application/json': { schema: ref('schemas', schema) },
  },
});

export const OPENAPI_PATHS: Readonly<Record<OperationName, { method: 'get' | 'post'; path: string }>> = {
  send: { method: 'post', path: '/v2/Services/{ServiceSid}/Verifications' },
  check: { method: 'post', path: '/v2/Services/{ServiceSid}/VerificationCheck' },
  fetch: { method: 'get', path: '/v2/Services/{ServiceSid}/Verifications/{VerificationSid}' },
};

/** The document. Pure: the same document on every call. */
export function buildOpenApiDocument(): Json {
  const send = {
    operationId: 'sendVerification',
    tags: ['Verifications'],
    summary: 'Send OTP',
    description:
      'Sends a one-time code to a phone number and returns a new verification. Each 201 is charged, including a repeat send to the same number; an error is never charged. 201 means the send was accepted, not that the message arrived: follow delivery by fetching the verification or by webhooks.',
    parameters: [ref('parameters', 'ServiceSid'), ref('parameters', 'IdempotencyKey')],
    requestBody: requestBody(
      'SendParams',
      'The number to send to, and optionally a template or your own code.',
    ),
    responses: {
      '201': {
        description:
          'Accepted and charged. A repeat with the `Idempotency-Key` of an accepted send answers the same verification in its current state, with `Idempotent-Replayed: true`; nothing is sent or charged again.',
        headers: { 'Idempotent-Replayed': ref('headers', 'IdempotentReplayed') },
        ...json(ref('schemas', 'Verification')),
      },
      ...errorResponses(OPERATION_ERRORS.send),
      default: DEFAULT_RESPONSE,
    },
  };

  const checkErrors = errorResponses(OPERATION_ERRORS.check);
  const clientCode = checkErrors['409']!;
  const check = {
    operationId: 'checkVerification',
    tags: ['Verifications'],
    summary: 'Verify OTP',
    description:
      "Checks the code the user typed. Only 200 means the code is correct; take the verified number from `to` in that response. Each 200 or 422 uses one of the code's attempts; a 409 uses none. Free.",
    parameters: [ref('parameters', 'ServiceSid')],
    requestBody: requestBody('CheckParams', 'The SID returned by send and the code the user typed.'),
    responses: {
      '200': {
        description: 'The code is correct: the verification with status VERIFIED.',
        ...json(verificationWithStatus('VERIFIED')),
      },
      ...checkErrors,
      '409': {
        description: `No attempt used. The verification with status LOCKED (the last attempt was wrong, or already locked), EXPIRED, or VERIFIED (already verified by an earlier check: never log a user in on this answer); or an error: ${clientCode.description as string}`,
        ...json({
          oneOf: [
            verificationWithStatus('LOCKED', 'EXPIRED', 'VERIFIED'),
            (clientCode.content as { 'application/json': { schema: Json } })['application/json'].schema,
          ],
        }),
      },
      '422': {
        description: 'Wrong code, tries left: the verification with status PENDING and one attempt fewer.',
        ...json(verificationWithStatus('PENDING')),
      },
      default: DEFAULT_RESPONSE,
    },
  };

  const fetch = {
    operationId: 'fetchVerification',
    tags: ['Verifications'],
    summary: 'Get OTP status',
    description:
      'The current state of a verification in any state. Free; uses no attempt. Poll at most once a second; stop when `delivery_status` is DELIVERED or FAILED or `expires_at` has passed (SENT can be final).',
    parameters: [ref('parameters', 'ServiceSid'), ref('parameters', 'VerificationSid')],
    responses: {
      '200': { description: 'The verification.', ...json(ref('schemas', 'Verification')) },
      ...errorResponses(OPERATION_ERRORS.fetch),
      default: DEFAULT_RESPONSE,
    },
  };

  const operations = { send, check, fetch };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [name, { method, path }] of Object.entries(OPENAPI_PATHS)) {
    paths[path] = { ...paths[path], [method]: sortResponses(operations[name as OperationName]) };
  }

  const documented = ERROR_CODES.filter((code) => !UNDOCUMENTED_ERRORS.includes(code)) as unknown as Codes;

  return {
    openapi: '3.1.0',
    info: {
      title: 'otp-verify: phone verification (OTP)',
      version: 'v2',
      summary: 'Send a one-time code to a phone number, check the code the user typed, read a verification.',
      description: [
        'The public API of otp-verify (docs/api.md). Every request carries `X-API-Key`; the key is billed for every send, so keep it on your backend.',
        'Errors are JSON objects with a `code` and a human `message`. Apart from the codes under each operation, a request that matches no route answers 404 `route_not_found` and a path with another method 405 `method_not_allowed` with `Allow` (on AWS too: the `$default` route of the API answers them).',
        'The delivery receipt callback (`POST /v2/Callbacks/{Provider}`) is for delivery providers, signed in their own formats, and is not part of this document.',
      ].join('\n\n'),
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      {
        url: '/',
        description:
          'Relative to where the document is read: the local stack (`npm start`) serves it at /openapi.json; on AWS, use the stack output ApiUrl.',
      },
    ],
    security: [{ ApiKey: [] }],
    tags: [{ name: 'Verifications', description: 'Send, check and fetch verifications.' }],
    paths,
    components: {
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description:
            "The service's API key, from `npm run admin`. Missing, unknown or revoked: 401 `unauthorized`; a key of another service: 403 `forbidden`.",
        },
      },
      parameters: {
        ServiceSid: {
          name: 'ServiceSid',
          in: 'path',
          required: true,
          description:
            "The service's SID: the account in every path. A key of another service: 403 `forbidden`.",
          schema: jsonSchema(z.string().regex(SID_PATTERNS.VA), 'input'),
        },
        VerificationSid: {
          name: 'VerificationSid',
          in: 'path',
          required: true,
          description: 'The `sid` returned by send. Any other value: 404 `not_found`.',
          schema: jsonSchema(z.string().regex(SID_PATTERNS.VE), 'input'),
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: `A random string, new for each code to send, at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (longer: 400 \`invalid_parameter\`). Remembered 24 hours per service once a send with it is accepted: a repeat answers that verification with 201 and \`Idempotent-Replayed: true\`, sending and charging nothing, even if \`To\` differs. A key of a refused send is not remembered.`,
          schema: jsonSchema(z.string().max(MAX_IDEMPOTENCY_KEY_LENGTH), 'input'),
        },
      },
      headers: {
        RetryAfter: {
          description:
            "Sent with 429 `rate_limited` from the key's request limit only: the seconds until the next one-minute window, so waiting that long succeeds.",
          schema: jsonSchema(z.number().int().min(1), 'output'),
        },
        IdempotentReplayed: {
          description:
            'Sent as `true` when the 201 replays the verification of an earlier send with this `Idempotency-Key`.',
          schema: jsonSchema(z.literal('true'), 'output'),
        },
      },
      schemas: {
        Verification: jsonSchema(verificationSchema, 'output'),
        Error: jsonSchema(errorSchema(documented), 'output'),
        SendParams: jsonSchema(sendParamsSchema, 'input'),
        CheckParams: jsonSchema(checkParamsSchema, 'input'),
      },
    },
  };
}

/** Responses in status order (2xx first, `default` last), as API references list them. */
function sortResponses<T extends { responses: Record<string, unknown> }>(operation: T): T {
  const order = (status: string) => (status === 'default' ? 1000 : Number(status));
  const responses = Object.fromEntries(
    Object.entries(operation.responses).sort(([a], [b]) => order(a) - order(b)),
  );
  return { ...operation, responses };
}
