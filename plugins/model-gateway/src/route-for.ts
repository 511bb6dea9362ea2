import { PluginError } from '@keel/sdk/plugin';
import type { GatewayContext } from './context.ts';

/**
 * The `route-for` service, for the adapters: which provider of the calling company serves an
 * agent's tool of a kind: the provider the agent's configuration names (`providerName`), or
 * the company's default of that kind; null for `none` and when the company has no default.
 * A name that matches no provider of the company, or one of another kind, is refused: the
 * board meant the gateway to serve the agent, and a run must not quietly fall back to the
 * tool's own credentials (unmetered) because of a typo or a deleted provider.
 */
export async function routeForService(input: unknown, ctx: GatewayContext) {
  const { kind, providerName } = input as { agentId: string; kind: string; providerName?: string };
  if (providerName === 'none') return null;
  const { rows } = providerName === undefined
    ? await ctx.db.query('select id::text as id, kind from providers where company_id = $1 and kind = $2 and is_default', [ctx.invocation.companyId, kind])
    : await ctx.db.query('select id::text as id, kind from providers where company_id = $1 and name = $2', [ctx.invocation.companyId, providerName]);
  const row = rows[0];
  if (providerName !== undefined && !row) {
    throw new PluginError(422, 'model_provider_not_found', `adapterConfig.modelProvider: the company has no model provider named "${providerName}" (name one of its providers, or "none" for the tool's own credentials)`, { field: 'adapterConfig.modelProvider' });
  }
  if (row && String(row.kind) !== kind) {
    throw new PluginError(422, 'model_provider_kind_mismatch', `adapterConfig.modelProvider: "${providerName}" is a ${String(row.kind)} provider, and this tool speaks ${kind}`, { field: 'adapterConfig.modelProvider' });
  }
  return row ? { providerId: String(row.id), kind: String(row.kind), path: `/api/llm/${String(row.id)}` } : null;
}
