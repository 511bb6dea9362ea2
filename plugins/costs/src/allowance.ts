import type { CostsContext } from './context.ts';
import { monthKey } from './periods.ts';
import { HARD_STOP_REASON, POLICY_AMOUNT } from './policies.ts';

type ScopeType = 'company' | 'agent' | 'project';

/** What keeps an agent from working although no budget stops it: its own pause or its company's. */
export interface Pause { scopeType: 'company' | 'agent'; scopeId: string; reason: string }

/**
 * What a caller about to spend on an agent's behalf (the model gateway, before it forwards a
 * call) needs beyond the open hard stops:
 * - `remainingCents`: the least headroom (amount minus the spend observed in the policy's
 *   current window, never below 0) over the active hard-stop policies of the company, the agent
 *   and the project; null when no such policy applies. Read from the running totals, one row
 *   per policy, as the budget checks of cost events do.
 * - `paused`: the company's pause first (a paused company stops all its agents), then the
 *   agent's, whatever placed it; null when neither is paused.
 */
export async function budgetAllowance(ctx: CostsContext, agentId: string, projectId: string | null, blocks: Promise<Array<{ scopeType: ScopeType }>>): Promise<{ remainingCents: number | null; paused: Pause | null }> {
  const companyId = ctx.invocation.companyId!;
  // The remaining budget, the company and the agent are read at once.
  const paused = pauseOf(ctx, companyId, agentId, blocks);
  const { rows } = await ctx.db.query(
    `select min(greatest(b.amount - coalesce(s.cost_cents, 0), 0))::bigint as remaining
       from budget_policies p
       cross join lateral (select ${POLICY_AMOUNT} as amount) b
       left join spend_totals s on s.company_id = p.company_id and s.scope_type = p.scope_type and s.scope_id = p.scope_id
                               and s.period = case when p.window_kind = 'lifetime' then 'lifetime' else $4 end
      where p.company_id = $1 and p.is_active and p.hard_stop_enabled and b.amount > 0
        and ((p.scope_type = 'company' and p.scope_id = $1) or (p.scope_type = 'agent' and p.scope_id = $2) or (p.scope_type = 'project' and p.scope_id = $3))`,
    [companyId, agentId, projectId, monthKey(new Date())]);
  const remaining = rows[0]?.remaining;
  return { remainingCents: remaining === null || remaining === undefined ? null : Number(remaining), paused: await paused };
}

async function pauseOf(ctx: CostsContext, companyId: string, agentId: string, stops: Promise<Array<{ scopeType: ScopeType }>>): Promise<Pause | null> {
  // Another company's agent is no agent of this call's company: nothing to say about it.
  const agentRead = ctx.agents.get(agentId).catch((error: { code?: string }) => { if (error.code === 'cross_company_denied') return null; throw error; });
  agentRead.catch(() => undefined);
  const company = await ctx.companies.get(companyId);
  if (company && company.status !== 'active') {
    // The company view names no pause reason: a pause is this plugin's when its hard stop is open.
    const reason = company.status === 'archived' ? 'company_archived'
      : typeof company.pauseReason === 'string' ? company.pauseReason
        : (await stops).some((block) => block.scopeType === 'company') ? HARD_STOP_REASON : 'manual';
    return { scopeType: 'company', scopeId: companyId, reason };
  }
  const agent = await agentRead;
  if (agent?.status === 'paused') {
    return { scopeType: 'agent', scopeId: agentId, reason: typeof agent.pauseReason === 'string' ? agent.pauseReason : 'manual' };
  }
  return null;
}
