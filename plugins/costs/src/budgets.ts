import type { CostsContext } from './context.ts';
import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { incidentJson, policyJson } from './json.ts';
import { monthKey, monthStart } from './periods.ts';
import { spendBy } from './spend-reads.ts';
import { measures } from './spend-source.ts';
import { actOnIncidents, announceProjectStop, HARD_STOP_REASON, observedSpend, openIncidents, syncMonthlyPolicy, upsertPolicy, type PolicyInput } from './policies.ts';

type Row = Record<string, unknown>;

/**
 * A changed budget is evaluated at once: lowered below what the window has already spent, it
 * opens its incidents (and hard stop) now rather than at the next cost event.
 */
async function evaluateNow(ctx: CostsContext, policy: Row): Promise<Array<Record<string, unknown>>> {
  const incidents = await openIncidents(ctx.db, [{ companyId: String(policy.company_id), scopeType: policy.scope_type as never, scopeId: String(policy.scope_id) }], new Date());
  await actOnIncidents(ctx, incidents);
  return incidents;
}

async function setMonthlyBudget(ctx: CostsContext, companyId: string, scopeType: 'company' | 'agent', scopeId: string, cents: number) {
  await ctx.budgets.setMonthlyBudget(scopeType === 'company' ? { scope: 'company', cents } : { scope: 'agent', agentId: scopeId, cents });
  const policy = await syncMonthlyPolicy(ctx.db, companyId, scopeType, scopeId, cents);
  await ctx.activity.record({ action: 'budget.updated', entityType: scopeType, entityId: scopeId, details: { budgetMonthlyCents: cents, policyId: policy?.id ?? null } });
  if (policy) await evaluateNow(ctx, policy);
  return { scopeType, scopeId, budgetMonthlyCents: cents, policy: policy ? policyJson(policy) : null };
}

export function companyBudget(req: RouteRequest, ctx: CostsContext) {
  const { budgetMonthlyCents } = req.body as { budgetMonthlyCents: number };
  return setMonthlyBudget(ctx, req.companyId!, 'company', req.companyId!, budgetMonthlyCents);
}

export function agentBudget(req: RouteRequest, ctx: CostsContext) {
  const { budgetMonthlyCents } = req.body as { budgetMonthlyCents: number };
  return setMonthlyBudget(ctx, req.companyId!, 'agent', req.params.agentId!, budgetMonthlyCents);
}

/** Projects are the work plugin's: a project policy names one of the company's projects. */
async function assertProjectExists(ctx: CostsContext, projectId: string): Promise<void> {
  const missing = (why: string) => new PluginError(404, 'project_not_found', `scopeId: no project with this id belongs to the company${why}`);
  let found: { exists: boolean };
  try {
    found = await ctx.services.call<{ exists: boolean }>('work', 'project', { projectId });
  } catch (error) {
    // Without the work plugin there are no projects.
    if ((error as PluginError).code === 'service_unavailable') throw missing(' (the work plugin is not enabled)');
    throw error;
  }
  if (!found.exists) throw missing('');
}

export async function upsertPolicyRoute(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const body = req.body as PolicyInput & { scopeId?: string | null };
  let scopeId = body.scopeId ?? null;
  if (body.scopeType === 'company') {
    if (scopeId && scopeId.toLowerCase() !== companyId) throw new PluginError(422, 'invalid_scope', 'scopeId of a company policy must be the company itself');
    scopeId = companyId;
  } else if (!scopeId) {
    throw new PluginError(400, 'validation_failed', `scopeId is required for a ${body.scopeType} policy`);
  } else if (body.scopeType === 'agent') {
    scopeId = scopeId.toLowerCase();
    const agent = await ctx.agents.get(scopeId).catch((error: PluginError) => { if (error.code === 'cross_company_denied') return null; throw error; });
    if (!agent) throw new PluginError(404, 'agent_not_found', 'scopeId: no agent with this id belongs to the company');
  } else if (body.scopeType === 'project') {
    scopeId = scopeId.toLowerCase();
    await assertProjectExists(ctx, scopeId);
  }
  const { row, created } = await upsertPolicy(ctx.db, companyId, { ...body, scopeId: scopeId.toLowerCase() });
  // The monthly billed-cents policy of a company or agent is its budgetMonthlyCents.
  if (row.metric === 'billed_cents' && row.window_kind === 'calendar_month_utc' && (row.scope_type === 'company' || row.scope_type === 'agent')) {
    await ctx.budgets.setMonthlyBudget(row.scope_type === 'company' ? { scope: 'company', cents: Number(row.amount) } : { scope: 'agent', agentId: String(row.scope_id), cents: Number(row.amount) });
  }
  await ctx.activity.record({ action: created ? 'budget.policy_created' : 'budget.policy_updated', entityType: 'budget_policy', entityId: String(row.id), details: policyJson(row) });
  await evaluateNow(ctx, row);
  return respond(created ? 201 : 200, policyJson(row));
}

export async function overview(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const now = new Date();
  const { rows: policies } = await ctx.db.query(
    `select p.*, coalesce(s.cost_cents, 0) as observed
       from budget_policies p
       left join spend_totals s on s.company_id = p.company_id and s.scope_type = p.scope_type and s.scope_id = p.scope_id
                               and s.period = case when p.window_kind = 'lifetime' then 'lifetime' else $2 end
      where p.company_id = $1 order by p.created_at, p.id`, [companyId, monthKey(now)]);
  const { rows: incidents } = await ctx.db.query(`select * from budget_incidents where company_id = $1 and status = 'open' order by created_at desc, id`, [companyId]);
  const agents = await ctx.agents.list();
  // Approvals waiting for the board's decision (a hire, among others); one sent back for revision waits for its requester.
  const pendingApprovalCount = await ctx.approvals.count({ status: 'pending' });
  const pausedProjects = new Set(incidents.filter((i) => i.scope_type === 'project' && i.threshold_type === 'hard').map((i) => String(i.scope_id)));
  // The company's spend this month per source: what Keel measured (gateway) apart from what was reported to it.
  const monthBySource = await spendBy(ctx, companyId, { from: monthStart(now), to: null }, ['source']);
  return {
    companyId,
    policies: policies.map((p) => {
      const observed = Number(p.observed);
      const amount = Number(p.amount);
      return { ...policyJson(p), observedAmount: observed, remainingAmount: Math.max(amount - observed, 0), utilizationPercent: amount > 0 ? Math.round((observed / amount) * 10_000) / 100 : 0 };
    }),
    activeIncidents: incidents.map(incidentJson),
    pausedAgentCount: agents.filter((agent) => agent.status === 'paused').length,
    pausedProjectCount: pausedProjects.size,
    pendingApprovalCount,
    monthSpendBySource: monthBySource.map((row) => ({ source: row.source, ...measures(row) })),
  };
}

export async function resolveIncident(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const incidentId = req.params.incidentId ?? '';
  const body = req.body as { action: 'keep_paused' | 'raise_budget_and_resume'; amount?: number; note?: string };
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(incidentId)) throw new PluginError(404, 'incident_not_found', 'Budget incident not found');
  const { rows } = await ctx.db.query('select * from budget_incidents where id = $1 and company_id = $2 for no key update', [incidentId.toLowerCase(), companyId]);
  const incident = rows[0];
  if (!incident) throw new PluginError(404, 'incident_not_found', 'Budget incident not found');
  if (incident.status !== 'open') throw new PluginError(409, 'incident_not_open', `This incident is already ${incident.status}`);
  // NO KEY UPDATE: cost events opening incidents meanwhile take KEY SHARE on the policy (the
  // foreign key) while holding the agent's row, which this resolve updates too; FOR UPDATE
  // would make the two wait on each other.
  const { rows: policyRows } = await ctx.db.query('select * from budget_policies where id = $1 for no key update', [incident.policy_id]);
  const policy = policyRows[0]!;
  let resumed = false;
  if (body.action === 'raise_budget_and_resume') {
    if (body.amount === undefined) throw new PluginError(400, 'validation_failed', 'amount (the new budget in cents) is required to raise the budget');
    const observed = await observedSpend(ctx.db, policy, new Date());
    if (body.amount <= observed) {
      throw new PluginError(422, 'budget_not_above_spend', `The new budget (${body.amount}) must be greater than the spend already observed in this window (${observed})`);
    }
    const { rows: updated } = await ctx.db.query('update budget_policies set amount = $2, revision = revision + 1, updated_at = now() where id = $1 returning *', [policy.id, body.amount]);
    if (policy.metric === 'billed_cents' && policy.window_kind === 'calendar_month_utc' && (policy.scope_type === 'company' || policy.scope_type === 'agent')) {
      await ctx.budgets.setMonthlyBudget(policy.scope_type === 'company' ? { scope: 'company', cents: body.amount } : { scope: 'agent', agentId: String(policy.scope_id), cents: body.amount });
    }
    if (policy.scope_type === 'company') resumed = (await ctx.companies.resume(HARD_STOP_REASON)).changed;
    else if (policy.scope_type === 'agent') resumed = (await ctx.agents.resume(String(policy.scope_id), HARD_STOP_REASON)).changed;
    else {
      await announceProjectStop(ctx, String(policy.scope_id), false, String(incident.id));
      resumed = true;
    }
    Object.assign(policy, updated[0]);
  }
  // Raising the budget settles every open incident of the policy's window; keeping the scope paused settles this one.
  const { rows: resolved } = await ctx.db.query(
    `update budget_incidents set status = 'resolved', resolution = $3, resolution_note = $4, resolved_at = now()
      where status = 'open' and (id = $1 or ($3 = 'raise_budget_and_resume' and policy_id = $2
                                             and window_start = (select window_start from budget_incidents where id = $1)))
      returning *`, [incident.id, policy.id, body.action, body.note ?? null]);
  const own = resolved.find((row) => row.id === incident.id)!;
  await ctx.activity.record({
    action: 'budget.incident_resolved', entityType: 'budget_incident', entityId: String(incident.id),
    details: { resolution: body.action, amount: body.amount ?? null, resumed, scopeType: incident.scope_type, scopeId: incident.scope_id },
  });
  return { ...incidentJson(own), policy: policyJson(policy), resumed };
}

/**
 * Durable subscribers (company.created/updated, agent.created/updated), awaited: a company or
 * agent created or changed with a monthly budget gets (or updates) its policy after the kernel
 * commits and before the kernel's route answers. They run at least once, in commit order per company or agent, so a
 * redelivery writes the same policy again (an upsert: idempotent by construction). Budgets set
 * through the plugin's own routes sync the policy in the same transaction, at once.
 */
export async function onCompanyChanged(payload: Record<string, unknown>, ctx: CostsContext): Promise<void> {
  const company = payload.company as { id?: string; budgetMonthlyCents?: number } | undefined;
  const companyId = String(payload.companyId ?? company?.id ?? '');
  if (!company || !companyId || typeof company.budgetMonthlyCents !== 'number') return;
  await syncMonthlyPolicy(ctx.db, companyId, 'company', companyId, company.budgetMonthlyCents, ctx.invocation.event?.occurredAt ?? null);
}

export async function onAgentChanged(payload: Record<string, unknown>, ctx: CostsContext): Promise<void> {
  const agent = payload.agent as { id?: string; budgetMonthlyCents?: number } | undefined;
  const companyId = String(payload.companyId ?? '');
  if (!agent?.id || !companyId || typeof agent.budgetMonthlyCents !== 'number') return;
  // A budget set through this plugin's route after the agent changed, but before this event
  // arrived, is newer than the event's value: it is not set back.
  await syncMonthlyPolicy(ctx.db, companyId, 'agent', agent.id, agent.budgetMonthlyCents, ctx.invocation.event?.occurredAt ?? null);
}

/** A deleted company's cost data goes with it. */
export async function onCompanyDeleted(payload: Record<string, unknown>, ctx: CostsContext): Promise<void> {
  const companyId = String(payload.companyId ?? '');
  if (!companyId) return;
  for (const table of ['budget_incidents', 'budget_policies', 'spend_totals', 'cost_rollups', 'cost_rollups_daily', 'cost_events', 'finance_events', 'idempotency_keys']) {
    await ctx.db.query(`delete from ${table} where company_id = $1`, [companyId]);
  }
}

/**
 * The `open-incidents` service: the calling company's open budget incidents (soft and hard),
 * newest first, as the budget overview answers them. The board user's inbox lists them.
 */
export async function openIncidentsService(_input: unknown, ctx: CostsContext) {
  const { rows } = await ctx.db.query(
    `select * from budget_incidents where company_id = $1 and status = 'open' order by created_at desc, id limit 200`, [ctx.invocation.companyId]);
  return { incidents: rows.map(incidentJson) };
}
