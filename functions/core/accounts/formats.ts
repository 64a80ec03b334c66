/**
 * Every format an account's settings take, defined once: the console API and the admin command both parse
 * through these, each turning a problem into its own kind of error (a JSON 400/404, a usage error). A parser
 * returns the normalised value, or the problem in words that say what was expected.
 */
import { SID_PATTERNS, type SidPrefix } from '../sids';
import { templateSmsSize, type SmsSize } from '../sms-segments';
import { parseUsd, formatUnits, UNITS_PER_USD, USD_LIMITS } from '../money';

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const problem = <T>(text: string): Parsed<T> => ({ ok: false, problem: text });

const SID_NAMES: Record<SidPrefix, string> = {
  VA: 'Service SID',
  VE: 'verification SID',
  HX: 'template SID',
  WH: 'webhook endpoint SID',
};

export function parseSid(prefix: SidPrefix, text: string): Parsed<string> {
  return SID_PATTERNS[prefix].test(text)
    ? ok(text)
    : problem(
        `"${text}" is not a ${SID_NAMES[prefix]}: expected ${prefix} followed by 32 lowercase hex characters`,
      );
}

/**
 * A key's id: the first hex characters of its hash, enough to name it among a service's keys without revealing
 * anything that helps find the key.
 */
export const KEY_ID_LENGTH = 12;
const KEY_ID = new RegExp(`^[0-9a-f]{${KEY_ID_LENGTH}}$`);

export const keyIdOf = (keyHash: string): string => keyHash.slice(0, KEY_ID_LENGTH);

export function parseKeyId(text: string): Parsed<string> {
  return KEY_ID.test(text)
    ? ok(text)
    : problem(
        `"${text}" is not a key id: expected the ${KEY_ID_LENGTH} hex characters shown in the key list`,
      );
}

/** E.164: a country code never starts with 0, and a number has at most 15 digits. */
const E164_PREFIX = /^\+[1-9]\d{0,14}$/;
/** The same rule as a browser form's `pattern` attribute (anchored by the browser). */
export const E164_PREFIX_PATTERN = E164_PREFIX.source.slice(1, -1);

export function parseE164Prefix(text: string): Parsed<string> {
  return E164_PREFIX.test(text)
    ? ok(text)
    : problem(`"${text}" is not an E.164 prefix: expected + and 1 to 15 digits, e.g. +4470`);
}

/** Blocked prefixes a service may hold. */
export const MAX_BLOCKED_PREFIXES = 100;
/** Numbers and prefixes on a service's guard safe list, at most. */
export const MAX_SAFE_LIST = 100;

export const MAX_SERVICE_NAME_LENGTH = 100;

export function parseServiceName(text: string): Parsed<string> {
  const name = text.trim();
  if (name === '' || name.length > MAX_SERVICE_NAME_LENGTH)
    return problem(`A service name has 1 to ${MAX_SERVICE_NAME_LENGTH} characters`);
  return isPlainText(name) ? ok(name) : problem('A service name has no control characters or broken Unicode');
}

const LOCALE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

export function parseLocale(text: string): Parsed<string> {
  return LOCALE.test(text) ? ok(text) : problem(`"${text}" is not a locale, e.g. en or pt-BR`);
}

/** Characters a template may have: long enough for any real OTP message, a guard against pasting a file. */
export const MAX_TEMPLATE_LENGTH = 1000;
/**
 * SMS parts a template's message may take, with the longest code, unless an operator sets the service's own limit
 * (docs/api.md, "Templates"): the price of a send is one charge however many parts the carrier bills.
 */
export const DEFAULT_TEMPLATE_SMS_PARTS = 2;
/** The most an operator may allow. */
export const MAX_TEMPLATE_SMS_PARTS = 10;

/** A template's SMS size and whether it is within the service's limit (an older template may not be). */
export interface TemplateSize extends SmsSize {
  limit: number;
  overLimit: boolean;
}

export function templateSize(body: string, limit = DEFAULT_TEMPLATE_SMS_PARTS): TemplateSize {
  const size = templateSmsSize(body);
  return { ...size, limit, overLimit: size.segments > limit };
}

/**
 * Text a person can read and a carrier can encode: no control characters but line breaks and tabs (a NUL in a name
 * or a message ends it early in some systems; the C1 set, U+0080 to U+009F, holds terminal escapes such as CSI
 * that no handset shows), and no lone surrogate (half a character, which no encoding sends).
 */
function isPlainText(text: string): boolean {
  // eslint-disable-next-line no-control-regex -- the control characters are what is looked for
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/.test(text)) return false;
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

export function parseTemplateBody(text: string, smsPartLimit = DEFAULT_TEMPLATE_SMS_PARTS): Parsed<string> {
  if (!isPlainText(text)) return problem('A template has no control characters or broken Unicode');
  if (!text.includes('{code}'))
    return problem('A template needs the {code} placeholder, e.g. "Your Acme code is {code}"');
  if (text.length > MAX_TEMPLATE_LENGTH)
    return problem(`A template has at most ${MAX_TEMPLATE_LENGTH} characters`);
  const size = templateSize(text, smsPartLimit);
  if (size.overLimit)
    return problem(
      `The template's SMS takes ${size.segments} parts (${size.units} ${size.encoding === 'GSM-7' ? 'GSM-7 characters' : 'UCS-2 units'} with a 10-character code); this service allows ${smsPartLimit}`,
    );
  return ok(text);
}

export function parseTemplateSmsPartLimit(text: string): Parsed<number> {
  const parts = Number(text);
  return /^\d+$/.test(text) && parts >= 1 && parts <= MAX_TEMPLATE_SMS_PARTS
    ? ok(parts)
    : problem(`An SMS part limit is a whole number from 1 to ${MAX_TEMPLATE_SMS_PARTS}`);
}

/**
 * Active API keys a service may hold unless an operator sets its own limit. Each key may make the per-key limit's
 * requests a minute, so the keys bound what one service can ask of the API every service shares
 * (docs/adr/0018-api-keys-per-service.md): 10 keys at 120 a minute are 20 requests a second.
 */
export const DEFAULT_API_KEY_LIMIT = 10;
/** The most an operator may allow: 4,000 requests a second at the interface's 120 a minute per key. */
const MAX_API_KEY_LIMIT = 2_000;

export function parseApiKeyLimit(text: string): Parsed<number> {
  const limit = Number(text);
  return /^\d+$/.test(text) && limit >= 1 && limit <= MAX_API_KEY_LIMIT
    ? ok(limit)
    : problem(`An API key limit is a whole number from 1 to ${MAX_API_KEY_LIMIT}`);
}

/** The largest single top-up: a typo's worth of protection, far above any real purchase. */
export const MAX_TOP_UP_UNITS = 1_000_000 * UNITS_PER_USD;

/** A USD amount with at most four decimals, in units of 0.0001 USD. */
export function parseUsdAmount(text: string, what: string, { allowZero = true } = {}): Parsed<number> {
  const units = parseUsd(text);
  // A number, but too precise or too large to hold, is told so: "not a USD amount" would send its typist hunting.
  const number = /^\s*(\d+)(?:\.(\d*))?\s*$/.exec(text);
  const { wholeDigits, decimals } = USD_LIMITS;
  if (units === undefined && number && (number[2]?.length ?? 0) > decimals)
    return problem(
      `${what} "${text}" has more than ${decimals} decimals: amounts are in units of 0.0001 USD`,
    );
  if (units === undefined && number && number[1]!.length > wholeDigits)
    return problem(
      `${what} "${text}" is larger than any amount held: at most ${formatUnits(10 ** (wholeDigits + decimals) - 1)} USD`,
    );
  if (units === undefined)
    return problem(`${what} "${text}" is not a USD amount: expected e.g. 25 or 0.0600 (at most 4 decimals)`);
  if (!allowZero && units === 0) return problem(`${what} must be more than ${formatUnits(0)} USD`);
  return ok(units);
}

/**
 * The fields of an audit record's before and after whose numbers are money: the record keeps the table's units of
 * 0.0001 USD, which read as dollars would be ten thousand times too much. Shown, they are USD like all money.
 */
export const AUDIT_MONEY_FIELDS: ReadonlySet<string> = new Set([
  'balance',
  'credit',
  'price',
  'hourlySpend',
  'dailySpend',
]);

/** An audit record's before or after with its money as USD strings (`"25.0000"`), nested fields included. */
export function auditChangeInUsd(change: unknown): unknown {
  if (change === undefined) return undefined;
  return JSON.parse(
    JSON.stringify(change, (key, value: unknown) =>
      AUDIT_MONEY_FIELDS.has(key) && typeof value === 'number' ? formatUnits(value) : value,
    ),
  ) as unknown;
}

export function parseTopUp(units: number): Parsed<number> {
  return units > 0 && units <= MAX_TOP_UP_UNITS
    ? ok(units)
    : problem(
        `A top-up is more than 0 and at most ${(MAX_TOP_UP_UNITS / UNITS_PER_USD).toLocaleString('en-US')} USD`,
      );
}

/** An operator's key for one top-up (a UUID, an order number): printable, no spaces, at most 191 characters. */
export function parseTopUpKey(key: string): Parsed<string> {
  return /^[\x21-\x7e]{1,191}$/.test(key)
    ? ok(key)
    : problem('A top-up key is 1 to 191 printable characters without spaces');
}

/**
 * The most shards a balance is spread over: a change of the spread rewrites every shard with its audit record in
 * one transaction (at most 100 items).
 */
export const MAX_BALANCE_SHARDS = 64;

/** A new shard count: more than the service has (shards are never merged back), at most MAX_BALANCE_SHARDS. */
export function parseBalanceShards(text: string, current: number): Parsed<number> {
  const shards = Number(text);
  if (!/^\d+$/.test(text) || shards < 1 || shards > MAX_BALANCE_SHARDS)
    return problem(`A balance shard count is a whole number from 1 to ${MAX_BALANCE_SHARDS}`);
  if (shards < current)
    return problem(`The balance is spread over ${current} shards; a spread can grow but never shrink`);
  return ok(shards);
}
