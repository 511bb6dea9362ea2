import type { EnvironmentsContext } from './context.ts';

/** A deleted company's environments, leases and execution workspaces go with it (idempotent: deliveries come at least once). */
export async function onCompanyDeleted(payload: Record<string, unknown>, ctx: EnvironmentsContext): Promise<void> {
  const companyId = String(payload.companyId ?? '');
  if (!companyId) return;
  for (const table of ['workspace_operations', 'workspace_runtime_services', 'environment_leases', 'execution_workspaces', 'environments']) {
    await ctx.db.query(`delete from ${table} where company_id = $1`, [companyId]);
  }
}
