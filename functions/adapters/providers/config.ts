/**
 * Which provider carries each channel: the deployment's choice, read from one environment variable holding JSON
 * (`OTP_PROVIDERS`), with an optional per-country override. Pure (no SDK, no zod): the functions that never send
 * (send, check, fetch) read it to know which channels are configured at all, without loading any provider SDK.
 *
 *     OTP_PROVIDERS='{"sms":"aws-sms","rcs":"aws-sms","whatsapp":"aws-whatsapp","viber":"vonage",
 *                     "sna":"http-carrier","countries":{"DE":{"sms":"vonage"}}}'
 *
 * Unset: every channel on `http-carrier` (the gateway protocol of `OTP_CARRIER_URL`, the local simulated
 * carrier), as before. Set: a channel it does not name has no provider and is not eligible (routing skips it).
 * A country override only changes the provider of a channel that has one by default; it cannot add a channel
 * for one country (eligibility is decided per deployment, before the number's country matters).
 */
import { CHANNELS, type Channel } from '../../core/routing';
import { isObject, isOneOf } from '../shape';

const PROVIDER_NAMES = ['http-carrier', 'aws-sms', 'aws-whatsapp', 'vonage'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** The channels each provider can carry. */
const PROVIDER_CHANNELS: Record<ProviderName, readonly Channel[]> = {
  'http-carrier': CHANNELS,
  // Plain-text RCS goes through the same SendTextMessage, from an RCS agent (see aws-sms.ts).
  'aws-sms': ['sms', 'rcs'],
  'aws-whatsapp': ['whatsapp'],
  // SNA is not offered by any of these: the device must open the provider's check URL over mobile data, which
  // the API (send a code, check a code) does not carry. It stays on http-carrier.
  vonage: ['sms', 'whatsapp', 'viber', 'rcs'],
};

export const PROVIDERS_ENV = 'OTP_PROVIDERS';

export interface ProviderConfig {
  /** The provider of each configured channel; a channel absent here is not eligible. */
  channels: Partial<Record<Channel, ProviderName>>;
  /** Per ISO country, providers that replace the channel's default there. */
  countries: Record<string, Partial<Record<Channel, ProviderName>>>;
}

/** Every channel on http-carrier: the configuration when `OTP_PROVIDERS` is not set. */
export const DEFAULT_PROVIDER_CONFIG: ProviderConfig = {
  channels: Object.fromEntries(CHANNELS.map((channel) => [channel, 'http-carrier'])),
  countries: {},
};

/**
 * One channel map (the defaults, or a country's): its providers in CHANNELS order; what is wrong with it is added
 * to `issues` as `path: message`.
 */
function readChannelMap(
  value: unknown,
  path: string,
  issues: string[],
  otherKeys: readonly string[] = [],
): Partial<Record<Channel, ProviderName>> {
  const where = (key?: string) => [path, key].filter(Boolean).join('.') || '(root)';
  if (!isObject(value)) {
    issues.push(`${where()}: expected an object`);
    return {};
  }
  for (const key of Object.keys(value)) {
    if (!isOneOf(CHANNELS, key) && !otherKeys.includes(key))
      issues.push(`${where()}: unrecognized key "${key}"`);
  }
  const map: Partial<Record<Channel, ProviderName>> = {};
  for (const channel of CHANNELS) {
    const name = value[channel];
    if (name === undefined) continue;
    if (!isOneOf(PROVIDER_NAMES, name))
      issues.push(`${where(channel)}: expected one of ${PROVIDER_NAMES.join(', ')}`);
    else if (!PROVIDER_CHANNELS[name].includes(channel))
      issues.push(`${where(channel)}: ${name} does not carry ${channel}`);
    else map[channel] = name;
  }
  return map;
}

/** Parses `OTP_PROVIDERS`; throws (at cold start) on JSON or names that are not valid, naming every problem. */
export function parseProviderConfig(raw: string | undefined): ProviderConfig {
  if (raw === undefined || raw.trim() === '') return DEFAULT_PROVIDER_CONFIG;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`${PROVIDERS_ENV} is not JSON`);
  }
  const issues: string[] = [];
  const channels = readChannelMap(json, '', issues, ['countries']);
  const countries: ProviderConfig['countries'] = {};
  const byCountry = isObject(json) ? json.countries : undefined;
  if (byCountry !== undefined && !isObject(byCountry)) issues.push('countries: expected an object');
  for (const [country, value] of Object.entries(isObject(byCountry) ? byCountry : {})) {
    if (!/^[A-Z]{2}$/.test(country)) {
      issues.push(`countries.${country}: not an ISO country code (two capital letters)`);
      continue;
    }
    const map = readChannelMap(value, `countries.${country}`, issues);
    for (const channel of CHANNELS) {
      if (map[channel] && !channels[channel])
        issues.push(
          `countries.${country}.${channel}: ${channel} has no default provider: a country can only override one`,
        );
    }
    countries[country] = map;
  }
  if (issues.length > 0) throw new Error(`${PROVIDERS_ENV} is not valid: ${issues.join('; ')}`);
  return { channels, countries };
}

/** The channels some provider carries, in CHANNELS order: the deployment allows only these. */
export const configuredChannels = (config: ProviderConfig): Channel[] =>
  CHANNELS.filter((channel) => config.channels[channel] !== undefined);

/** The providers the configuration names anywhere (each is built once). */
export function providersInUse(config: ProviderConfig): ProviderName[] {
  const names = new Set<ProviderName>(Object.values(config.channels));
  for (const map of Object.values(config.countries)) for (const name of Object.values(map)) names.add(name);
  return PROVIDER_NAMES.filter((name) => names.has(name));
}

/** The provider of `channel` for a number of `country` (undefined: the channel is not configured). */
export const providerFor = (
  config: ProviderConfig,
  channel: Channel,
  country: string | undefined,
): ProviderName | undefined =>
  (country !== undefined ? config.countries[country]?.[channel] : undefined) ?? config.channels[channel];
