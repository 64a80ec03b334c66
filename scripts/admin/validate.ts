/**
 * Parsers for the admin command's arguments. Each returns the value the account store wants or throws a
 * `UsageError` that says what was expected, so a typo never reaches the table.
 */
import { isSupportedCountry } from 'libphonenumber-js/max';
import { formatUnits, parseUsd } from '../../functions/core/money';
import { CHANNELS, ROUTES, parseChannelList, type Channel } from '../../functions/core/routing';
import { checkWebhookUrl } from '../../functions/core/webhooks';
import { UsageError } from './framework';

const SERVICE_SID = /^VA[0-9a-f]{32}$/;
const TEMPLATE_SID = /^HX[0-9a-f]{32}$/;
const WEBHOOK_SID = /^WH[0-9a-f]{32}$/;
/** Key ids are the first hex characters of the key's SHA-256; 8 is the shortest the store accepts. */
const KEY_ID = /^[0-9a-f]{8,64}$/;
/** E.164 country codes never start with 0, and a number has at most 15 digits. */
const E164_PREFIX = /^\+[1-9]\d{0,14}$/;
const LOCALE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

const MAX_NAME_LENGTH = 100;
/** Long enough for any real OTP message; a guard against pasting a file by mistake. */
const MAX_TEMPLATE_LENGTH = 1000;

export function serviceSid(text: string): string {
  if (!SERVICE_SID.test(text)) {
    throw new UsageError(
      `"${text}" is not a Service SID: expected VA followed by 32 lowercase hex characters`,
    );
  }
  return text;
}

export function templateSid(text: string): string {
  if (!TEMPLATE_SID.test(text)) {
    throw new UsageError(
      `"${text}" is not a template SID: expected HX followed by 32 lowercase hex characters`,
    );
  }
  return text;
}

export function webhookSid(text: string): string {
  if (!WEBHOOK_SID.test(text)) {
    throw new UsageError(
      `"${text}" is not a webhook endpoint SID: expected WH followed by 32 lowercase hex characters (see webhook list)`,
    );
  }
  return text;
}

/**
 * A webhook URL: HTTPS to a public host for a deployed table; the local stack (and any DynamoDB Local) also
 * takes http:// and loopback, so its own receiver can be registered.
 */
export function webhookUrl(text: string, { allowPrivate }: { allowPrivate: boolean }): string {
  const checked = checkWebhookUrl(text, { allowPrivate });
  if (!checked.ok) {
    throw new UsageError(
      `"${text}" cannot be a webhook URL: ${checked.reason}` +
        (allowPrivate ? '' : ' (a deployed stack posts only to public https:// URLs)'),
    );
  }
  return checked.url.toString();
}

export function keyId(text: string): string {
  if (!KEY_ID.test(text)) {
    throw new UsageError(`"${text}" is not a key id: expected the hex id shown by \`key list\``);
  }
  return text;
}

/** A USD amount with at most four decimals, in units of 0.0001 USD. */
export function usd(text: string, what: string, { allowZero = true } = {}): number {
  const units = parseUsd(text);
  if (units === undefined) {
    throw new UsageError(
      `${what} "${text}" is not a USD amount: expected e.g. 25 or 0.0600 (at most 4 decimals)`,
    );
  }
  if (!allowZero && units === 0) throw new UsageError(`${what} must be more than ${formatUnits(0)} USD`);
  return units;
}

/** ISO 3166-1 alpha-2, any case in, upper case out. */
export function country(text: string): string {
  const code = text.toUpperCase();
  if (!/^[A-Z]{2}$/.test(code) || !isSupportedCountry(code)) {
    throw new UsageError(`"${text}" is not an ISO 3166-1 alpha-2 country code (e.g. GB, US, CU)`);
  }
  return code;
}

/** A country the service routes to: prices only mean something there. */
export function servedCountry(text: string): string {
  const code = country(text);
  if (!ROUTES[code]) {
    throw new UsageError(`${code} is not a served country; served: ${Object.keys(ROUTES).join(', ')}`);
  }
  return code;
}

export function prefix(text: string): string {
  if (!E164_PREFIX.test(text)) {
    throw new UsageError(`"${text}" is not an E.164 prefix: expected + and 1 to 15 digits, e.g. +4470`);
  }
  return text;
}

/** Comma-separated channel names; order does not matter (routing tries the cheapest first). */
export function channels(text: string): Channel[] {
  const { channels, unknown } = parseChannelList(text);
  if (unknown.length > 0) {
    throw new UsageError(`Unknown channel ${unknown.join(', ')}; channels are ${CHANNELS.join(', ')}`);
  }
  if (channels.length === 0) throw new UsageError(`Give at least one channel: ${CHANNELS.join(', ')}`);
  return channels;
}

export function serviceName(text: string): string {
  const name = text.trim();
  if (name === '' || name.length > MAX_NAME_LENGTH) {
    throw new UsageError(`A service name has 1 to ${MAX_NAME_LENGTH} characters`);
  }
  return name;
}

export function templateBody(text: string): string {
  if (!text.includes('{code}')) {
    throw new UsageError('A template needs the {code} placeholder, e.g. "Your Acme code is {code}"');
  }
  if (text.length > MAX_TEMPLATE_LENGTH) {
    throw new UsageError(`A template has at most ${MAX_TEMPLATE_LENGTH} characters`);
  }
  return text;
}

export function locale(text: string): string {
  if (!LOCALE.test(text)) throw new UsageError(`"${text}" is not a locale, e.g. en or pt-BR`);
  return text;
}
