/**
 * The channels a deployment may use: those `OTP_ALLOWED_CHANNELS` allows that a configured provider carries
 * (`OTP_PROVIDERS`). Its own module, so the send's bundle reads the provider configuration without building the
 * provider registry it never calls (wiring/providers.ts).
 */
import type { Channel } from '../core/routing';
import { configuredChannels, parseProviderConfig } from '../adapters/providers/config';
import { allowedChannelsFromEnv, type Env } from './env';

export function deployableChannels(env: Env): Channel[] {
  // A channel no provider carries is not eligible: the deployment allows only configured channels.
  const configured = configuredChannels(parseProviderConfig(env.OTP_PROVIDERS));
  return allowedChannelsFromEnv(env).filter((channel) => configured.includes(channel));
}
