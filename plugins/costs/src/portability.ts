import { PluginError } from '@keel/sdk/plugin';
import type { CostsContext } from './context.ts';
import { POLICY_ROW, upsertPolicy, type ScopeType } from './policies.ts';

/**
 * The costs plugin's part of a company package (manifest `portability`): the budget policies
 * (spend, incidents and cost events are history and stay behind). A policy's scope is the
 * company, an agent (mapped by the kernel's `ids.agents`) or a project (mapped by the work
 * part's `ids['work.projects']`, which is why this part comes after it). Only the kernel may
 * call these services.
 */
interface PolicyData { scopeType: ScopeType; scopeId: string; metric: string; windowKind: string; amount: number; warnPercent: number; hardStopEnabled: boolean; notifyEnabled: boolean; isActive: boolean }
interface ImportInput { mode: 'preview' | 'apply'; strategy: 'rename' | 'skip' | 'replace'; data: { policies?: PolicyData[] }; ids: Record<string, Record<string, string | null>> }

function kernelOnly(ctx: CostsContext): void {
  if (ctx.invocation.caller?.plugin !== 'kernel') throw new PluginError(403, 'kernel_only', 'Only the kernel imports and exports company packages');
}

export async function exportCompany(_input: unknown, ctx: CostsContext) {
  kernelOnly(ctx);
  const { rows } = await ctx.db.query(`select ${POLICY_ROW} from budget_policies p where company_id = $1 order by created_at, id`, [ctx.invocation.companyId]);
  const policies: PolicyData[] = rows.map((row) => ({
    scopeType: row.scope_type as ScopeType, scopeId: String(row.scope_id), metric: String(row.metric), windowKind: String(row.window_kind),
    amount: Number(row.budget), warnPercent: Number(row.warn_percent), hardStopEnabled: row.hard_stop_enabled === true,
    notifyEnabled: row.notify_enabled === true, isActive: row.is_active === true,
  }));
  return { data: { policies }, files: {} };
}

export async function importCompany(input: unknown, ctx: CostsContext) {
  kernelOnly(ctx);
  const { mode, strategy, data, ids } = input as ImportInput;
  const companyId = ctx.invocation.companyId ?? null;
  if (data.policies !== undefined && !Array.isArray(data.policies)) throw new PluginError(422, 'invalid_package', "The costs part's policies must be a list");
  const plan = [];
  let written = 0;
  for (const policy of data.policies ?? []) {
    const key = `${policy.scopeType}:${policy.scopeId}:${policy.windowKind}`;
    const name = `${policy.scopeType} budget (${policy.windowKind})`;
    const mapped = policy.scopeType === 'company' ? companyId ?? 'new'
      : policy.scopeType === 'agent' ? ids.agents?.[policy.scopeId] : ids['work.projects']?.[policy.scopeId];
    if (mapped === undefined) {
      plan.push({ kind: 'budget_policy', key, name, action: 'skip' as const, reason: `its ${policy.scopeType} is not in the package` });
      continue;
    }
    const existing = mapped && companyId && mapped !== 'new' ? (await ctx.db.query(
      'select id from budget_policies where company_id = $1 and scope_type = $2 and scope_id = $3 and metric = $4 and window_kind = $5',
      [companyId, policy.scopeType, mapped, policy.metric, policy.windowKind])).rows[0] : undefined;
    const action = !existing ? 'create' as const : strategy === 'replace' ? 'update' as const : 'skip' as const;
    plan.push({ kind: 'budget_policy', key, name, action, ...(action === 'skip' ? { reason: 'a policy of this scope and window exists' } : {}) });
    // A company's or agent's monthly budget arrives with the kernel's part of the package
    // (budgetMonthlyCents), its one place: such a policy stores none of its own (upsertPolicy).
    if (mode === 'apply' && action !== 'skip') {
      await upsertPolicy(ctx.db, companyId!, {
        scopeType: policy.scopeType, scopeId: mapped!, amount: policy.amount, metric: policy.metric, windowKind: policy.windowKind,
        warnPercent: policy.warnPercent, hardStopEnabled: policy.hardStopEnabled, notifyEnabled: policy.notifyEnabled, isActive: policy.isActive,
      });
      written += 1;
    }
  }
  if (mode === 'apply' && written > 0) {
    await ctx.activity.record({ action: 'budget.policies_imported', entityType: 'company', entityId: companyId!, details: { policies: written } });
  }
  return { plan };
}
