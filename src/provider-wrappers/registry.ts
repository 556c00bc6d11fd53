/** Chooses the provider for a message's provider_name: the config key or one of its aliases, case-insensitively. */
import type { SmsProvider } from '../../providers/types.js';

export interface ProviderRouter {
  resolve(providerName: string | null | undefined): { ok: true; provider: SmsProvider } | { ok: false; error: string };
  byName(name: string): SmsProvider | undefined;
  all(): SmsProvider[];
}

export function createProviderRouter(
  providers: Array<{ provider: SmsProvider; aliases: readonly string[] }>,
  defaultProvider: string | undefined,
): ProviderRouter {
  const byKey = new Map<string, SmsProvider>();
  for (const { provider, aliases } of providers) {
    for (const name of [provider.name, ...aliases]) byKey.set(name.toLowerCase(), provider);
  }
  const configured = providers.map((p) => [p.provider.name, ...p.aliases].join('/')).join(', ');
  return {
    resolve(providerName) {
      const name = providerName?.trim() || defaultProvider;
      if (!name) return { ok: false, error: `provider_name: is required (configured: ${configured})` };
      const provider = byKey.get(name.toLowerCase());
      if (!provider) return { ok: false, error: `provider_name: ${JSON.stringify(name)} is not configured (configured: ${configured})` };
      return { ok: true, provider };
    },
    byName: (name) => providers.find((p) => p.provider.name === name)?.provider,
    all: () => providers.map((p) => p.provider),
  };
}
