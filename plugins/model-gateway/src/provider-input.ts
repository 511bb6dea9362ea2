import { PluginError, type ModelPrice } from '@keel/sdk/plugin';
import { isObject, type GatewayContext } from './context.ts';

/** The key of a create or patch body: a plain value, or a reference to a secret of the company. */
export type ApiKeyInput = string | { type: 'secret_ref'; secretId: string; version?: number | 'latest' };

/** Where a provider's key is: a secret of the company's vault, a pinned version or the latest (null: only for a reference the board gave without a version). */
export interface KeyReference { secretId: string; version: number | null }

const refusal = (code: string, field: string, message: string) =>
  new PluginError(422, code, message, { field }, { issues: [{ path: field, message }] });

/**
 * The base URL as stored: no trailing slash (the gateway appends the provider's own paths). The
 * kernel's rule for proxy targets decides (https, or a host the operator lists in
 * llm.privateNetworkHosts; no credentials, query or fragment; no private address unless listed).
 */
export async function checkedBaseUrl(ctx: GatewayContext, value: string): Promise<string> {
  const trimmed = value.trim().replace(/\/+$/, '');
  const verdict = await ctx.http.checkProxyTarget(trimmed);
  if (!verdict.ok) throw refusal('invalid_base_url', 'baseUrl', `baseUrl is refused: ${verdict.reason ?? 'not a usable provider address'}`);
  return trimmed;
}

/** The price table: the schema checked each entry; here, one entry per model name. */
export function checkedModels(models: ModelPrice[]): ModelPrice[] {
  const seen = new Set<string>();
  return models.map((entry, index) => {
    if (seen.has(entry.model)) throw refusal('duplicate_model_price', `models.${index}.model`, `models.${index}.model: "${entry.model}" is priced twice`);
    seen.add(entry.model);
    return {
      model: entry.model, inputCentsPerMTok: entry.inputCentsPerMTok, cachedInputCentsPerMTok: entry.cachedInputCentsPerMTok,
      cacheWriteCentsPerMTok: entry.cacheWriteCentsPerMTok, outputCentsPerMTok: entry.outputCentsPerMTok,
    };
  });
}

/**
 * A secret reference must name a secret of the provider's company (another company's secret
 * and an unknown one are refused alike) and, when pinned, one of its versions.
 */
export async function checkedReference(ctx: GatewayContext, key: Exclude<ApiKeyInput, string>): Promise<KeyReference> {
  const secret = await ctx.secrets.describe(key.secretId);
  if (!secret) throw refusal('secret_not_found', 'apiKey.secretId', 'apiKey.secretId names no secret of this company');
  const version = typeof key.version === 'number' ? key.version : null;
  if (version !== null && version > secret.latestVersion) {
    throw refusal('secret_version_not_found', 'apiKey.version', `apiKey.version: the secret has no version ${version}`);
  }
  return { secretId: secret.secretId, version };
}

/**
 * A plain key goes into the company's vault as the provider's own secret (a new version when it
 * had one) and only the reference is kept. Called after every check of the handler, so that a
 * refused request stores nothing, and before the handler writes activity (the vault writes its
 * own entry, in its own transaction).
 */
export async function storedKey(ctx: GatewayContext, providerId: string, providerName: string, value: string): Promise<KeyReference> {
  if (value.trim().length === 0) throw refusal('invalid_api_key', 'apiKey', 'apiKey must not be blank');
  const stored = await ctx.secrets.store({ name: `provider/${providerId}`, value, description: `API key of model provider "${providerName}"` });
  // Pinned to the version just written: a later key is a new version, and the provider follows it when it is patched.
  return { secretId: stored.secretId, version: stored.version };
}

export const isReference = (value: unknown): value is Exclude<ApiKeyInput, string> => isObject(value) && value.type === 'secret_ref';
