import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { hashToken } from '../../kernel/auth/tokens.ts';
import type { Api, TestKernel } from './harness.ts';

/** Small builders over the public API, so tests set up state the way users do. */
export async function createCompany(api: Api, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await api.post('/api/companies', { name: `Company ${Math.random().toString(36).slice(2, 8)}`, ...fields });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function createAgent(api: Api, companyId: string, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await api.post(`/api/companies/${companyId}/agents`, { name: `Agent ${Math.random().toString(36).slice(2, 8)}`, role: 'engineer', ...fields });
  expect(res.status, res.text).toBe(201);
  return res.body.agent ?? res.body;
}

export async function createAgentKey(api: Api, agentId: string): Promise<string> {
  const res = await api.post(`/api/agents/${agentId}/keys`, { name: 'test' });
  expect(res.status, res.text).toBe(201);
  return res.body.token;
}

/**
 * Rows that have no public route to create them in local_trusted mode (users, board keys of
 * users, memberships), inserted the way the kernel stores them.
 */
export async function insertUser(t: TestKernel, options: { admin?: boolean } = {}): Promise<string> {
  const { rows } = await t.sql.query(
    'insert into users (email, name, is_instance_admin) values ($1, $2, $3) returning id',
    [`user-${randomBytes(4).toString('hex')}@example.test`, 'Test User', options.admin ?? false]);
  return rows[0].id;
}

/** A board API key of a user (user_id null makes it a key of the implicit local board). */
export async function boardToken(t: TestKernel, userId: string | null): Promise<string> {
  const token = `svc_board_${randomBytes(24).toString('base64url')}`;
  await t.sql.query('insert into board_api_keys (user_id, name, key_hash, key_prefix) values ($1, $2, $3, $4)',
    [userId, 'test', hashToken(token), token.slice(0, 16)]);
  return token;
}

export async function addMember(t: TestKernel, companyId: string, userId: string, role = 'member', status = 'active'): Promise<void> {
  await t.sql.query(
    "insert into company_memberships (company_id, principal_type, principal_id, role, status) values ($1, 'user', $2, $3, $4)",
    [companyId, userId, role, status]);
}
