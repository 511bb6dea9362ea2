import type { Api, TestKernel } from '../../support/harness.ts';

/** Builders for skill policy tests, over the public API (grants the API cannot make are inserted as the kernel stores them). */
export const policyPath = (companyId: string) => `/api/companies/${companyId}/skill-policy`;
export const evaluatePath = (companyId: string) => `/api/companies/${companyId}/skill-policy/evaluate`;

export function rule(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'r1', priority: 0, effect: 'deny', subject: { type: 'all_agents' }, actions: ['skills.import'], ...fields };
}

export function document(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { schemaVersion: 1, defaultEffect: 'allow', rules: [], expectedRevision: 0, ...fields };
}

/** Stores a policy at the current revision (read first), as the local board. */
export async function putPolicy(api: Api, companyId: string, fields: Record<string, unknown> = {}): Promise<any> {
  const current = await api.get(policyPath(companyId));
  const res = await api.put(policyPath(companyId), document({ expectedRevision: current.body.revision, ...fields }));
  if (res.status !== 200) throw new Error(`PUT skill-policy answered ${res.status}: ${res.text}`);
  return res.body;
}

export async function grant(t: TestKernel, companyId: string, principalType: 'agent' | 'user', principalId: string, permissionKey: string, scope: unknown = null): Promise<void> {
  await t.sql.query(
    'insert into permission_grants (company_id, principal_type, principal_id, permission_key, scope) values ($1, $2, $3, $4, $5)',
    [companyId, principalType, principalId, permissionKey, scope === null ? null : JSON.stringify(scope)]);
}

export async function activities(t: TestKernel, companyId: string, action: string): Promise<any[]> {
  const { rows } = await t.sql.query('select * from activity_log where company_id = $1 and action = $2 order by created_at', [companyId, action]);
  return rows;
}

export async function storedRows(t: TestKernel, companyId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select * from plugin_skill_policy.skill_policies where company_id = $1', [companyId]);
  return rows;
}
