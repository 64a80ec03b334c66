/**
 * Which provider carries each channel: the deployment's choice, read from one environment variable holding JSON
 * (`OTP_PROVIDERS`), with an optional per-country override. Pure (zod only): the functions that never send (send,
 * check, fetch) read it to know which channels are configured at all, without loading any provider SDK.
 *
 *     OTP_PROVIDERS='{"sms":"aws-sms","rcs":"aws-sms","whatsapp":"aws-whatsapp","viber":"vonage",
 *                     "sna":"http-carrier","countries":{"DE":{"sms":"vonage"}}}'
 *
 * Unset: every channel on `http-carrier` (the gateway protocol of `OTP_CARRIER_URL`, the local simulated
 * carrier), as before. Set: a channel it does not name has no provider and is not eligible (routing skips it).
 * A country override only changes the provider of a channel that has one by default; it cannot add a channel
 * for one country (eligibility is decided per deployment, before the number's country matters).
 */
import * as z from 'zod';
import { CHANNELS, type Channel } from '../../core/routing';

export const PROVIDER_NAMES = ['http-carrier', 'aws-sms', 'aws-whatsapp', 'vonage'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** The channels each provider can carry. */
export const PROVIDER_CHANNELS: Record<ProviderName, readonly Channel[]> = {
  'http-carrier': CHANNELS,
  // Plain-text RCS goes through the same SendTextMessage, from an RCS agent (see aws-sms.ts).
  'aws-sms': ['sms', 'rcs'],
  'aws-whatsapp': ['whatsapp'],
  // SNA is not offered by any of these: the device must open the provider's check URL over mobile data, which
  // the spec's API (send a code, check a code) does not carry. It stays on http-carrier.
  vonage: ['sms', 'whatsapp', 'viber', 'rcs'],
};

export const PROVIDERS_ENV = 'OTP_PROVIDERS';

const providerName = z.enum(PROVIDER_NAMES);
const channelMap = z.strictObject({
  sms: providerName.optional(),
  whatsapp: providerName.optional(),
  viber: providerName.optional(),
  rcs: providerName.optional(),
  sna: providerName.optional(),
});

const configSchema = channelMap
  .extend({ countries: z.record(z.string().regex(/^[A-Z]{2}$/), channelMap).optional() })
  .superRefine((config, context) => {
    const check = (map: z.infer<typeof channelMap>, path: (string | number)[]) => {
      for (const channel of CHANNELS) {
        const name = map[channel];
        if (name && !PROVIDER_CHANNELS[name].includes(channel))
          context.addIssue({
            code: 'custom',
            path: [...path, channel],
            message: `${name} does not carry ${channel}`,
          });
      }
    };
    check(config, []);
    for (const [country, map] of Object.entries(config.countries ?? {})) {
      check(map, ['countries', country]);
      for (const channel of CHANNELS) {
        if (map[channel] && !config[channel])
          context.addIssue({
            code: 'custom',
            path: ['countries', country, channel],
            message: `${channel} has no default provider: a country can only override one`,
          });
      }
    }
  });

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

/** Parses `OTP_PROVIDERS`; throws (at cold start) on JSON or names that are not valid. */
export function parseProviderConfig(raw: string | undefined): ProviderConfig {
  if (raw === undefined || raw.trim() === '') return DEFAULT_PROVIDER_CONFIG;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`${PROVIDERS_ENV} is not JSON`);
  }
  const parsed = configSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
    throw new Error(`${PROVIDERS_ENV} is not valid: ${issues.join('; ')}`);
  }
  const { countries, ...channels } = parsed.data;
  const picked = (map: z.infer<typeof channelMap>) =>
    Object.fromEntries(CHANNELS.flatMap((channel) => (map[channel] ? [[channel, map[channel]]] : [])));
  return {
    channels: picked(channels),
    countries: Object.fromEntries(
      Object.entries(countries ?? {}).map(([country, map]) => [country, picked(map)]),
    ),
  };
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
