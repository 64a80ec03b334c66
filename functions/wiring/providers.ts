/**
 * The provider registry of a function, from `OTP_PROVIDERS` (adapters/providers/config.ts) and the providers'
 * settings. No AWS SDK client here (every API function's bundle reads this): the AWS senders are given by the
 * deliver task's root (wiring/provider-senders.ts); elsewhere the AWS providers are present by name only, to tie
 * receipts to them, and refuse to send.
 *
 * Settings (environment):
 * - `OTP_PROVIDERS`: JSON, the provider of each channel and per-country overrides (config.ts).
 * - aws-sms: `OTP_AWS_SMS_ORIGINATION_IDENTITY` (sms), `OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY` (rcs: the RCS agent
 *   alone), `OTP_AWS_SMS_CONFIGURATION_SET`, `OTP_AWS_SMS_PROTECT_CONFIGURATION_ID`, `OTP_AWS_SMS_MAX_PRICE`,
 *   `OTP_AWS_SMS_REGISTERED_TEMPLATES` (JSON, per country: registered-templates.ts), `OTP_AWS_SMS_ENDPOINT`.
 * - aws-whatsapp: `OTP_AWS_WHATSAPP_PHONE_NUMBER_ID`, `OTP_AWS_WHATSAPP_TEMPLATE_NAME`,
 *   `OTP_AWS_WHATSAPP_TEMPLATE_LANGUAGE` (en_US), `OTP_AWS_WHATSAPP_META_API_VERSION` (v24.0),
 *   `OTP_AWS_WHATSAPP_ENDPOINT`.
 * - vonage: `OTP_VONAGE_SECRET_ARN` (Secrets Manager JSON `{applicationId, privateKey, signatureSecret}`, read
 *   once per cold start by the functions that send or take its receipts), or locally `OTP_VONAGE_CREDENTIALS`
 *   (the same JSON); `OTP_VONAGE_BASE_URL` (https://api.nexmo.com); `OTP_VONAGE_FROM` (JSON, sender per channel,
 *   e.g. `{"viber":"Acme","sms":"Acme"}`); `OTP_VONAGE_WHATSAPP_TEMPLATE_NAME` / `_LANGUAGE` (en_US).
 */
import type { Provider, ProviderRegistry } from '../core/providers';
import { AWS_SMS_PROVIDER_NAME, AWS_WHATSAPP_PROVIDER_NAME } from '../adapters/providers/aws-events';
import { parseProviderConfig, type ProviderName } from '../adapters/providers/config';
import { HttpCarrierProvider } from '../adapters/providers/http-carrier';
import { buildProviderRegistry } from '../adapters/providers/registry';
import {
  VonageProvider,
  readVonageCredentials,
  type ReplayGuard,
  type VonageCredentials,
} from '../adapters/providers/vonage';
import { toKeyRing, type KeySource } from '../adapters/keyring';
import { isObject, isOneOf, isText } from '../adapters/shape';
import type { Channel } from '../core/routing';
import type { Env } from './env';

export const VONAGE_SECRET_ENV = 'OTP_VONAGE_SECRET_ARN';

/** The AWS providers, by name only: receipts are tied to them; sending is the deliver task's alone. */
const nameOnly = (name: string): Provider => ({
  name,
  send: () => Promise.reject(new Error(`${name} does not send from this function`)),
  parseReceipt: () => undefined,
});

export interface ProviderWiring {
  /** The AWS senders (the deliver task's root builds them, wiring/provider-senders.ts). */
  aws?: Partial<Record<'aws-sms' | 'aws-whatsapp', Provider>>;
  /** Vonage's credentials, read once (wiring/provider-secrets.ts); default: `OTP_VONAGE_CREDENTIALS`. */
  vonageCredentials?: () => Promise<VonageCredentials>;
  /** Spent Vonage callback tokens (the receipt function: DynamoReplayGuard). Without: every callback refused. */
  replays?: ReplayGuard;
}

/** `OTP_VONAGE_CREDENTIALS`, the inline credentials of the local stack and tests. */
export function inlineVonageCredentials(env: Env): () => Promise<VonageCredentials> {
  return async () => {
    const raw = env.OTP_VONAGE_CREDENTIALS;
    if (!raw) throw new Error(`No Vonage credentials: ${VONAGE_SECRET_ENV} is not read here`);
    const credentials = readVonageCredentials(JSON.parse(raw));
    if (!credentials) throw new Error('OTP_VONAGE_CREDENTIALS is not valid');
    return credentials;
  };
}

const VONAGE_FROM_CHANNELS = ['sms', 'whatsapp', 'viber', 'rcs'] as const;

/** `OTP_VONAGE_FROM`: a sender for some of Vonage's channels (the stack sets only those Vonage carries). */
export function vonageFromEnv(raw: string | undefined): Partial<Record<Channel, string>> {
  if (!raw) return {};
  const json: unknown = JSON.parse(raw);
  const valid =
    isObject(json) &&
    Object.entries(json).every(
      ([channel, sender]) => isOneOf(VONAGE_FROM_CHANNELS, channel) && isText(sender, undefined, 1),
    );
  if (!valid)
    throw new Error('OTP_VONAGE_FROM is not valid: a JSON object of sms, whatsapp, viber, rcs to a sender');
  return json as Partial<Record<Channel, string>>;
}

export function providersFromEnv(env: Env, keys: KeySource, wiring: ProviderWiring = {}): ProviderRegistry {
  const config = parseProviderConfig(env.OTP_PROVIDERS);
  const providers: Partial<Record<ProviderName, Provider>> = {
    'http-carrier': new HttpCarrierProvider({ baseUrl: env.OTP_CARRIER_URL, keys: toKeyRing(keys) }),
    'aws-sms': wiring.aws?.['aws-sms'] ?? nameOnly(AWS_SMS_PROVIDER_NAME),
    'aws-whatsapp': wiring.aws?.['aws-whatsapp'] ?? nameOnly(AWS_WHATSAPP_PROVIDER_NAME),
    vonage: new VonageProvider({
      ...(env.OTP_VONAGE_BASE_URL && { baseUrl: env.OTP_VONAGE_BASE_URL }),
      credentials: wiring.vonageCredentials ?? inlineVonageCredentials(env),
      from: vonageFromEnv(env.OTP_VONAGE_FROM),
      ...(env.OTP_VONAGE_WHATSAPP_TEMPLATE_NAME && {
        whatsappTemplate: {
          name: env.OTP_VONAGE_WHATSAPP_TEMPLATE_NAME,
          language: env.OTP_VONAGE_WHATSAPP_TEMPLATE_LANGUAGE ?? 'en_US',
        },
      }),
      ...(wiring.replays && { replays: wiring.replays }),
    }),
  };
  return buildProviderRegistry(config, providers);
}
