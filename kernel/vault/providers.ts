import { KeelError } from '../http/errors.ts';

/**
 * Secret providers. `local_encrypted` stores values encrypted in the kernel's database.
 * The external providers are listed so that operators see what a deployment can be
 * configured for; until configured they refuse create and resolve with a clear 422.
 */
export interface ProviderDescriptor {
  id: string;
  label: string;
  requiresExternalRef: boolean;
  configured: boolean;
}

export const LOCAL_ENCRYPTED = 'local_encrypted';

export const PROVIDERS: readonly ProviderDescriptor[] = [
  { id: LOCAL_ENCRYPTED, label: 'Local encrypted (kernel database, AES-256-GCM)', requiresExternalRef: false, configured: true },
  { id: 'external_vault', label: 'External secrets vault', requiresExternalRef: true, configured: false },
  { id: 'cloud_secret_manager', label: 'Cloud secret manager', requiresExternalRef: true, configured: false },
];

export function usableProvider(id: string): ProviderDescriptor {
  const provider = PROVIDERS.find((p) => p.id === id);
  if (!provider) {
    throw new KeelError(422, 'unknown_secret_provider', `Unknown secret provider "${id}"; known providers: ${PROVIDERS.map((p) => p.id).join(', ')}`);
  }
  if (!provider.configured) {
    throw new KeelError(422, 'secret_provider_not_configured', `Secret provider "${id}" is not configured on this instance`);
  }
  return provider;
}
