import type { GatewayContext } from './context.ts';

/**
 * The `route-for` service, for the adapters: which provider of the calling company serves an
 * agent's tool of a kind: the provider the agent's configuration names (`providerName`), or
 * the company's default of that kind; null for `none` and when there is none.
 */
export async function routeForService(input: unknown, ctx: GatewayContext) {
  const { kind, providerName } = input as { agentId: string; kind: string; providerName?: string };
  if (providerName === 'none') return null;
  const { rows } = providerName === undefined
    ? await ctx.db.query('select id::text as id, kind from providers where company_id = $1 and kind = $2 and is_default', [ctx.invocation.companyId, kind])
    : await ctx.db.query('select id::text as id, kind from providers where company_id = $1 and name = $2', [ctx.invocation.companyId, providerName]);
  const row = rows[0];
  return row ? { providerId: String(row.id), kind: String(row.kind), path: `/api/llm/${String(row.id)}` } : null;
}
