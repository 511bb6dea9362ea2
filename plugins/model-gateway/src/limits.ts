import type { RouteRequest } from '@keel/sdk/plugin';
import type { GatewayContext } from './context.ts';

export interface Limits { callsPerMinute: number | null; tokensPerMinute: number | null }

export async function limitsOf(ctx: GatewayContext, companyId: string): Promise<Limits> {
  const { rows } = await ctx.db.query('select calls_per_minute, tokens_per_minute from limits where company_id = $1', [companyId]);
  const row = rows[0];
  return {
    callsPerMinute: row?.calls_per_minute === null || row?.calls_per_minute === undefined ? null : Number(row.calls_per_minute),
    tokensPerMinute: row?.tokens_per_minute === null || row?.tokens_per_minute === undefined ? null : Number(row.tokens_per_minute),
  };
}

export async function getLimits(request: RouteRequest, ctx: GatewayContext): Promise<Limits> {
  return limitsOf(ctx, request.companyId!);
}

export async function putLimits(request: RouteRequest, ctx: GatewayContext): Promise<Limits> {
  const body = request.body as Limits;
  const before = await limitsOf(ctx, request.companyId!);
  await ctx.db.query(
    `insert into limits (company_id, calls_per_minute, tokens_per_minute) values ($1, $2, $3)
     on conflict (company_id) do update set calls_per_minute = excluded.calls_per_minute, tokens_per_minute = excluded.tokens_per_minute, updated_at = now()`,
    [request.companyId, body.callsPerMinute, body.tokensPerMinute]);
  const after = { callsPerMinute: body.callsPerMinute, tokensPerMinute: body.tokensPerMinute };
  await ctx.activity.record({ action: 'model_gateway.limits_updated', entityType: 'company', entityId: request.companyId!, details: { before, after } });
  return after;
}
