import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod/mini';
import { OtpError, type ErrorCode } from '../core/errors';

/** The content codings that compress (RFC 9110, the IANA registry): a body in one of them cannot be read. */
const COMPRESSIONS = /\b(gzip|x-gzip|deflate|br|compress|x-compress|zstd|aes128gcm|exi|pack200-gzip)\b/;

/** Bodies are small forms; anything larger is refused before parsing. */
const MAX_BODY_BYTES = 16 * 1024;

const header = (event: APIGatewayProxyEventV2, name: string): string | undefined => {
  // API Gateway HTTP APIs lower-case header names; other callers of the handlers may not.
  const entry = Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === name);
  return entry?.[1];
};

export { header };

/**
 * The request's parameters from a form-encoded or JSON body (docs/api.md). JSON needs
 * `Content-Type: application/json`; a body without a content type is read as a form.
 */
export function readBodyParams(event: APIGatewayProxyEventV2): Record<string, unknown> {
  const raw = event.body ?? '';
  // A leading byte order mark (some Windows tools write one) is no part of the body: JSON's RFC 8259 lets a
  // parser ignore it, and in a form it would end up in the first parameter's name.
  const text = (event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw).replace(
    /^\uFEFF/,
    '',
  );
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) {
    throw new OtpError('invalid_parameter', `The body is larger than ${MAX_BODY_BYTES} bytes.`);
  }
  // API Gateway passes a body on as it came: a compressed one, or one in UTF-16 or UTF-32, would otherwise be
  // read as text and answered "not valid JSON" or "To is required", saying nothing of the real problem. Other
  // declared charsets pass: the parameters are ASCII, which they all spell alike (Apache HttpClient's forms say
  // ISO-8859-1), and a header naming no compression (`Content-Encoding: utf-8`, a common slip) changes nothing.
  const encoding = header(event, 'content-encoding')?.trim().toLowerCase();
  if (encoding && COMPRESSIONS.test(encoding)) {
    throw new OtpError('invalid_parameter', 'Send the body uncompressed: no Content-Encoding is read.');
  }
  const [mediaType, ...parameters] = (header(event, 'content-type') ?? '').split(';');
  const charset = parameters
    .map((parameter) => /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(parameter)?.[1]?.toLowerCase())
    .find(Boolean);
  if (charset && /^utf-?(16|32)/.test(charset)) {
    throw new OtpError('invalid_parameter', 'Send the body in UTF-8: UTF-16 and UTF-32 are not read.');
  }
  const contentType = mediaType!.trim().toLowerCase();
  if (contentType === 'application/json' || contentType.endsWith('+json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text === '' ? '{}' : text);
    } catch {
      throw new OtpError('invalid_parameter', 'The body is not valid JSON.');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new OtpError('invalid_parameter', 'The JSON body must be an object.');
    }
    return parsed as Record<string, unknown>;
  }
  if (contentType === '' || contentType === 'application/x-www-form-urlencoded') {
    const params: Record<string, string> = {};
    // The first value wins for a repeated name, as in most form parsers.
    for (const [name, value] of new URLSearchParams(text)) if (!(name in params)) params[name] = value;
    return params;
  }
  throw new OtpError(
    'invalid_parameter',
    'Send the body as application/x-www-form-urlencoded or application/json.',
  );
}

/**
 * Validates parameters with a zod schema. A failed rule answers with the code the API gives that field
 * (`fieldCodes`), a missing or mistyped value with `invalid_parameter`; the message names the field and says
 * which: required, not a string (a JSON number, list, object or null), or the rule it broke.
 */
export function validate<T extends z.ZodMiniType>(
  schema: T,
  params: unknown,
  fieldCodes: Partial<Record<string, ErrorCode>> = {},
): z.infer<T> {
  const result = schema.safeParse(params);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = String(issue.path[0] ?? 'body');
  const isTypeProblem = issue.code === 'invalid_type';
  const code = (!isTypeProblem && fieldCodes[field]) || 'invalid_parameter';
  // Whether the field was sent is read from the parameters: zod's issue carries no input unless asked to.
  const sent =
    typeof params === 'object' && params !== null && (params as Record<string, unknown>)[field] !== undefined;
  const message = isTypeProblem
    ? sent
      ? `${field} must be a string.`
      : `${field} is required.`
    : ruleMessage(field, issue);
  throw new OtpError(code, message);
}

/** What a string broke, in words: its length, its allowed values, or the rule's own message where it has one. */
function ruleMessage(field: string, issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'too_small':
      return Number(issue.minimum) <= 1
        ? `${field} is empty.`
        : `${field} is shorter than ${issue.minimum} characters.`;
    case 'too_big':
      return `${field} is longer than ${issue.maximum} characters.`;
    case 'invalid_value':
      return `${field} must be one of: ${issue.values.join(', ')}.`;
    default:
      // A rule's own words (given as `error`), else zod's default "Invalid input", which says nothing.
      return issue.message && issue.message !== 'Invalid input' ? issue.message : `${field} is not valid.`;
  }
}

/** `Code` as the API defines a caller-supplied one: 4 to 10 ASCII letters or digits. */
const CLIENT_CODE = /^[A-Za-z0-9]{4,10}$/;

/*
 * zod's functional API (`zod/mini`): a bundle carries only the checks it uses, a fraction of classic zod's size
 * and require time (docs/bench.md). The schemas are built in a pure call, so a bundle that never
 * validates them (the fetch function's) drops them and zod with them: esbuild keeps a module-level call otherwise.
 */
export const sendParamsSchema = /* @__PURE__ */ (() =>
  z.object({
    To: z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(20),
        z.describe(
          'Phone number in E.164 (+, country code, number); spaces, dashes, dots, slashes and brackets are tolerated; an extension is refused.',
        ),
      ),
    TemplateSid: z
      .optional(z.string().check(z.maxLength(64)))
      .check(
        z.describe("One of the account's templates; omitted: the default template. An `HJ…` SID is ignored."),
      ),
    Code: z
      .optional(
        z.string().check(z.regex(CLIENT_CODE, { error: 'Code must be 4 to 10 ASCII letters or digits.' })),
      )
      .check(
        z.describe(
          'Only for callers generating their own codes, delivered as given and never checked by the service.',
        ),
      ),
    RiskCheck: z
      .optional(z.enum(['enable', 'disable']))
      .check(
        z.describe(
          "`disable` skips the pumping guard for this send (for a number you know, e.g. in a test) if the account's owner allows it; otherwise the send is judged as if RiskCheck were absent, with no error. `enable`, the default, lets it judge.",
        ),
      ),
  }))();

export const checkParamsSchema = /* @__PURE__ */ (() =>
  z.object({
    VerificationSid: z.string().check(z.minLength(1), z.describe('The `sid` returned by send.')),
    Code: z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(10),
        z.describe('The code the user typed, compared exactly (spaces and dashes are not stripped).'),
      ),
  }))();

export const MAX_IDEMPOTENCY_KEY_LENGTH = 191;
