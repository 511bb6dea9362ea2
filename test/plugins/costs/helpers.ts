import { expect } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import type { Api, ApiResponse, TestKernel } from '../../support/harness.ts';

export { eventsSettled };

/** Shared builders for the costs plugin tests: cost events, reads of stored rows and kernel spend. */

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A cost event body with the required fields; `extra` overrides or adds fields. */
export function event(agentId: string, costCents: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { agentId, provider: 'alpha', model: 'alpha-large', costCents, occurredAt: new Date().toISOString(), ...extra };
}

export function postCost(api: Api, companyId: string, body: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return api.post(`/api/companies/${companyId}/cost-events`, body, { headers });
}

/** Posts a cost event and insists on 201; answers the stored event. */
export async function addCost(api: Api, companyId: string, body: Record<string, unknown>): Promise<any> {
  const res = await postCost(api, companyId, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function eventCount(t: TestKernel, companyId: string): Promise<number> {
  const { rows } = await t.sql.query('select count(*)::int as n from plugin_costs.cost_events where company_id = $1', [companyId]);
  return rows[0].n;
}

export async function agentRow(t: TestKernel, agentId: string): Promise<{ status: string; pause_reason: string | null; spent: number; budget: number }> {
  // Month-to-date spend is the costs plugin's (its view month_spend), read as the kernel reads it.
  const { rows } = await t.sql.query("select status, pause_reason, keel_private.month_spend(company_id, 'agent', id)::int as spent, budget_monthly_cents::int as budget from agents where id = $1", [agentId]);
  return rows[0];
}

export async function companyRow(t: TestKernel, companyId: string): Promise<{ status: string; pause_reason: string | null; spent: number; budget: number }> {
  const { rows } = await t.sql.query("select status, pause_reason, keel_private.month_spend(id, 'company', id)::int as spent, budget_monthly_cents::int as budget from companies where id = $1", [companyId]);
  return rows[0];
}

/** spentMonthlyCents of an agent as GET /api/agents/{id} shows it. */
export async function agentSpent(api: Api, agentId: string): Promise<number> {
  const res = await api.get(`/api/agents/${agentId}`);
  expect(res.status, res.text).toBe(200);
  return res.body.spentMonthlyCents;
}

/** spentMonthlyCents of a company as GET /api/companies/{id} shows it. */
export async function companySpent(api: Api, companyId: string): Promise<number> {
  const res = await api.get(`/api/companies/${companyId}`);
  expect(res.status, res.text).toBe(200);
  return res.body.spentMonthlyCents;
}

/** Incidents of a company as stored, oldest first. */
export async function incidents(t: TestKernel, companyId: string): Promise<Array<{ id: string; scope_type: string; scope_id: string; threshold_type: string; status: string; amount_limit: number; amount_observed: number }>> {
  const { rows } = await t.sql.query(
    `select id, scope_type, scope_id, threshold_type, status, amount_limit::int, amount_observed::int
       from plugin_costs.budget_incidents where company_id = $1 order by created_at, threshold_type desc`, [companyId]);
  return rows;
}

export async function activityCount(t: TestKernel, companyId: string, action: string, entityId?: string): Promise<number> {
  const { rows } = await t.sql.query(
    'select count(*)::int as n from activity_log where company_id = $1 and action = $2 and ($3::text is null or entity_id = $3)', [companyId, action, entityId ?? null]);
  return rows[0].n;
}

/** `YYYY-MM` of a moment in UTC. */
export function monthKey(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** Noon UTC on the 15th of the month before the current one. */
export function lastMonthMoment(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15, 12));
}

/** A project of the work plugin (project budget policies name real projects). */
export async function createProject(api: Api, companyId: string): Promise<string> {
  const res = await api.post(`/api/companies/${companyId}/projects`, { name: `Project ${Math.random().toString(36).slice(2, 8)}` });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

export const q = (params: Record<string, string>) => `?${new URLSearchParams(params).toString()}`;

/** `api` whose POST, PATCH and PUT answer once the events they caused have been delivered. */
export function settling(t: TestKernel, api: Api = t.api): Api {
  const after = <A extends unknown[]>(call: (...args: A) => Promise<ApiResponse>) => async (...args: A) => {
    const res = await call(...args);
    await eventsSettled(t);
    return res;
  };
  return { ...api, post: after(api.post), patch: after(api.patch), put: after(api.put) } as Api;
}

/**
 * Lets the usage-caller fixture record `gateway` spend, as the operator would name a gateway
 * plugin of their own (costs config `gatewayPlugins`); by default only model-gateway may.
 */
export async function allowGatewayCaller(api: Api): Promise<void> {
  const res = await api.post('/api/plugins/costs/config', { config: { gatewayPlugins: ['model-gateway', 'usage-caller'] } });
  expect(res.status, res.text).toBe(200);
}
