import type { ModelPrice } from '@keel/sdk/plugin';
import type { Kind, Row } from './context.ts';

/** A provider as stored (plugin_model_gateway.providers). */
export interface ProviderRow {
  id: string;
  company_id: string;
  name: string;
  kind: Kind;
  base_url: string;
  api_key_secret_id: string | null;
  api_key_version: number | null;
  models: ModelPrice[];
  allow_unpriced_models: boolean;
  is_default: boolean;
  last_test: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

export const PROVIDER_COLUMNS = `id::text as id, company_id::text as company_id, name, kind, base_url, api_key_secret_id::text as api_key_secret_id,
  api_key_version, models, allow_unpriced_models, is_default, last_test, created_at, updated_at`;

export const asProvider = (row: Row): ProviderRow => row as unknown as ProviderRow;

/**
 * A provider as the API answers it. The key is never here: `apiKey` is the reference to its
 * secret in the company's vault, as a plain key sent to the API was replaced by (the same
 * `{type: 'secret_ref', secretId, version?}` a request may send), and `apiKeySecretId` /
 * `apiKeyVersion` name it flat (`apiKeyVersion` null follows the latest version).
 */
export function providerJson(row: ProviderRow) {
  return {
    id: row.id,
    companyId: row.company_id,
    name: row.name,
    kind: row.kind,
    baseUrl: row.base_url,
    apiKey: row.api_key_secret_id ? { type: 'secret_ref', secretId: row.api_key_secret_id, ...(row.api_key_version === null ? {} : { version: row.api_key_version }) } : null,
    apiKeySecretId: row.api_key_secret_id,
    apiKeyVersion: row.api_key_version,
    models: row.models,
    allowUnpricedModels: row.allow_unpriced_models,
    isDefault: row.is_default,
    lastTest: row.last_test,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
