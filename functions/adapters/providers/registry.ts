import type { Provider, ProviderRegistry } from '../../core/providers';
import type { Channel } from '../../core/routing';
import { providerFor, providersInUse, type ProviderConfig, type ProviderName } from './config';

/**
 * The registry of a provider configuration, from the providers it names (built by the composition root: the
 * deliver task builds senders, the receipt functions only what parses receipts). `forChannel` of a channel the
 * configuration does not carry throws: routing never picks one (allowed channels = allowed ∩ configured).
 */
export function buildProviderRegistry(
  config: ProviderConfig,
  providers: Partial<Record<ProviderName, Provider>>,
): ProviderRegistry {
  const missing = providersInUse(config).filter((name) => !providers[name]);
  if (missing.length > 0)
    throw new Error(`No adapter given for the configured providers ${missing.join(', ')}`);
  const byName = new Map<string, Provider>();
  for (const name of providersInUse(config)) byName.set(providers[name]!.name, providers[name]!);
  return {
    forChannel(channel: Channel, country: string | undefined): Provider {
      const name = providerFor(config, channel, country);
      if (!name) throw new Error(`No provider is configured for ${channel}`);
      return providers[name]!;
    },
    byName: (name) => byName.get(name),
  };
}
