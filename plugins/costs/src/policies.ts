import type { CostsContext } from './context.ts';
import { costsEvents, type DatabaseCapability } from '@keel/sdk/plugin';
import { monthKey, monthStart, nextMonthStart } from './periods.ts';

export type ScopeType = 'company' | 'agent' | 'project';
export interface Scope { companyId: string; scopeType: ScopeType; scopeId: string }

/** The pause reason of a hard stop; a resume lifts only a pause made with it. */
export const HARD_STOP_REASON = 'budget_hard_stop';

export const POLICY_DEFAULTS = { metric: 'billed_cents', warnPercent: 80, hardStopEnabled: true, notifyEnabled: true, isActive: true } as const;
export const defaultWindowKind = (scopeType: ScopeType) => (scopeType === 'project' ? 'lifetime' : 'calendar_month_utc');

export interface PolicyInput {
  scopeType: ScopeType; scopeId: string; amount: number; metric?: string; windowKind?: string;
  warnPercent?: number; hardStopEnabled?: boolean; notifyEnabled?: boolean; isActive?: boolean;
}

/**
 * Creates the policy of a scope or updates it. Fields left out keep their stored value on an
 * update and take the documented defaults on a create.
 */
export async function upsertPolicy(db: DatabaseCapability, companyId: string, input: PolicyInput): Promise<{ row: Record<string, unknown>; created: boolean }> {
  const written = await writePolicy(db, companyId, input);
  return { row: written.row!, created: written.created };
}

/** upsertPolicy, unless the policy changed after `unlessChangedAfter` (then nothing is written and `row` is null). */
async function writePolicy(db: DatabaseCapability, companyId: string, input: PolicyInput & { unlessChangedAfter?: string | null }): Promise<{ row: Record<string, unknown> | null; created: boolean }> {
  const { rows } = await db.query(
    `insert into budget_policies as p (company_id, scope_type, scope_id, metric, window_kind, amount, warn_percent, hard_stop_enabled, notify_enabled, is_active)
     values ($1, $2, $3, $4, $5, $6, coalesce($7, ${POLICY_DEFAULTS.warnPercent}), coalesce($8, true), coalesce($9, true), coalesce($10, true))
     on conflict (company_id, scope_type, scope_id, metric, window_kind) do update
       set revision = p.revision + case when (p.amount, p.warn_percent, p.hard_stop_enabled, p.notify_enabled, p.is_active)
                                             is distinct from (excluded.amount, coalesce($7, p.warn_percent), coalesce($8, p.hard_stop_enabled),
                                                               coalesce($9, p.notify_enabled), coalesce($10, p.is_active)) then 1 else 0 end,
           amount = excluded.amount,
           warn_percent = coalesce($7, p.warn_percent),
           hard_stop_enabled = coalesce($8, p.hard_stop_enabled),
           notify_enabled = coalesce($9, p.notify_enabled),
           is_active = coalesce($10, p.is_active),
           updated_at = now()
       where $11::timestamptz is null or p.updated_at <= $11::timestamptz
     returning p.*, (xmax = 0) as created`,
    [companyId, input.scopeType, input.scopeId, input.metric ?? POLICY_DEFAULTS.metric, input.windowKind ?? defaultWindowKind(input.scopeType),
      input.amount, input.warnPercent ?? null, input.hardStopEnabled ?? null, input.notifyEnabled ?? null, input.isActive ?? null, input.unlessChangedAfter ?? null]);
  const row = rows[0];
  // Left as it was: changed after the moment the caller's value is from (unlessChangedAfter).
  if (!row) return { row: null, created: false };
  return { row, created: row.created === true };
}

/**
 * The monthly policy of a company or agent follows its `budgetMonthlyCents`: created when the
 * budget becomes positive, updated when it changes. A budget of 0 with no policy creates none.
 * `unlessChangedAfter`: the moment the value is from (an event's); a policy changed since keeps
 * its newer amount, so a late event never sets back a budget written after it.
 */
export async function syncMonthlyPolicy(db: DatabaseCapability, companyId: string, scopeType: 'company' | 'agent', scopeId: string, cents: number, unlessChangedAfter: string | null = null): Promise<Record<string, unknown> | null> {
  if (!(cents > 0)) {
    const { rows } = await db.query(
      `update budget_policies set amount = $4, revision = revision + 1, updated_at = now()
        where company_id = $1 and scope_type = $2 and scope_id = $3 and metric = 'billed_cents' and window_kind = 'calendar_month_utc' and amount <> $4
          and ($5::timestamptz is null or updated_at <= $5::timestamptz)
        returning *`, [companyId, scopeType, scopeId, 0, unlessChangedAfter]);
    return rows[0] ?? null;
  }
  return (await writePolicy(db, companyId, { scopeType, scopeId, amount: cents, unlessChangedAfter })).row;
}

/**
 * The part of a statement that opens the incidents the current totals call for, for every
 * active policy of the touched scopes (CTE `touched`: company_id, scope_type, scope_id): soft
 * at the warn threshold (notifications on), hard at 100% (hard stop on). The unique key
 * (policy, window, threshold, policy revision) makes each fire at most once per window until
 * the budget changes, whichever concurrent transaction gets there first. `observed` is the SQL
 * of a scope's total in the policy's period, given `p` (the policy) and `period` (its period
 * key). Parameters: $2 the current month key, $3 and $4 the month's start and end.
 */
export function incidentsSql(observed: string): string {
  return `candidates as (
       select p.id as policy_id, p.revision, p.company_id, p.scope_type, p.scope_id, p.metric, p.window_kind, p.amount, p.warn_percent,
              p.hard_stop_enabled, p.notify_enabled, ${observed} as observed,
              case when p.window_kind = 'lifetime' then '-infinity'::timestamptz else $3::timestamptz end as window_start,
              case when p.window_kind = 'lifetime' then null else $4::timestamptz end as window_end
         from budget_policies p
         join (select distinct company_id, scope_type, scope_id from touched) t on t.company_id = p.company_id and t.scope_type = p.scope_type and t.scope_id = p.scope_id
         cross join lateral (select case when p.window_kind = 'lifetime' then 'lifetime' else $2 end as period) w
        where p.is_active and p.amount > 0
     ),
     crossed as (
       select c.*, 'soft' as threshold_type from candidates c where c.notify_enabled and c.observed * 100 >= c.amount * c.warn_percent
       union all
       select c.*, 'hard' as threshold_type from candidates c where c.hard_stop_enabled and c.observed >= c.amount
     ),
     incidents as (
       insert into budget_incidents (company_id, policy_id, policy_revision, scope_type, scope_id, metric, window_kind, window_start, window_end, threshold_type, amount_limit, amount_observed)
       select company_id, policy_id, revision, scope_type, scope_id, metric, window_kind, window_start, window_end, threshold_type, amount, observed
         from crossed order by policy_id, threshold_type
       on conflict (policy_id, window_start, threshold_type, policy_revision) do nothing
       returning *
     )`;
}

/** A scope's stored running total in the policy's period (see incidentsSql). */
export const STORED_TOTAL = `coalesce((select s.cost_cents from spend_totals s where s.company_id = p.company_id and s.scope_type = p.scope_type
                                      and s.scope_id = p.scope_id and s.period = w.period), 0)`;

/** The month key and window bounds incidentsSql's parameters $2-$4 take. */
export function incidentWindow(now: Date): [string, string, string] {
  return [monthKey(now), monthStart(now).toISOString(), nextMonthStart(now).toISOString()];
}

/** Opens the incidents the stored totals of the touched scopes call for (see incidentsSql). */
export async function openIncidents(db: DatabaseCapability, touched: Scope[], now: Date): Promise<Array<Record<string, unknown>>> {
  if (touched.length === 0) return [];
  const { rows } = await db.query(
    `with touched as (select * from jsonb_to_recordset($1::jsonb) as t(company_id uuid, scope_type text, scope_id uuid)),
     ${incidentsSql(STORED_TOTAL)}
     select * from incidents`,
    [JSON.stringify(touched.map((s) => ({ company_id: s.companyId, scope_type: s.scopeType, scope_id: s.scopeId }))), ...incidentWindow(now)]);
  return rows;
}

/**
 * What a new incident does beyond being stored: an activity entry, and for a hard stop the
 * pause of its scope in the same transaction. Projects belong to the work plugin: their stop
 * is announced as a durable event written in the same transaction, on which the work plugin
 * holds the project (and lifts the hold on costs.budget.resumed).
 */
export async function actOnIncidents(ctx: CostsContext, incidents: Array<Record<string, unknown>>): Promise<void> {
  // The pauses change kernel rows (the company's, an agent's): they come before this
  // transaction's activity entries, whose per-company chain lock is taken last (see cost-events.ts).
  for (const incident of incidents) {
    if (incident.threshold_type !== 'hard') continue;
    if (incident.scope_type === 'company') await ctx.companies.pause(HARD_STOP_REASON);
    else if (incident.scope_type === 'agent') await ctx.agents.pause(String(incident.scope_id), HARD_STOP_REASON);
    else await announceProjectStop(ctx, String(incident.scope_id), true, String(incident.id));
  }
  for (const incident of incidents) {
    await ctx.activity.record({
      action: 'budget.incident_opened', entityType: 'budget_incident', entityId: String(incident.id),
      details: { policyId: incident.policy_id, thresholdType: incident.threshold_type, scopeType: incident.scope_type, scopeId: incident.scope_id,
        amountLimit: Number(incident.amount_limit), amountObserved: Number(incident.amount_observed) },
    });
  }
}

export async function announceProjectStop(ctx: CostsContext, projectId: string, stopped: boolean, incidentId: string): Promise<void> {
  await ctx.events.publish((stopped ? costsEvents.budgetStopped : costsEvents.budgetResumed).name,
    { scopeType: 'project', scopeId: projectId, reason: HARD_STOP_REASON, incidentId }, { entityType: 'project', entityId: projectId });
}

/** The spend a policy is measured against right now: its window's running total. */
export async function observedSpend(db: DatabaseCapability, policy: Record<string, unknown>, now: Date): Promise<number> {
  const period = policy.window_kind === 'lifetime' ? 'lifetime' : monthKey(now);
  const { rows } = await db.query('select cost_cents from spend_totals where company_id = $1 and scope_type = $2 and scope_id = $3 and period = $4',
    [policy.company_id, policy.scope_type, policy.scope_id, period]);
  return Number(rows[0]?.cost_cents ?? 0);
}
