import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestKernel } from '../support/harness.ts';
import { addMember, boardToken, insertUser } from '../support/fixtures.ts';

export { addMember, boardToken, insertUser };

/**
 * Helpers of the agent tests. Companies, users and board keys come from areas built
 * elsewhere, so they are inserted directly; agents and their keys go through the API.
 */
export async function insertCompany(t: TestKernel, options: { requireApproval?: boolean; name?: string } = {}): Promise<string> {
  const suffix = randomBytes(4).toString('hex').toUpperCase();
  const { rows } = await t.sql.query(
    'insert into companies (name, issue_prefix, require_board_approval_for_new_agents) values ($1, $2, $3) returning id',
    [options.name ?? `Company ${suffix}`, `T${suffix}`, options.requireApproval ?? false]);
  return rows[0].id;
}

export async function createAgent(t: TestKernel, companyId: string, body: Record<string, unknown> = {}): Promise<any> {
  const res = await t.api.post(`/api/companies/${companyId}/agents`, { name: `Agent ${randomBytes(3).toString('hex')}`, ...body });
  if (res.status !== 201) throw new Error(`agent create failed: ${res.status} ${res.text}`);
  return res.body;
}

export async function createKey(t: TestKernel, agentId: string, name?: string): Promise<{ id: string; token: string }> {
  const res = await t.api.post(`/api/agents/${agentId}/keys`, name ? { name } : undefined);
  if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${res.text}`);
  return res.body;
}

/** An agent created through the API plus a working key for it. */
export async function agentWithKey(t: TestKernel, companyId: string, body: Record<string, unknown> = {}): Promise<{ agent: any; token: string }> {
  const agent = await createAgent(t, companyId, body);
  const key = await createKey(t, agent.id);
  return { agent, token: key.token };
}

/** A board user with a key, a member of the given companies. */
export async function memberToken(t: TestKernel, companyIds: string[], role = 'member'): Promise<{ userId: string; token: string }> {
  const userId = await insertUser(t);
  for (const companyId of companyIds) await addMember(t, companyId, userId, role);
  return { userId, token: await boardToken(t, userId) };
}

const TABLES = ['agents', 'agent_api_keys', 'agent_config_revisions', 'approvals', 'permission_grants', 'company_memberships', 'activity_log'];

/** Row counts and the latest agent update, to prove that refused input changed nothing. */
export async function snapshot(t: TestKernel): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const table of TABLES) {
    const { rows } = await t.sql.query(`select count(*)::int as n from ${table}`);
    out[table] = rows[0].n;
  }
  const { rows } = await t.sql.query(
    "select coalesce(string_agg(id || ':' || updated_at::text || ':' || status || ':' || md5(adapter_config::text) || ':' || md5(permissions::text), ',' order by id), '') as state from agents");
  out.agentState = rows[0].state;
  const grants = await t.sql.query("select coalesce(string_agg(id || ':' || coalesce(scope::text, ''), ',' order by id), '') as state from permission_grants");
  out.grantState = grants.rows[0].state;
  return out;
}

/** Runs a request that must be refused and checks that it changed no stored row. */
export async function expectUnchanged(t: TestKernel, request: () => Promise<{ status: number; body: any }>, status: number, error?: string | RegExp): Promise<any> {
  const before = await snapshot(t);
  const res = await request();
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  if (error !== undefined) {
    if (typeof error === 'string') expect(res.body.error).toBe(error);
    else expect(res.body.error).toMatch(error);
  }
  expect(await snapshot(t)).toEqual(before);
  return res.body;
}

export async function activity(t: TestKernel, entityId: string): Promise<Array<{ action: string; details: any; actor_type: string; actor_id: string }>> {
  const { rows } = await t.sql.query('select action, details, actor_type, actor_id from activity_log where entity_id = $1 order by seq', [entityId]);
  return rows;
}

export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
