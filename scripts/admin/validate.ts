/**
 * Parsers for the admin command's arguments. Each returns the value the account store wants or throws a
 * `UsageError` that says what was expected, so a typo never reaches the table.
 */
import { isSupportedCountry } from 'libphonenumber-js/max';
import {
  parseApiKeyLimit,
  parseE164Prefix,
  parseKeyId,
  parseLocale,
  parseServiceName,
  parseSid,
  parseTemplateBody,
  parseTemplateSmsPartLimit,
  parseUsdAmount,
  type Parsed,
} from '../../functions/core/accounts/formats';
import { CHANNELS, ROUTES, parseChannelList, type Channel } from '../../functions/core/routing';
import { checkWebhookUrl } from '../../functions/core/webhooks';
import { UsageError } from './framework';

/** The formats are the accounts core's; a problem is a usage error (exit 2). */
function usable<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw new UsageError(parsed.problem);
  return parsed.value;
}

export const serviceSid = (text: string): string => usable(parseSid('VA', text));
export const templateSid = (text: string): string => usable(parseSid('HX', text));
export const webhookSid = (text: string): string => usable(parseSid('WH', text));
export const keyId = (text: string): string => usable(parseKeyId(text));
export const prefix = (text: string): string => usable(parseE164Prefix(text));
export const serviceName = (text: string): string => usable(parseServiceName(text));
/** Before the service is read: the default SMS part limit; the core checks the service's own when it adds it. */
export const templateBody = (text: string): string => usable(parseTemplateBody(text, Infinity));
export const locale = (text: string): string => usable(parseLocale(text));
export const smsParts = (text: string): number => usable(parseTemplateSmsPartLimit(text));
export const apiKeyLimit = (text: string): number => usable(parseApiKeyLimit(text));
/** A USD amount with at most four decimals, in units of 0.0001 USD. */
export const usd = (text: string, what: string, options: { allowZero?: boolean } = {}): number =>
  usable(parseUsdAmount(text, what, options));

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

/** Comma-separated channel names; order does not matter (routing tries the cheapest first). */
export function channels(text: string): Channel[] {
  const { channels, unknown } = parseChannelList(text);
  if (unknown.length > 0) {
    throw new UsageError(`Unknown channel ${unknown.join(', ')}; channels are ${CHANNELS.join(', ')}`);
  }
  if (channels.length === 0) throw new UsageError(`Give at least one channel: ${CHANNELS.join(', ')}`);
  return channels;
}
